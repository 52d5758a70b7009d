/**
 * `waitForDelete(client, id, options)`: wait until Nova has deleted a server.
 *
 * Source: osc-lib `utils.wait_for_delete` (poll every `sleep_time` until the resource is gone or in
 * an error status, up to `timeout`), done right: the deadline is on the clock, not a count of polls;
 * status `DELETED` is not the end (Nova frees the cores only at its 404, seconds later under load);
 * a 404 counts only when it is Nova's `itemNotFound` for this server; failed looks are retried on the
 * next tick; the waits of one client share its delete engine (`src/delete/engine.ts`).
 *
 * @module
 */
import { normaliseServerId } from '../core/validate.js';
import { AbortError } from '../errors/index.js';
import type { DeleteEngine, WatchSpec } from './engine.js';
import { DELETE_DEFAULTS, checkWaitOptions } from './options.js';
import type { Observation } from './observe.js';
import type { WaitForDeleteOptions, WaitForDeleteResult } from './types.js';

/** What the delete functions need of a client: its delete engine (every `NovaClient` has one). */
export interface DeleteCapable {
  /** The client's delete engine. */
  readonly deleteEngine: DeleteEngine;
}

/** The engine's description of a wait from the caller's options, ending `timeoutMs` after `startedAt`. */
export function watchSpec(engine: DeleteEngine, options: WaitForDeleteOptions, startedAt: number, onObservation?: WatchSpec['onObservation']): WatchSpec {
  const intervalMs = options.intervalMs ?? DELETE_DEFAULTS.intervalMs;
  return {
    intervalMs,
    confirmIntervalMs: options.confirmIntervalMs ?? Math.min(intervalMs, DELETE_DEFAULTS.confirmIntervalMs),
    jitter: options.jitter ?? DELETE_DEFAULTS.jitter,
    deadlineAt: startedAt + (options.timeoutMs ?? DELETE_DEFAULTS.timeoutMs),
    requestTimeoutMs: options.requestTimeoutMs,
    pollRetries: options.pollRetries ?? DELETE_DEFAULTS.pollRetries,
    signal: options.signal,
    onObservation,
    onFailure: options.onFailure,
  };
}

/** An `onObservation` that calls the caller's `onProgress` (its exceptions, and an async one's rejection, ignored). */
export function progressReporter(serverId: string, options: WaitForDeleteOptions, elapsedMs: () => number): ((obs: Observation, polls: number) => void) | undefined {
  const onProgress = options.onProgress;
  if (!onProgress) return undefined;
  return (obs, polls) => {
    try {
      const r: unknown = onProgress({
        serverId,
        polls,
        status: obs.gone ? 'NOT_FOUND' : obs.server.status,
        taskState: obs.gone ? null : obs.server['OS-EXT-STS:task_state'],
        progress: (obs.gone ? 0 : Number(obs.server.progress)) || 0,
        elapsedMs: elapsedMs(),
      });
      // An async callback that rejects must not be an unhandled rejection (which ends a Node process).
      if (typeof (r as { then?: unknown } | null)?.then === 'function') (r as PromiseLike<unknown>).then(undefined, () => undefined);
    } catch {
      // a progress callback must not break the wait
    }
  };
}

/**
 * Wait until Nova has deleted `serverId`: its 404 (`deleted`), status `SOFT_DELETED`
 * (`soft-deleted`), `ERROR` with no task in progress (`error`), or `timeoutMs` (`timeout`). The
 * first look is immediate; then one every `intervalMs` (every `confirmIntervalMs` once the server
 * shows `DELETED`). `error` and `timeout` are outcomes, not rejections (see `deleteServer` for the
 * throwing variant). The id is taken in any case, with or without dashes, and sent and compared in
 * Nova's canonical form (lower case, 8-4-4-4-12 dashes: `canonicalServerId`).
 *
 * @throws {@link ValidationError} for a bad id or options (before any request); {@link AbortError}
 * (its `serverId` set) when `signal` aborts; the last failure when more than `pollRetries` looks in a row failed, or a
 * failure no later look can mend (401 after re-authentication, 403); {@link OrphanedServerError} when
 * its GET answers 404 yet a listing still shows it (checked when the latest listing showed it, or, a
 * single wait, when nothing showed it reachable before). While that listing fails, the 404 counts for
 * nothing: the wait goes on (GET and check again every `intervalMs`) and ends as `timeout` at worst.
 */
export function waitForDelete(client: DeleteCapable, id: string, options: WaitForDeleteOptions = {}): Promise<WaitForDeleteResult> {
  let serverId: string;
  try {
    serverId = normaliseServerId('server id', id);
    checkWaitOptions(options);
  } catch (error) {
    return Promise.reject(aboutServer(error, id, 'Waiting for the deletion'));
  }
  // A plain view: no async frame stays suspended per pending wait, only the engine's record.
  const engine = client.deleteEngine;
  const clock = engine.clock;
  const startedAt = clock.now();
  const elapsedMs = (): number => Math.round(clock.now() - startedAt);
  return engine.watch(serverId, watchSpec(engine, options, startedAt, progressReporter(serverId, options, elapsedMs))).then((end) => ({ ...end, elapsedMs: elapsedMs() }));
}

/**
 * `error`, or, for an {@link AbortError} that names no server, an AbortError that names `serverId`
 * (`what` begins its message: `Deletion`, `Waiting for the deletion`).
 */
export function aboutServer(error: unknown, serverId: string, what: string): unknown {
  if (!(error instanceof AbortError) || error.serverId !== undefined) return error;
  return new AbortError(`${what} of server ${serverId} was aborted`, { cause: error.cause, serverId });
}
