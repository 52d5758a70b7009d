/**
 * `waitForActive`: poll a new server until it leaves BUILD.
 *
 * A port of osc-lib's `wait_for_status` (`osc_lib/utils/__init__.py`, success `['active']`, error
 * `['error']`; `../shared/reference/nova-facts.md` §1) with a wall-clock timeout, jitter, an
 * AbortSignal, transient poll failures retried with backoff (never taken as an answer), and 404 or
 * status DELETED reported as `'gone'`.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { observeByGet, pollUntil } from '../delete/poll.js';
import type { Server } from '../core/types.js';

/** How the wait ended. */
export type ActiveOutcome =
  /** Left BUILD to anything but ERROR or DELETED (normally ACTIVE). */
  | 'active'
  /** Status ERROR: see `server.fault`. */
  | 'error'
  /** 404, or status DELETED. */
  | 'gone'
  /** Still BUILD when `timeoutMs` ran out. */
  | 'timeout';

/** Options of {@link waitForActive}. */
export interface WaitForActiveOptions {
  /** Wall-clock limit, in ms. Default 600000. */
  timeoutMs?: number;
  /** Time between polls, in ms, before jitter. Default 2000. The first poll is immediate. */
  intervalMs?: number;
  /** Each interval is multiplied by a random factor in [1 - jitter, 1 + jitter]. Default 0.1. */
  jitter?: number;
  /** Rejects with {@link AbortError}. */
  signal?: AbortSignal | undefined;
}

/** What {@link waitForActive} resolves. */
export interface WaitForActiveResult {
  outcome: ActiveOutcome;
  /** The last server body seen (undefined after a 404). */
  server: Server | undefined;
  /** Last status seen (`'NOT_FOUND'` after a 404). */
  lastStatus: string | undefined;
  /** GET requests made (retries of transient failures included). */
  polls: number;
  /** Wall-clock time spent, in ms. */
  elapsedMs: number;
}

/**
 * Poll `GET /servers/{id}` until the server leaves BUILD or `timeoutMs` passes. Outcomes are
 * resolved, not thrown.
 *
 * @throws {@link AbortError} when `signal` aborts; a poll's {@link NovaApiError} when it is not
 * transient (401, 403) or keeps failing.
 */
export async function waitForActive(client: NovaClient, serverId: string, options: WaitForActiveOptions = {}): Promise<WaitForActiveResult> {
  const state: Omit<WaitForActiveResult, 'outcome' | 'polls' | 'elapsedMs'> = { server: undefined, lastStatus: undefined };
  const end = await pollUntil<Exclude<ActiveOutcome, 'timeout'>>({
    clock: client.clock,
    timeoutMs: options.timeoutMs ?? 600000,
    intervalMs: options.intervalMs ?? 2000,
    jitter: options.jitter ?? 0.1,
    pollRetries: 4,
    requestTimeoutMs: client.requestTimeoutMs,
    signal: options.signal,
    abortMessage: `Wait for server ${serverId} to leave BUILD was aborted`,
    observe: observeByGet(client, serverId),
    onObservation: (obs) => {
      state.server = obs.server;
      state.lastStatus = obs.gone ? 'NOT_FOUND' : obs.server.status;
      const status = obs.gone ? 'NOT_FOUND' : String(obs.server.status ?? '').toUpperCase();
      if (status === 'NOT_FOUND' || status === 'DELETED') return 'gone';
      if (status === 'ERROR') return 'error';
      if (status !== 'BUILD' && status !== '') return 'active';
      return undefined;
    },
  });
  return { ...state, outcome: end.result ?? 'timeout', polls: end.polls, elapsedMs: end.elapsedMs };
}
