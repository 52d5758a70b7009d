/**
 * A single-server poll loop (`waitForActive` runs on it): osc-lib's `wait_for_status` skeleton
 * (first look at once, then one every interval) with a deadline on the client's clock, jitter, an
 * AbortSignal, transient failures taken as failed looks (never as an answer) and looked at again on
 * the next interval, and nothing left behind once it settles. Delete-waits do not use it: the
 * client's delete engine serves them.
 *
 * @module
 */
import { sleep, timeoutSignal, type Clock } from '../core/clock.js';
import { jitteredMs } from '../core/jitter.js';
import type { Server } from '../core/types.js';
import { AbortError, throwIfAborted } from '../errors/index.js';
import { isServerNotFound, isTransient } from '../transport/http.js';
import type { Observation } from './observe.js';
import type { EngineRequestOptions } from './types.js';

export type { Observation } from './observe.js';

/** What one poll loop needs. Durations in ms. */
export interface PollSpec<R> {
  clock: Clock;
  timeoutMs: number;
  intervalMs: number;
  /** Each interval is multiplied by a random factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
  /** Failed looks in a row (transient failures) tolerated before the loop rejects with the last one. */
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
}

/** How a loop ended: a result, or the deadline (`result` undefined). */
export interface PollEnd<R> {
  result: R | undefined;
  polls: number;
  elapsedMs: number;
}

/** A look by `GET /servers/{id}`: Nova's 404 for this server is `{ gone: true }`. */
export function observeByGet(client: { getServer(id: string, options?: EngineRequestOptions): Promise<Server> }, serverId: string): PollSpec<unknown>['observe'] {
  return async (signal, requestTimeoutMs) => {
    try {
      return { gone: false, server: await client.getServer(serverId, { signal, requestTimeoutMs, retry: false }) };
    } catch (e) {
      if (isServerNotFound(e, serverId)) return { gone: true };
      throw e;
    }
  };
}

/** No look (after the first) starts this close to the deadline, in ms: it would reach Nova after the loop settled. */
const LAST_POLL_MARGIN_MS = 10;

/**
 * Look until `onObservation` returns a result or `timeoutMs` passes.
 * @throws {@link AbortError} when `signal` aborts; a look's error when it is not transient or more
 * than `pollRetries` looks in a row failed.
 */
export async function pollUntil<R>(spec: PollSpec<R>): Promise<PollEnd<R>> {
  throwIfAborted(spec.signal);
  const { clock, timeoutMs } = spec;
  const started = clock.now();
  const deadlineAt = started + timeoutMs;
  const elapsed = (): number => Math.round(clock.now() - started);
  const deadline = Number.isFinite(timeoutMs) ? timeoutSignal(clock, timeoutMs, () => new Error('deadline')) : undefined;
  const signal = AbortSignal.any([...(deadline ? [deadline.signal] : []), ...(spec.signal ? [spec.signal] : [])]);
  let polls = 0;
  let failures = 0;
  try {
    for (;;) {
      if (polls > 0 && deadlineAt - clock.now() < LAST_POLL_MARGIN_MS) await sleep(clock, deadlineAt - clock.now(), signal);
      polls++;
      try {
        const obs = await spec.observe(signal, Math.max(1, Math.min(spec.requestTimeoutMs, deadlineAt - clock.now())));
        failures = 0;
        const result = spec.onObservation(obs, polls, elapsed());
        if (result !== undefined) return { result, polls, elapsedMs: elapsed() };
      } catch (e) {
        if (signal.aborted || !isTransient(e) || ++failures > spec.pollRetries) throw e;
      }
      await sleep(clock, Math.min(jitteredMs(spec.intervalMs, spec.jitter), deadlineAt - clock.now()), signal);
    }
  } catch (e) {
    if (spec.signal?.aborted) throw new AbortError(spec.abortMessage, { cause: spec.signal.reason });
    if (deadline?.signal.aborted) return { result: undefined, polls, elapsedMs: elapsed() };
    throw e;
  } finally {
    deadline?.dispose();
  }
}
