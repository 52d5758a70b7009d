/**
 * The one place nova-guard retries a failed request: p-retry's exponential backoff with jitter, plus
 * Nova's `Retry-After` (header or `retryAfter` body field) waited out before the backoff delay.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { AbortError, NovaApiError } from '../errors/index.js';

/** Retry policy (all durations in milliseconds). */
export interface RetryPolicy {
  /** Retries after the first attempt (0 = one attempt). */
  retries: number;
  /** Delay before the first retry; doubles each retry and is multiplied by a random factor in [1, 2). */
  minDelayMs: number;
  /** Longest backoff delay. */
  maxDelayMs: number;
  /** Longest total time spent retrying; also the longest `Retry-After` honoured. */
  maxRetryTimeMs: number;
}

/** Options of {@link withRetry}. */
export interface WithRetryOptions extends RetryPolicy {
  /** Which errors may be retried. */
  shouldRetry: (error: unknown) => boolean;
  /** Abort: rejects with {@link AbortError}. */
  signal?: AbortSignal | undefined;
  /** Called before each retry's wait, with the error and the attempt number that failed (1-based). */
  onRetry?: ((error: unknown, attempt: number, retryAfterMs: number) => void) | undefined;
}

/**
 * Run `fn`, retrying with p-retry while `shouldRetry` says so and the policy allows. The promise
 * rejects with the last error (not wrapped), or {@link AbortError} when `signal` aborts.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: WithRetryOptions): Promise<T> {
  const { signal } = options;
  try {
    return await pRetry(fn, {
      retries: options.retries,
      factor: 2,
      minTimeout: options.minDelayMs,
      maxTimeout: options.maxDelayMs,
      randomize: true,
      maxRetryTime: options.maxRetryTimeMs,
      ...(signal ? { signal } : {}),
      shouldRetry: ({ error }) => options.shouldRetry(error),
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft <= 0 || !options.shouldRetry(error)) return;
        const retryAfterMs = error instanceof NovaApiError ? Math.min(error.retryAfterMs ?? 0, options.maxRetryTimeMs) : 0;
        options.onRetry?.(error, attemptNumber, retryAfterMs);
        if (retryAfterMs > 0) await sleep(retryAfterMs, undefined, signal ? { signal } : undefined);
      },
    });
  } catch (error) {
    if (signal?.aborted && !(error instanceof NovaApiError)) throw new AbortError(undefined, { cause: signal.reason });
    throw error;
  }
}
