/**
 * The guard's one retry policy, as plain data in and out: what a failed attempt of a guarded call
 * means for the next one. The call's p-retry `onFailedAttempt` asks it once per failure and acts on
 * the plan (throws to stop; see `guardedCall.ts`); p-retry schedules the backoff itself.
 *
 * - A transient quota error (a quota 403 or legacy 413 quota that is not permanent, in every shape of
 *   `parseQuotaMessage`), or a server that went to ERROR with a quota fault: retried after p-retry's
 *   backoff (at least a quota 403's Retry-After, at most `maxDelayMs`), using an attempt, while
 *   `maxAttempts` and `maxWaitMs` allow (docs/field-cases.md, "Several workers, one quota").
 * - The guard's own POST answered by a rate limit (413 `overLimit` with Retry-After, 429) or refused
 *   (nothing reached Nova): re-sent after Retry-After, at least the backoff, without using an attempt
 *   (p-retry's `shouldConsumeRetry` false) and without re-reading `/limits` (the claim is kept);
 *   given up at once when Retry-After is not shorter than what is left of `maxWaitMs`
 *   (docs/field-cases.md, "Rate limits and the other 413s").
 * - A Nova read of the admission (`GET /limits`) rate-limited with a Retry-After longer than the
 *   client's own retry budget: the admission is run again once, after Retry-After (at least the
 *   backoff), without using an attempt, when that fits in what is left of `maxWaitMs`; given up at
 *   once otherwise. One read after the Retry-After, never more.
 * - Anything else (a permanent quota error, a policy 403, a verdict of the guard, an abort): thrown.
 *
 * **The backoff**: p-retry's exponential schedule, with the documented ±jitter.
 *
 * p-retry waits `round(minTimeout × factor^n)`, at most `maxTimeout`, before retry `n + 1` (with
 * `randomize: false`). The guard gives it `factor` 2, `maxTimeout` = `maxDelayMs` and, as
 * `minTimeout`, the call's first delay: `baseDelayMs` spread by `jitter` ({@link jitteredMs}, the one
 * jitter formula), at least `minDelayMs`, drawn once per guarded call. Every delay of a call is then
 * within ±`jitter` of `baseDelayMs × 2^n`, the calls of different workers are spread apart, and the
 * delays of one call grow (docs/field-cases.md, "Several workers, one quota", "Default
 * timings"). p-retry's own `randomize` (a factor in [1, 2)) is not used: it cannot give that ±spread.
 *
 * {@link backoffDelayMs} is the same formula as a plain function, for the guard's waits p-retry does
 * not schedule (waiting for headroom, the pause after a rate limit) and for callers.
 *
 * @module
 */
import { NovaApiError, QuotaExceededError, type RateLimitError, isAbortError } from '../errors/index.js';
import { restated } from '../errors/api.js';
import { NovaGuardError } from '../errors/base.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import { jitteredMs } from '../core/jitter.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { is } from '../core/validate.js';
import { QuotaBuildFaultError } from './errors.js';
import type { QuotaRetryReason } from './options.js';

/**
 * How an attempt was refused without creating a server, when it was: the guard's own POST
 * rate-limited (`'rate-limited'`) or refused (`'refused'`: nothing reached Nova), or a Nova read of
 * its admission (`GET /limits`, ...) rate-limited beyond the client's own retries
 * (`'read-rate-limited'`: no claim, no POST).
 */
export type PostRefusal = 'rate-limited' | 'refused' | 'read-rate-limited';

/**
 * How an attempt reports that it was refused without creating a server: it throws this, wrapping
 * the refusal's error, so that what p-retry hands its callbacks says so itself (no state read on
 * the side). {@link unwrapRefused} gives back the error the caller sees.
 */
export class RefusedAttempt extends Error {
  constructor(
    readonly refusal: PostRefusal,
    readonly error: unknown,
  ) {
    super((error as Error)?.message ?? String(error));
    this.name = 'RefusedAttempt';
  }
}

/** The caller's error of a failed attempt: the wrapped one of a {@link RefusedAttempt}. */
export function unwrapRefused(error: unknown): unknown {
  return error instanceof RefusedAttempt ? error.error : error;
}

