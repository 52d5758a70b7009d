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
import { setTimeout as sleep } from 'node:timers/promises';
import pTimeout from 'p-timeout';
import type { NovaClient } from './client.js';
import { AbortError, NotFoundError, throwIfAborted } from './errors.js';
import { isTransient } from './http.js';
import { withRetry } from './retry.js';
import type { Server } from './types.js';

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
  throwIfAborted(options.signal);
  const timeoutMs = options.timeoutMs ?? 600000;
  const intervalMs = options.intervalMs ?? 2000;
  const jitter = options.jitter ?? 0.1;
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const state: WaitForActiveResult = { outcome: 'timeout', server: undefined, lastStatus: undefined, polls: 0, elapsedMs: 0 };

  const loop = async (): Promise<WaitForActiveResult> => {
    const signal = controller.signal;
    for (;;) {
      const server = await withRetry(
        async () => {
          state.polls++;
          const perRequest = Math.max(1, Math.min(client.requestTimeoutMs, timeoutMs - elapsed()));
          try {
            return await client.getServer(serverId, { signal, requestTimeoutMs: perRequest, retry: false });
          } catch (e) {
            if (e instanceof NotFoundError) return undefined;
            throw e;
          }
        },
        {
          retries: 4,
          minDelayMs: intervalMs,
          maxDelayMs: Math.max(intervalMs, 60000),
          maxRetryTimeMs: Math.max(1, timeoutMs - elapsed()),
          shouldRetry: isTransient,
          signal,
        },
      );
      state.server = server;
      const status = server === undefined ? 'NOT_FOUND' : String(server.status ?? '').toUpperCase();
      state.lastStatus = server === undefined ? 'NOT_FOUND' : server.status;
      if (status === 'NOT_FOUND' || status === 'DELETED') return { ...state, outcome: 'gone' };
      if (status === 'ERROR') return { ...state, outcome: 'error' };
      if (status !== 'BUILD' && status !== '') return { ...state, outcome: 'active' };
      const remaining = timeoutMs - elapsed();
      if (remaining <= 0) return { ...state, outcome: 'timeout' };
      const delay = Math.round(intervalMs * (1 + (Math.random() * 2 - 1) * jitter));
      await sleep(Math.min(delay, remaining), undefined, { signal });
    }
  };

  try {
    const result = await pTimeout(loop(), {
      milliseconds: timeoutMs,
      fallback: () => {
        controller.abort(new Error('deadline'));
        return { ...state, outcome: 'timeout' as const };
      },
    });
    return { ...result, elapsedMs: elapsed() };
  } catch (e) {
    if (options.signal?.aborted) throw new AbortError(`Wait for server ${serverId} to leave BUILD was aborted`, { cause: options.signal.reason });
    if (controller.signal.aborted) return { ...state, outcome: 'timeout', elapsedMs: elapsed() };
    throw e;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (!controller.signal.aborted) controller.abort(new Error('settled'));
  }
}
