/**
 * The one retry policy of nova-guard: p-retry's exponential backoff with jitter (`factor` 2,
 * `minTimeout`, `maxTimeout`, `randomize`), bounded by `retries` and `maxRetryTime`, with Nova's
 * `Retry-After` (header, or the `retryAfter` of a 413 `overLimit` body) waited out first.
 *
 * A rate limit that names its pause (429, 413 rate limit, with `Retry-After`) does not use one of
 * the `retries` (p-retry's `shouldConsumeRetry`): the pause is Nova's (at least `minDelayMs`), not
 * a failure; only `maxRetryTimeMs` bounds how long such pauses go on (with an infinite
 * `maxRetryTimeMs` they use retries like any other failure). A `Retry-After` at least as long as what is
 * left of `maxRetryTimeMs` ends the retries at once, with that error. Any retried error's `Retry-After`
 * is waited out (a 503's too), also when it is the `cause` of the error thrown ({@link retryAfterOf}).
 *
 * Source: keystoneauth1 `Session._send_request` (`connect_retries`, `status_code_retries`: the
 * request repeated after a doubling backoff).
 *
 * @module
 */
import pRetry from 'p-retry';
import { sleep, systemClock, type Clock } from '../core/clock.js';
import { AbortError, NovaApiError, RateLimitError } from '../errors/index.js';

/** A retry policy (all durations in milliseconds). */
export interface RetryPolicy {
  /** Retries after the first attempt (0 = one attempt). Rate limits with a `Retry-After` do not count. */
  retries: number;
  /** Delay before the first retry; doubles each retry and is multiplied by a random factor in [1, 2). */
  minDelayMs: number;
  /** Longest backoff delay. */
  maxDelayMs: number;
  /** Longest total time spent retrying; a `Retry-After` not shorter than what is left of it ends the retries. */
  maxRetryTimeMs: number;
}

/**
 * The defaults of `NovaClientOptions.retry`: 4 retries (5 attempts), 250 ms doubling up to 10 s,
 * at most 60 s in all.
 */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ retries: 4, minDelayMs: 250, maxDelayMs: 10_000, maxRetryTimeMs: 60_000 });

/** Options of {@link withRetry}. */
export interface WithRetryOptions extends RetryPolicy {
  /** Which errors may be retried (e.g. `isTransient`, or `isRetryable` for a method). */
  shouldRetry: (error: unknown) => boolean;
  /** Abort: rejects with {@link AbortError} (cause: the signal's reason); no attempt starts after it. */
  signal?: AbortSignal | undefined;
  /** The clock of the `Retry-After` waits and of the budget. Default {@link systemClock}. */
  clock?: Clock | undefined;
  /**
   * Let the process exit while waiting between attempts (p-retry's `unref`), for work nobody
   * awaits (a background refresh). Default false: a retry that a caller awaits keeps the process alive.
   */
  unref?: boolean | undefined;
  /** Called before each retry's wait, with the error, the attempt that failed (1-based) and Nova's `Retry-After` in ms (0: none). */
  onRetry?: ((error: unknown, attempt: number, retryAfterMs: number) => void) | undefined;
}

/**
 * Nova's `Retry-After` of `error` in ms (0: none): its own `retryAfterMs`, else that of its `cause`,
 * and so on (a `DeleteFailedError` wrapping the 503 that named the pause).
 */
export function retryAfterOf(error: unknown): number {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof NovaApiError && e.retryAfterMs !== undefined && e.retryAfterMs > 0) return e.retryAfterMs;
  }
  return 0;
}

/** A rate limit whose pause Nova named: waited out without using a retry (while the budget is finite). */
function pausesWithoutRetry(error: unknown, maxRetryTimeMs: number): boolean {
  return error instanceof RateLimitError && retryAfterOf(error) > 0 && Number.isFinite(maxRetryTimeMs);
}


/**
 * Run `fn(attempt)`, retrying with p-retry while `shouldRetry` says so and the policy allows.
 * @returns what `fn` resolves.
 * @throws the last error of `fn` (not wrapped); {@link AbortError} when `signal` aborts.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: WithRetryOptions): Promise<T> {
  const { signal, maxRetryTimeMs } = options;
  const clock = options.clock ?? systemClock;
  const unref = options.unref ?? false;
  const startedAt = clock.now();
  try {
    return await pRetry(fn, {
      retries: options.retries,
      factor: 2,
      minTimeout: options.minDelayMs,
      maxTimeout: options.maxDelayMs,
      randomize: true,
      maxRetryTime: maxRetryTimeMs,
      unref,
      ...(signal ? { signal } : {}),
      shouldRetry: ({ error }) => options.shouldRetry(error),
      shouldConsumeRetry: ({ error }) => !pausesWithoutRetry(error, maxRetryTimeMs),
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft <= 0 || !options.shouldRetry(error)) return;
        const retryAfterMs = retryAfterOf(error);
        // Nova asks for a pause at least as long as the budget has left: waiting it out would spend
        // the whole budget and then fail without another attempt. Fail now, with Nova's retryAfterMs.
        if (retryAfterMs > 0 && retryAfterMs >= maxRetryTimeMs - (clock.now() - startedAt)) throw error;
        options.onRetry?.(error, attemptNumber, retryAfterMs);
        // A named pause that uses no retry gets no backoff from p-retry: `minDelayMs` stays its floor.
        const pauseMs = pausesWithoutRetry(error, maxRetryTimeMs) ? Math.max(retryAfterMs, options.minDelayMs) : retryAfterMs;
        if (pauseMs > 0) await sleep(clock, pauseMs, signal, { unref });
      },
    });
  } catch (error) {
    if (signal?.aborted && !(error instanceof NovaApiError)) throw new AbortError(undefined, { cause: signal.reason });
    throw error;
  }
}
