/**
 * One guarded call (`createServer` or `withQuotaGuard`) as one object: its deadline, its counters,
 * its claim tag, the claim it keeps across a refused POST, the ledger it is on ({@link CallLedger}:
 * the guard's ledger with the fallback behind it, its place in the queue and its wake-ups), and
 * its run ({@link GuardedCall.run}), which reads as the protocol of one guarded create:
 *
 * 1. admit: the claim for an attempt, the one kept from a refused POST or a new one after the wait
 *    for headroom (`admission.ts`: read `/limits` through the call's ledger, admit and claim; while
 *    short, join the queue and sleep until woken; the lease renewed right before the POST:
 *    `leases.ts`);
 * 2. attempt: the POST and the wait for the server to leave BUILD (`guardedCreate.ts`), or the
 *    caller's `fn`; the attempt ends the claim (`'counted'` or `'not-created'`);
 * 3. retry or not ({@link GuardedCall.run}'s p-retry, whose `onFailedAttempt` decides by
 *    `retryPolicy.ts`'s plan), back to 1;
 * 4. at the end: release a claim still held, and forget the call's claim tag unless a POST of
 *    unknown fate keeps it watched (`lateCreates.ts`).
 *
 * The steps are the guard's (`quotaGuard.ts` gives them as {@link CallSteps}): the modules of the
 * steps take the call, so this module imports none of them (no import cycle).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import pRetry, { type RetryContext } from 'p-retry';
import { sleep } from '../core/clock.js';
import { traceGuardedCreate } from '../core/telemetry.js';
import { AbortError, NovaApiError, RateLimitError, throwIfAborted } from '../errors/index.js';
import { firstDelayMs, retrySchedule } from './retryPolicy.js';
import { CallLedger } from './callLedger.js';
import { CreateOutcomeUnknownError, type QuotaBuildFaultError } from './errors.js';
import { releaseClaim } from './ledgerUse.js';
import type { QuotaRetryInfo } from './options.js';
import { RETRY_AFTER_BEYOND, RefusedAttempt, planRetry, quotaRetryReasonOf, rateLimitBeyondDeadline, unwrapRefused } from './retryPolicy.js';
import type { Claim, GuardState } from './state.js';

/** The steps of one guarded call, given by its guard (see the module description). */
export interface CallSteps<T> {
  /**
   * The claim for one attempt: `held` (kept from a refused POST) or a new one from the wait for
   * headroom, its lease renewed for the POST. `fresh`: the claim is not `held` (the attempt counts).
   */
  admit(held: Claim | undefined, signal: AbortSignal | undefined): Promise<{ claim: Claim; fresh: boolean }>;
  /** One attempt on `claim` (the POST, or `fn`): it ends the claim, or keeps it in `heldClaim` after a refused POST. */
  attempt(claim: Claim, signal: AbortSignal | undefined): Promise<T>;
  /** The call is over: stop watching its claim tag unless a POST of unknown fate needs it; `kept`: the server the call returns. */
  forget(kept: string | undefined): void;
}

/** See the module description. */
export class GuardedCall {
  /** Start, on the clock (monotonic ms). */
  readonly startedMs: number;
  /** `startedMs + maxWaitMs`. */
  readonly deadlineMs: number;
  /** The call's first backoff delay (p-retry's `minTimeout`): see `retryPolicy.ts`. */
  readonly firstDelayMs: number;
  /**
   * The call's claim tag: the value of the `nova-guard-claim` metadata every POST of this call
   * carries, so that a server whose create answer was lost can be found (`lostCreate.ts`).
   */
  readonly claimTag: string = randomUUID();
  /** The ledger this call uses: the guard's, or its fallback once the guard's failed during the call; and the call's place in its queue. */
  readonly ledger: CallLedger;
  /** Attempts (POSTs, or `fn` calls) that counted so far. */
  posts = 0;
  /** Retries that used an attempt so far (p-retry's `retriesConsumed` after the last plan). */
  retriesConsumed = 0;
  /** Retries that used no attempt so far (rate limits, refused connections). */
  freeRetries = 0;
  /** The last wait ran up to the deadline: the next short `/limits` read ends the wait. */
  deadlineReached = false;
  /** A claim kept across a rate-limited or refused POST: the next attempt re-sends it at once. */
  heldClaim: Claim | undefined = undefined;
  /** Nova's message of the last quota error of this call. */
  lastQuotaMessage: string | undefined = undefined;
  /** The newest kept reading a quota error of this call refuted (`AcquireRequest.refutedStamp`): the next admission reads after it. */
  refutedStamp: number | undefined = undefined;
  /** The reading stamp of the claim of the last attempt (`Claim.readingStamp`). */
  #attemptStamp: number | undefined = undefined;
  /** True while an attempt runs. */
  inAttempt = false;
  /** True once an attempt has resolved: an abort can no longer take its result away. */
  settled = false;
  /** The server the call returns, once an attempt has made it (the one server of its tag that stays). */
  keptServerId: string | undefined = undefined;
  readonly #g: GuardState;
  readonly #clock: GuardState['clock'];

