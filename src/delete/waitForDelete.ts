/**
 * `waitForDelete`: poll a server until Nova has deleted it.
 *
 * A port of osc-lib's `wait_for_delete` (`osc_lib/utils/__init__.py`; see
 * `../shared/reference/nova-facts.md` §1), fixed where the field shows it is wrong:
 * - the timeout is wall-clock time (osc-lib counts only its sleeps);
 * - status `DELETED` (any case) ends the wait as deleted and `SOFT_DELETED` as soft-deleted (osc-lib
 *   waits for a 404 only: BUG-03, BUG-06);
 * - `ERROR` while `OS-EXT-STS:task_state` is `deleting` is a delete in progress, not a failure;
 * - a transient poll failure (5xx, reset, request timeout, rate limit) is retried with backoff and is
 *   never taken as "gone" (BUG-01); any other error ends the wait;
 * - an AbortSignal, jitter, and no timer or request left behind once the promise settles.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { ValidationError, throwIfAborted } from '../errors/index.js';
import { deleteWatcherOf } from './deleteWatcher.js';
import { observeByGet, pollUntil, type Observation } from './poll.js';
import type { Server } from '../core/types.js';
import { checkDurationMs, checkPathId } from '../core/validate.js';

/** How a wait ended. */
export type WaitOutcome = 'deleted' | 'soft-deleted' | 'error' | 'timeout';

/** One observation, passed to {@link WaitForDeleteOptions.onProgress}. */
export interface DeleteProgress {
  serverId: string;
  /** Polls (GET requests) made so far. */
  polls: number;
  /** Status seen, or `'NOT_FOUND'` when the GET answered 404. */
  status: string | undefined;
  /** `OS-EXT-STS:task_state` seen (`deleting` while Nova works on it). */
  taskState: string | null | undefined;
  /** `progress` field, 0 to 100, or 0 when absent (as osc-lib's callback). */
  progress: number;
  /** Wall-clock time since the wait started, in ms. */
  elapsedMs: number;
}

/** Options of {@link waitForDelete}. */
export interface WaitForDeleteOptions {
  /** Time between polls, in ms. Default 5000 (osc-lib's `sleep_time`). */
  intervalMs?: number;
  /** Jitter: each interval is multiplied by a random factor in [1 - jitter, 1 + jitter]. Default 0.1. */
  jitter?: number;
  /** Wall-clock limit of the whole wait, in ms. Default 300000 (osc-lib's `timeout`). */
  timeoutMs?: number;
  /** Abort the wait: it rejects with {@link AbortError} at once. */
  signal?: AbortSignal | undefined;
  /** Called with each observation (successful poll). Exceptions thrown by it are ignored. */
  onProgress?: ((progress: DeleteProgress) => void) | undefined;
  /** Time limit of each poll request, in ms. Default: the client's `requestTimeoutMs`, capped by the time left. */
  requestTimeoutMs?: number;
  /**
   * Retries of one poll after transient failures (5xx, reset, request timeout, 429) before the wait
   * rejects with that failure. Default 4. The backoff starts at `intervalMs` and doubles.
   */
  pollRetries?: number;
}

/** What {@link waitForDelete} resolves. */
export interface WaitForDeleteResult {
  outcome: WaitOutcome;
  /** Polls (GET requests) made, failed ones included. */
  polls: number;
  /** Wall-clock time spent, in ms. */
  elapsedMs: number;
  /** The last server body seen, if any (absent after a 404). */
  server: Server | undefined;
  /** Last status seen (`'NOT_FOUND'` after a 404). */
  lastStatus: string | undefined;
  /** Last task_state seen. */
  lastTaskState: string | null | undefined;
}

/** One look at the server: gone (404), or its current body. */
export type { Observation } from './poll.js';

/** Internal hooks used by `deleteServer` (re-delete) and the coalesced watcher. */
export interface WaitHooks {
  /** Replace the per-server GET with another way of observing the server (e.g. a shared listing). */
  observe?: (signal: AbortSignal, requestTimeoutMs: number) => Promise<Observation>;
  /** Awaited after each observation that does not end the wait, before the next sleep. */
  afterObservation?: (obs: Observation, elapsedMs: number, signal: AbortSignal) => Promise<void> | void;
  /** Replace the sleep between observations (the coalesced watcher ends it at its next tick). Rejects with an AbortError when `signal` aborts. */
  sleep?: (delayMs: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Check the options of {@link waitForDelete} (also used by `deleteServer` before its DELETE):
 * `intervalMs` positive and finite, `timeoutMs` and `requestTimeoutMs` positive (`Infinity` allowed),
 * finite ones at most `MAX_TIMER_MS` (24.8 days: a longer timer fires at once),
 * `jitter` in [0, 1), `pollRetries` a non-negative integer.
 * @throws {@link ValidationError}
 */
export function validateWaitOptions(options: WaitForDeleteOptions): void {
  if (!options || typeof options !== 'object') throw new ValidationError('options must be an object');
  checkDurationMs('intervalMs', options.intervalMs, { allowInfinity: false, timer: true });
  checkDurationMs('timeoutMs', options.timeoutMs, { timer: true });
  checkDurationMs('requestTimeoutMs', options.requestTimeoutMs, { timer: true });
  const jitter = options.jitter ?? 0.1;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter < 1)) throw new ValidationError(`jitter must be a number in [0, 1), got ${String(jitter)}`);
  const pollRetries = options.pollRetries ?? 4;
  if (!Number.isInteger(pollRetries) || pollRetries < 0) throw new ValidationError(`pollRetries must be a non-negative integer, got ${String(pollRetries)}`);
}

