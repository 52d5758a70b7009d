/**
 * `waitForActive`: poll a new server until it leaves BUILD.
 *
 * A port of osc-lib's `wait_for_status` (`osc_lib/utils/__init__.py`: success `['active']`, error
 * `['error']`, first look at once, then one every interval) with a wall-clock timeout, jitter
 * ({@link jitteredMs}), an AbortSignal, and 404 (Nova's `Instance <id> could not be found.`) or
 * status DELETED reported as `'gone'`. Each look is one `GET /servers/{id}` (Nova API reference,
 * "Show Server Details") with the client's own retries of transient failures (no response, 502, 503,
 * 504, rate limits): a failure is never taken as an answer. Every timer is on the client's clock; the
 * deadline is an AbortSignal that also cuts the look in flight.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { AbortError, NovaNetworkError, isAbortError } from '../errors/index.js';
import { isServerNotFound } from '../transport/index.js';
import { sleep, timeoutSignal } from '../core/clock.js';
import { jitteredMs } from '../core/jitter.js';
import type { Server } from '../core/types.js';
import { statusOf } from '../core/counting.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { is, normaliseServerId } from '../core/validate.js';

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
  /**
   * Called (and awaited) with the body of each poll that still shows BUILD, before the next pause.
   * `QuotaGuard` uses it to end its claim once the server is past scheduling
   * (`isPastScheduling`). An error it throws ends the wait with that error.
   */
  onBuild?: ((server: Server) => void | Promise<void>) | undefined;
}

/**
 * True when a BUILD server is surely counted by Nova's quota: its `OS-EXT-STS:task_state` is set
 * and is not `scheduling` (`networking`, `block_device_mapping`, `spawning`, ...), or its
 * `OS-EXT-SRV-ATTR:host` is set (admin only).
 *
 * Why (Nova's own code): the API answers `POST /servers` with a build request whose `task_state` is
 * `scheduling`. Conductor (`nova/conductor/manager.py` `schedule_and_build_instances`) has the
 * scheduler claim the placement allocations (what placement counting, `[quota]
 * count_usage_from_placement`, counts as cores and RAM), creates the instance row in its cell (what
 * legacy counting in `nova/quota.py` counts), runs its quota recheck (`[quota] recheck_quota`; a
 * failure sets ERROR while `task_state` is still `scheduling`), and only then casts the build to
 * nova-compute, whose `_do_build_and_run_instance` / `_build_and_run_instance` set the host and move
 * `task_state` to `networking`, `block_device_mapping` and `spawning`. A `task_state` of null in
 * BUILD is not taken as proof (it is briefly null on the compute host, but nothing promises it
 * elsewhere). One gap is left to Nova's recheck and the guard's 403 path: a build that fails on its
 * compute host and is rescheduled goes back to `scheduling` with its allocations moved.
 */
export function isPastScheduling(server: Server): boolean {
  const s = server as Record<string, unknown>;
  const status = statusOf(server);
  if (status !== 'BUILD' && status !== '') return true;
  const host = s['OS-EXT-SRV-ATTR:host'];
  if (typeof host === 'string' && host !== '') return true;
  const taskState = s['OS-EXT-STS:task_state'];
  return typeof taskState === 'string' && taskState !== '' && taskState.toLowerCase() !== 'scheduling';
}

/** What {@link waitForActive} takes (see {@link WaitForActiveOptions}). */
const WAIT_FOR_ACTIVE_SPEC: OptionsSpec<WaitForActiveOptions> = {
  timeoutMs: is.durationMs({ timer: true }),
  intervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  jitter: is.number({ min: 0, max: 1, maxExclusive: true }),
  signal: is.signal,
  onBuild: is.function,
};

/** What {@link waitForActive} resolves. */
export interface WaitForActiveResult {
  outcome: ActiveOutcome;
  /** The last server body seen (undefined after a 404). */
  server: Server | undefined;
  /** Last status seen (`'NOT_FOUND'` after a 404). */
  lastStatus: string | undefined;
  /** GET requests made (the client's retries of transient failures included). */
  polls: number;
  /** Wall-clock time spent, in ms. */
  elapsedMs: number;
}

/** The outcome a server body means, or undefined while it is still building. */
function outcomeOf(server: Server): Exclude<ActiveOutcome, 'timeout'> | undefined {
  const status = statusOf(server);
  if (status === 'DELETED') return 'gone';
  if (status === 'ERROR') return 'error';
  if (status !== 'BUILD' && status !== '') return 'active';
  return undefined;
}

/**
 * Poll `GET /servers/{id}` until the server leaves BUILD or `timeoutMs` passes. Outcomes are
 * resolved, not thrown.
 *
 * `serverId` is sent in Nova's canonical form (lower case, 8-4-4-4-12 dashes, see `canonicalServerId`).
 *
 * @throws {@link ValidationError} (before any request) for a server id that is not a UUID, an unknown option name or a bad value;
 * {@link AbortError} when `signal` aborts; a poll's {@link NovaApiError} when it is not
 * transient (401, 403) or keeps failing past the client's retries.
 */
export async function waitForActive(client: NovaClient, id: string, options: WaitForActiveOptions = {}): Promise<WaitForActiveResult> {
  const serverId = normaliseServerId('server id', id);
  checkOptions('waitForActive options', options, WAIT_FOR_ACTIVE_SPEC);
  const timeoutMs = options.timeoutMs ?? 600000;
  const intervalMs = options.intervalMs ?? 2000;
  const jitter = options.jitter ?? 0.1;
  const clock = client.clock;
  const aborted = (): AbortError => new AbortError(`Wait for server ${serverId} to leave BUILD was aborted`, { cause: options.signal?.reason });
  if (options.signal?.aborted) throw aborted();
  const startedMs = clock.now();
  const leftMs = (): number => timeoutMs - (clock.now() - startedMs);
  const deadline = timeoutSignal(clock, timeoutMs, () => new AbortError(`waitForActive: ${timeoutMs} ms passed`));
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  let polls = 0;
  let server: Server | undefined;
  let lastStatus: string | undefined;
  const end = (outcome: ActiveOutcome): WaitForActiveResult => ({ outcome, server, lastStatus, polls, elapsedMs: Math.round(clock.now() - startedMs) });
  try {
    for (;;) {
      try {
        server = await client.getServer(serverId, {
          signal,
          requestTimeoutMs: Math.max(1, Math.min(client.requestTimeoutMs, Math.ceil(leftMs()))),
          onAttempt: () => void polls++,
        });
      } catch (e) {
        if (!isServerNotFound(e, serverId)) throw e;
        server = undefined;
        lastStatus = 'NOT_FOUND';
        return end('gone');
      }
      lastStatus = server.status;
      const outcome = outcomeOf(server);
      if (outcome) return end(outcome);
      if (options.onBuild) await options.onBuild(server);
      if (leftMs() <= 0) return end('timeout');
      await sleep(clock, Math.min(jitteredMs(intervalMs, jitter), leftMs()), signal);
    }
  } catch (e) {
    if (options.signal?.aborted) throw aborted();
    // The deadline ended a pause or cut the look in flight (the look's time limit was the time left).
    if (deadline.signal.aborted && (isAbortError(e) || (e instanceof NovaNetworkError && e.timedOut))) return end('timeout');
    if (e instanceof NovaNetworkError && e.timedOut && leftMs() <= 0) return end('timeout');
    throw e;
  } finally {
    deadline.dispose();
  }
}