/** A failed attempt, as the retry policy sees it. */
export interface FailedAttempt {
  error: unknown;
  /** Set when the guard's own POST was rate-limited or refused (nothing created, claim kept). */
  refusal: PostRefusal | undefined;
  /** Retries that used an attempt before this failure (p-retry's `retriesConsumed`). */
  retriesConsumed: number;
  /** Retries of this call that used no attempt, before this failure. */
  freeRetries: number;
  /** Time left of `maxWaitMs`, in ms. */
  remainingMs: number;
  /** The caller's signal has aborted. */
  aborted: boolean;
}

/** The parts of the guard's options the policy reads. */
export interface RetryLimits {
  maxAttempts: number;
  maxDelayMs: number;
  /** The call's first backoff delay (p-retry's `minTimeout`), in ms. */
  firstDelayMs: number;
}

/** What to do after a failed attempt. */
export interface RetryPlan {
  /** Retry (else `onFailedAttempt` throws). */
  retry: boolean;
  /** The retry uses an attempt (a {@link RefusedAttempt} uses none: p-retry's `shouldConsumeRetry`). */
  consume: boolean;
  /** Why it retries, for `onRetry` (undefined for a refused connection, which is not reported). */
  reason: QuotaRetryReason | undefined;
  /** The attempt that failed (1-based, counting only attempts that count). */
  attempt: number;
  /** Attempts left after the retry's. */
  attemptsLeft: number;
  /** Delay before the next attempt, in ms. */
  delayMs: number;
  /**
   * The part of `delayMs` the guard waits itself before p-retry's own delay: Retry-After beyond
   * p-retry's backoff, or the whole pause of a retry that uses no attempt (p-retry adds none).
   */
  ownWaitMs: number;
  /** Why there is no retry, for the log. */
  why?: string | undefined;
}

/** `RetryPlan.why` of a rate limit whose Retry-After is not shorter than what is left of `maxWaitMs`. */
export const RETRY_AFTER_BEYOND = 'Retry-After beyond maxWaitMs';

/**
 * The error a call gives up with on a rate limit whose Retry-After is not shorter than what is left
 * of `maxWaitMs` (`remainingMs`): `error` (its status, fault, request id, `retryAfterMs`, as its
 * `cause` too), with a message that says the Retry-After and the deadline.
 */
export function rateLimitBeyondDeadline(error: RateLimitError, remainingMs: number, maxWaitMs: number): RateLimitError {
  const left = Math.max(0, Math.round(remainingMs));
  return restated(
    error,
    `${error.method ?? 'the request'} ${error.url ?? ''} was rate-limited with Retry-After ${error.retryAfterMs ?? 0} ms, not shorter than what is left of maxWaitMs (${left} of ${maxWaitMs} ms): given up at once (${error.message})`.replace('  ', ' '),
  );
}

/** Why an error of an attempt is retried using an attempt, or undefined when it is not. */
export function quotaRetryReasonOf(error: unknown): 'quota' | 'late-quota-fault' | undefined {
  if (error instanceof QuotaExceededError) return error.permanent ? undefined : 'quota';
  if (error instanceof QuotaBuildFaultError) return error.permanent ? undefined : 'late-quota-fault';
  // A plain Error from a caller's own create (withQuotaGuard) whose text is a quota message.
  if (error instanceof Error && !(error instanceof NovaGuardError) && !(error instanceof NovaApiError) && !(error instanceof TypeError) && !isAbortError(error)) {
    const parsed = parseQuotaMessage(error.message);
    if (parsed && !parsed.permanent) return 'quota';
  }
  return undefined;
}