/** Classify one observation into a final outcome, or undefined while the delete is still under way. */
export function classify(obs: Observation): Exclude<WaitOutcome, 'timeout'> | undefined {
  if (obs.gone) return 'deleted';
  const status = String(obs.server.status ?? '').toUpperCase();
  const taskState = obs.server['OS-EXT-STS:task_state'];
  if (status === 'DELETED') return 'deleted';
  // SOFT_DELETED with task_state deleting: a force-delete of it is under way (Nova keeps the status).
  if (status === 'SOFT_DELETED') return taskState === 'deleting' ? undefined : 'soft-deleted';
  if (status === 'ERROR' && (taskState === null || taskState === undefined || taskState === '')) return 'error';
  return undefined;
}

/**
 * Poll `GET /servers/{id}` until the server is gone (404 or status DELETED), soft-deleted, in ERROR
 * with no task in progress, or `timeoutMs` has passed. The first poll is immediate.
 *
 * On a client with `coalesce` on (the default), the waits pending on that client share one
 * `changes-since` listing per tick when two or more servers are pending (`polls` then counts the
 * observations the wait received); see `src/coalesce/deleteWatcher.ts`. Outcomes are the same.
 *
 * Resolves `{ outcome, polls, elapsedMs, server }`; `'error'` and `'timeout'` are outcomes, not
 * rejections (see `client.deleteServer` for the throwing variant).
 *
 * @throws {@link ValidationError} for bad options (before any request); {@link AbortError} when
 * `signal` aborts; the poll's {@link NovaApiError} when it is not transient (e.g. 401, 403) or the
 * transient budget (`pollRetries`) is spent.
 */
export function waitForDelete(client: NovaClient, serverId: string, options: WaitForDeleteOptions = {}): Promise<WaitForDeleteResult> {
  return waitForDeleteWithHooks(client, serverId, options, {});
}

/** {@link waitForDelete} with internal hooks. */
export async function waitForDeleteWithHooks(
  client: NovaClient,
  serverId: string,
  options: WaitForDeleteOptions,
  hooks: WaitHooks,
): Promise<WaitForDeleteResult> {
  checkPathId('server id', serverId);
  validateWaitOptions(options);
  const jitter = options.jitter ?? 0.1;
  const pollRetries = options.pollRetries ?? 4;
  throwIfAborted(options.signal);

  const intervalMs = options.intervalMs ?? 5000;
  const timeoutMs = options.timeoutMs ?? 300000;
  const state: WaitForDeleteResult = { outcome: 'timeout', polls: 0, elapsedMs: 0, server: undefined, lastStatus: undefined, lastTaskState: undefined };
  // With no observe hook of its own, a coalescing client's watcher serves the wait (src/coalesce/deleteWatcher.ts).
  const coalesced =
    hooks.observe === undefined && client.coalesce === true
      ? deleteWatcherOf(client).watch(serverId, { intervalMs, jitter, requestTimeoutMs: options.requestTimeoutMs, deadlineAt: performance.now() + timeoutMs })
      : undefined;

  const end = await pollUntil<Exclude<WaitOutcome, 'timeout'>>({
    timeoutMs,
    intervalMs,
    jitter,
    pollRetries,
    requestTimeoutMs: options.requestTimeoutMs ?? client.requestTimeoutMs,
    signal: options.signal,
    abortMessage: `Wait for deletion of server ${serverId} was aborted`,
    observe: hooks.observe ?? coalesced?.observe ?? observeByGet(client, serverId),
    pause: hooks.sleep ?? coalesced?.sleep,
    afterObservation: hooks.afterObservation,
    onObservation: (obs, polls, elapsedMs) => {
      state.server = obs.gone ? undefined : obs.server;
      state.lastStatus = obs.gone ? 'NOT_FOUND' : obs.server.status;
      state.lastTaskState = obs.gone ? null : obs.server['OS-EXT-STS:task_state'];
      try {
        options.onProgress?.({
          serverId,
          polls,
          status: state.lastStatus,
          taskState: state.lastTaskState,
          progress: (obs.gone ? 0 : Number(obs.server.progress)) || 0,
          elapsedMs,
        });
      } catch {
        // a progress callback must not break the wait
      }
      return classify(obs);
    },
  });
  return { ...state, outcome: end.result ?? 'timeout', polls: end.polls, elapsedMs: end.elapsedMs };
}

