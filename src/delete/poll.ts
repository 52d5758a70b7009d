/**
 * The poll loop under `waitForDelete` and `waitForActive`: osc-lib's `wait_for_delete` /
 * `wait_for_status` skeleton (first look at once, then one every interval) with a wall-clock
 * deadline (p-timeout), jitter, transient failures retried with backoff (p-retry, through
 * `withRetry`) and never taken as an answer, an AbortSignal, and nothing left behind once it settles.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pTimeout from 'p-timeout';
import { AbortError, NovaNetworkError, isAbortError, throwIfAborted } from '../errors/index.js';
import { isServerNotFound, isTransient } from '../transport/http.js';
import { withRetry } from '../transport/retry.js';
import type { NovaClient } from '../nova/client.js';
import type { Server } from '../core/types.js';
import { MAX_TIMER_MS } from '../core/validate.js';

/** One look at the server: gone (404), or its current body. */
export type Observation = { gone: true; server?: undefined } | { gone: false; server: Server };

/** What one poll loop needs. Durations in ms. */
export interface PollSpec<R> {
  timeoutMs: number;
  intervalMs: number;
  /** Each interval is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
  /** Retries of one look after transient failures. */
  pollRetries: number;
  /** Time limit of one request (capped by the time left). */
  requestTimeoutMs: number;
  signal?: AbortSignal | undefined;
  /** The {@link AbortError}'s message when `signal` aborts. */
  abortMessage: string;
  /** Take one look. */
  observe: (signal: AbortSignal, requestTimeoutMs: number) => Promise<Observation>;
  /** Called with each look (and the looks taken so far); a result ends the loop. */
  onObservation: (obs: Observation, polls: number, elapsedMs: number) => R | undefined;
  /** Awaited after a look that did not end the loop, before the pause. */
  afterObservation?: ((obs: Observation, elapsedMs: number, signal: AbortSignal) => Promise<void> | void) | undefined;
  /** The pause between looks (default a timer); rejects when `signal` aborts. */
  pause?: ((delayMs: number, signal: AbortSignal) => Promise<void>) | undefined;
}

/** How a loop ended: a result, or the deadline (`result` undefined). */
export interface PollEnd<R> {
  result: R | undefined;
  polls: number;
  elapsedMs: number;
}

/** A look by `GET /servers/{id}`: 404 is `{ gone: true }`. */
export function observeByGet(client: NovaClient, serverId: string): PollSpec<unknown>['observe'] {
  return async (signal, requestTimeoutMs) => {
    try {
      return { gone: false, server: await client.getServer(serverId, { signal, requestTimeoutMs, retry: false }) };
    } catch (e) {
      if (isServerNotFound(e, serverId)) return { gone: true };
      throw e;
    }
  };
}

/**
 * Look until `onObservation` returns a result or `timeoutMs` passes.
 * @throws {@link AbortError} when `signal` aborts; a look's error when it is not transient or the
 * transient budget is spent.
 */
export async function pollUntil<R>(spec: PollSpec<R>): Promise<PollEnd<R>> {
  throwIfAborted(spec.signal);
  const { timeoutMs, intervalMs, jitter } = spec;
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(spec.signal?.reason);
  spec.signal?.addEventListener('abort', onAbort, { once: true });
  const pause = spec.pause ?? ((ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }));
  let polls = 0;
  const timedOut = (): PollEnd<R> => ({ result: undefined, polls, elapsedMs: elapsed() });

  const loop = async (): Promise<PollEnd<R>> => {
    const signal = controller.signal;
    for (;;) {
      const left = timeoutMs - elapsed();
      const obs = await withRetry(
        async () => {
          // A look that cannot finish before the deadline is not started: it would reach Nova after the
          // loop has settled (the deadline timer and the last pause's timer fire together).
          const leftMs = timeoutMs - (performance.now() - started);
          if (polls > 0 && leftMs < LAST_POLL_MARGIN_MS) {
            if (leftMs > 0) await sleep(leftMs, undefined, { signal });
            throw new TimeoutSignal();
          }
          polls++;
          return spec.observe(signal, Math.max(1, Math.min(spec.requestTimeoutMs, timeoutMs - elapsed())));
        },
        {
          retries: spec.pollRetries,
          minDelayMs: intervalMs,
          maxDelayMs: Math.max(intervalMs, 60000),
          maxRetryTimeMs: Math.max(1, left),
          shouldRetry: isTransient,
          signal,
        },
      );
      const result = spec.onObservation(obs, polls, elapsed());
      if (result !== undefined) return { result, polls, elapsedMs: elapsed() };
      await spec.afterObservation?.(obs, elapsed(), signal);
      const delay = Math.round(intervalMs * (1 + (Math.random() * 2 - 1) * jitter));
      const remaining = timeoutMs - (performance.now() - started);
      if (remaining <= 0) return timedOut();
      // The last look comes at least LAST_POLL_MARGIN_MS before the deadline. A pause that would end
      // later ends after the deadline instead, so the deadline ends the loop without a doomed look
      // (a coalescing watcher asked for a look at or after the deadline schedules none).
      await pause(Math.min(delay < remaining - LAST_POLL_MARGIN_MS ? delay : remaining + LAST_POLL_MARGIN_MS, MAX_TIMER_MS), signal);
    }
  };

  try {
    return await withoutStackTraces(() =>
      pTimeout(loop(), {
        milliseconds: timeoutMs,
        fallback: () => {
          controller.abort(new Error('deadline'));
          return timedOut();
        },
      }),
    );
  } catch (e) {
    if (e instanceof TimeoutSignal) return timedOut();
    if (spec.signal?.aborted) throw new AbortError(spec.abortMessage, { cause: spec.signal.reason });
    if (isAbortError(e) && controller.signal.aborted) return timedOut();
    // A look whose time limit the deadline shortened, and that failed for that reason, is the timeout.
    if (e instanceof NovaNetworkError && e.timedOut && elapsed() >= timeoutMs - DEADLINE_SLACK_MS) return timedOut();
    throw e;
  } finally {
    spec.signal?.removeEventListener('abort', onAbort);
    if (!controller.signal.aborted) controller.abort(new Error('settled'));
  }
}

class TimeoutSignal extends Error {}

/**
 * Run `start` (which must create its promise synchronously) with stack traces off. p-timeout builds
 * its TimeoutError, stack included, when it starts, although with `fallback` that error is never
 * thrown: with 10,000 pending waits those unused stacks were a quarter of their heap (bench/overhead).
 */
function withoutStackTraces<T>(start: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return start();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** A request that timed out this close to the deadline was cut by the deadline. */
const DEADLINE_SLACK_MS = 20;

/** No look (after the first) starts with less than this many ms left before the deadline. */
const LAST_POLL_MARGIN_MS = 10;