/** The plan for one failed attempt. See the module description. */
export function planRetry(f: FailedAttempt, limits: RetryLimits): RetryPlan {
  const attempt = f.retriesConsumed + 1;
  const attemptsLeft = limits.maxAttempts - attempt;
  const remaining = Math.max(0, f.remainingMs);
  const retryAfterMs = f.error instanceof NovaApiError ? (f.error.retryAfterMs ?? 0) : 0;
  const none = (reason: QuotaRetryReason | undefined, why: string | undefined): RetryPlan => ({
    retry: false,
    consume: true,
    reason,
    attempt,
    attemptsLeft,
    delayMs: 0,
    ownWaitMs: 0,
    why,
  });
  if (f.refusal) {
    const reason = f.refusal === 'refused' ? undefined : 'rate-limit';
    if (f.aborted) return none(reason, 'aborted');
    if (remaining <= 0) return none(reason, 'maxWaitMs spent');
    if (retryAfterMs >= remaining) return none(reason, RETRY_AFTER_BEYOND);
    const delayMs = Math.min(Math.max(retryAfterMs, stepDelayMs(limits.firstDelayMs, f.freeRetries, limits.maxDelayMs)), Math.ceil(remaining));
    return { retry: true, consume: false, reason, attempt, attemptsLeft, delayMs, ownWaitMs: delayMs };
  }
  const reason = quotaRetryReasonOf(f.error);
  if (!reason) return none(undefined, undefined);
  if (f.aborted) return none(reason, 'aborted');
  if (attemptsLeft <= 0) return none(reason, 'maxAttempts spent');
  if (remaining <= 0) return none(reason, 'maxWaitMs spent');
  const backoffMs = stepDelayMs(limits.firstDelayMs, f.retriesConsumed, limits.maxDelayMs);
  const floorMs = reason === 'quota' ? Math.min(retryAfterMs, limits.maxDelayMs) : 0;
  const delayMs = Math.min(Math.max(backoffMs, floorMs), Math.ceil(remaining));
  return { retry: true, consume: true, reason, attempt, attemptsLeft, delayMs, ownWaitMs: Math.max(0, delayMs - backoffMs) };
}

/** Backoff parameters (all durations in milliseconds). */
export interface BackoffPolicy {
  /** Delay of the first wait before jitter. */
  baseDelayMs: number;
  /** Floor of every delay (also when Nova sends `Retry-After: 0`). */
  minDelayMs: number;
  /** Ceiling of every delay. */
  maxDelayMs: number;
  /** Random spread: the first delay is `baseDelayMs` times a factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
}

/**
 * The first delay of a call: `baseDelayMs` times a random factor in [1 - jitter, 1 + jitter]
 * ({@link jitteredMs}), clamped to [minDelayMs, maxDelayMs]. Not rounded.
 *
 * @param random - A number in [0, 1); default `Math.random()`.
 */
export function firstDelayMs(policy: BackoffPolicy, random: number = Math.random()): number {
  return Math.min(policy.maxDelayMs, Math.max(policy.minDelayMs, jitteredMs(policy.baseDelayMs, policy.jitter, random)));
}

/** The names of a {@link BackoffPolicy}, each a duration in ms but `jitter` (a fraction in [0, 1)). */
const BACKOFF_POLICY_SPEC: OptionsSpec<BackoffPolicy> = {
  baseDelayMs: is.durationMs({ allowZero: true, allowInfinity: false }),
  minDelayMs: is.durationMs({ allowZero: true, allowInfinity: false }),
  maxDelayMs: is.durationMs({ allowZero: true }),
  jitter: is.number({ min: 0, max: 1, maxExclusive: true }),
};

/**
 * Delay of wait number `step` (0-based), as p-retry computes it from the options of
 * `retrySchedule`: `round(first × 2^step)`, at most `maxDelayMs`, where `first` is
 * `firstDelayMs``(policy, random)`. So the delays are within ±jitter of `baseDelayMs × 2^step`,
 * never below `minDelayMs` nor above `maxDelayMs`, rounded to whole ms.
 *
 * @param step - 0 for the first wait.
 * @param random - A number in [0, 1); default `Math.random()`. One call uses one draw for all its steps.
 */
export function backoffDelayMs(step: number, policy: BackoffPolicy, random: number = Math.random()): number {
  checkOptions('backoffDelayMs policy', policy, BACKOFF_POLICY_SPEC);
  return stepDelayMs(firstDelayMs(policy, random), step, policy.maxDelayMs);
}

/** p-retry's delay before retry `step + 1` for `minTimeout` = `firstMs`, factor 2, `maxTimeout` = `maxDelayMs`. */
export function stepDelayMs(firstMs: number, step: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, Math.round(firstMs * 2 ** Math.min(Math.max(0, step), 52)));
}

/** The p-retry options of a call's schedule (see the module description). */
export interface RetrySchedule {
  factor: number;
  minTimeout: number;
  maxTimeout: number;
  randomize: false;
}

/**
 * p-retry's backoff options for one guarded call: retry `n + 1` comes
 * {@link stepDelayMs}`(firstMs, n, maxDelayMs)` ms after attempt `n + 1` failed.
 *
 * @param firstMs - The call's first delay (`firstDelayMs`).
 */
export function retrySchedule(firstMs: number, maxDelayMs: number): RetrySchedule {
  return { factor: 2, minTimeout: firstMs, maxTimeout: maxDelayMs, randomize: false };
}