  /** A new call of the guard `g`, starting now; `random` draws its first backoff delay. */
  constructor(g: GuardState, random: number = Math.random()) {
    this.#g = g;
    this.#clock = g.clock;
    this.startedMs = g.clock.now();
    this.deadlineMs = this.startedMs + g.opts.maxWaitMs;
    this.firstDelayMs = firstDelayMs(g.opts, random);
    this.ledger = new CallLedger(g, this.deadlineMs);
  }

  /** Time since the call started, in whole ms. */
  elapsedMs(): number {
    return Math.round(this.#clock.now() - this.startedMs);
  }

  /** Time left until `maxWaitMs` runs out, in ms (may be negative). */
  remainingMs(): number {
    return this.deadlineMs - this.#clock.now();
  }

  /**
   * Run the call: its attempts under p-retry, one attempt = an admission (`steps.admit`) and one
   * POST or `fn` call (`steps.attempt`). p-retry schedules the backoff and bounds the call by
   * `maxWaitMs` (`maxRetryTime`); its `onFailedAttempt` is the one place a failure is decided
   * (`retryPolicy.ts`'s plan, from what p-retry hands it and nothing else): it throws to stop, and
   * waits itself only what p-retry's schedule does not (a Retry-After beyond the backoff, or the
   * pause before a retry that uses no attempt). `shouldConsumeRetry` reads the failure itself: an
   * attempt refused without creating anything throws a {@link RefusedAttempt}, which uses no
   * attempt. `retries` is `maxAttempts`, one more than the attempts' retries, so that a refusal of
   * the last attempt can still be re-sent (p-retry stops at `retries` whatever a failure uses); the
   * plan ends the call when `maxAttempts` is spent. Counts the guard's `succeeded` or `failed`.
   * @throws the last attempt's error; {@link AbortError} when `signal` aborted (a
   * {@link CreateOutcomeUnknownError} is thrown as it is, abort or not).
   */
  async run<T>(steps: CallSteps<T>, signal: AbortSignal | undefined): Promise<T> {
    const g = this.#g;
    // p-retry's signal ends its backoff delays. It follows the caller's abort only between attempts:
    // an attempt handles the abort itself (deleting a server it created), and a result an attempt
    // has resolved is never dropped.
    const between = new AbortController();
    const onAbort = (): void => {
      if (!this.inAttempt && !this.settled) between.abort(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await traceGuardedCreate(() => pRetry(
        async () => {
          throwIfAborted(signal);
          this.inAttempt = true;
          try {
            const r = await this.#attempt(steps, signal);
            this.settled = true;
            return r;
          } finally {
            this.inAttempt = false;
          }
        },
        {
          retries: g.opts.maxAttempts,
          ...retrySchedule(this.firstDelayMs, g.opts.maxDelayMs),
          maxRetryTime: g.opts.maxWaitMs,
          signal: between.signal,
          onFailedAttempt: (ctx) => this.#onFailedAttempt(ctx, signal),
          shouldConsumeRetry: ({ error }) => !(error instanceof RefusedAttempt),
        },
      ), (e) => quotaRetryReasonOf(e) === 'quota');
      g.stats.succeeded++;
      return result;
    } catch (caught) {
      g.stats.failed++;
      const e = unwrapRefused(caught);
      // A create of unknown outcome keeps its own error (it names the tag to search for), abort or not.
      if (signal?.aborted && !(e instanceof AbortError) && !(e instanceof CreateOutcomeUnknownError)) throw new AbortError(undefined, { cause: signal.reason });
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (this.heldClaim) await releaseClaim(g, this.heldClaim, 'not-created');
      // A POST of the call whose fate is not known yet: its tag stays watched after the call.
      steps.forget(this.settled ? this.keptServerId : undefined);
    }
  }

  /** One attempt: a claim (fresh, or kept from a refused POST), then the POST or `fn`. */
  async #attempt<T>(steps: CallSteps<T>, signal: AbortSignal | undefined): Promise<T> {
    const held = this.heldClaim;
    this.heldClaim = undefined;
    let admitted: { claim: Claim; fresh: boolean };
    try {
      admitted = await steps.admit(held, signal);
    } catch (e) {
      // A read of the admission rate-limited past the client's retries: the plan waits its Retry-After (`retryPolicy.ts`).
      if (e instanceof RateLimitError) throw new RefusedAttempt('read-rate-limited', e);
      throw e;
    }
    const { claim, fresh } = admitted;
    this.#attemptStamp = claim.readingStamp;
    if (fresh) {
      this.posts++;
      this.#g.stats.attempts++;
    }
    return steps.attempt(claim, signal);
  }

  /**
   * p-retry's `onFailedAttempt`, where each failure is decided: plan it (`retryPolicy.ts`), throw to
   * stop (the error the call gives up with), let `onRetry` veto a retry, count and log it, and wait
   * what p-retry's schedule does not: a quota 403's Retry-After beyond the backoff, or the pause
   * before a re-send that uses no attempt.
   */
  async #onFailedAttempt(ctx: RetryContext, signal: AbortSignal | undefined): Promise<void> {
    const g = this.#g;
    const refusal = ctx.error instanceof RefusedAttempt ? ctx.error.refusal : undefined;
    const error = unwrapRefused(ctx.error) as Error;
    const plan = planRetry(
      { error, refusal, retriesConsumed: ctx.retriesConsumed, freeRetries: this.freeRetries, remainingMs: this.remainingMs(), aborted: signal?.aborted === true },
      { maxAttempts: g.opts.maxAttempts, maxDelayMs: g.opts.maxDelayMs, firstDelayMs: this.firstDelayMs },
    );
    const requestId = error instanceof NovaApiError ? error.requestId : undefined;
    if (!plan.retry) {
      if (plan.reason && plan.why) g.log.warn({ reason: plan.reason, why: plan.why, elapsedMs: this.elapsedMs(), posts: this.posts, requestId }, `not retrying: ${plan.why}`);
      throw plan.why === RETRY_AFTER_BEYOND && error instanceof RateLimitError ? rateLimitBeyondDeadline(error, this.remainingMs(), g.opts.maxWaitMs) : error;
    }
    if (plan.reason) {
      const info: QuotaRetryInfo = {
        reason: plan.reason,
        error,
        attempt: plan.attempt,
        attemptsLeft: plan.attemptsLeft,
        delayMs: plan.delayMs,
        elapsedMs: this.elapsedMs(),
        serverId: plan.reason === 'late-quota-fault' ? (error as QuotaBuildFaultError).serverId : undefined,
      };
      if (g.onRetry(info) === false) {
        g.log.warn({ reason: plan.reason, attempt: plan.attempt }, 'retry vetoed by onRetry');
        throw error;
      }
    }
    // Nova's quota check refuted the reading the attempt was admitted on: the next admission reads after it.
    if ((plan.reason === 'quota' || plan.reason === 'late-quota-fault') && this.#attemptStamp !== undefined) this.refutedStamp = Math.max(this.refutedStamp ?? -Infinity, this.#attemptStamp);
    if (plan.consume) {
      this.retriesConsumed = ctx.retriesConsumed + 1;
      if (plan.delayMs >= this.remainingMs()) this.deadlineReached = true;
      if (plan.reason === 'quota') g.stats.quotaRetries++;
      g.log.warn(
        { reason: plan.reason, attempt: plan.attempt, attemptsLeft: plan.attemptsLeft, delayMs: plan.delayMs, requestId },
        `quota error (${error.message}): retrying after backoff`,
      );
    } else {
      this.freeRetries++;
      if (plan.reason === 'rate-limit') g.stats.rateLimitRetries++;
      if (refusal === 'read-rate-limited') g.log.warn({ refusal, delayMs: plan.delayMs, requestId }, 'a read for quota headroom was rate-limited: reading again after its Retry-After (no attempt used)');
      else g.log.warn({ refusal, delayMs: plan.delayMs, requestId }, 'create rate-limited or refused: re-sending after the pause (no attempt used)');
    }
    if (plan.ownWaitMs > 0) await sleep(g.clock, plan.ownWaitMs, signal);
  }
}
