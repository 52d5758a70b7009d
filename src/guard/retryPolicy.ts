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
 * @module
 */
import { NovaApiError, QuotaExceededError, type RateLimitError, isAbortError } from '../errors/index.js';
import { restated } from '../errors/api.js';
import { NovaGuardError } from '../errors/base.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import { stepDelayMs } from './backoff.js';
import { QuotaBuildFaultError } from './errors.js';
import type { QuotaRetryReason } from './hookInfo.js';

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
