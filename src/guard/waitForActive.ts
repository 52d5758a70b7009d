/**
 * `waitForActive`: wait until a new server leaves BUILD, reading the client's watcher.
 *
 * osc-lib's `wait_for_status` (`osc_lib/utils/__init__.py`: success `['active']`, error `['error']`,
 * first look at once, then one every interval) as a predicate on what the client's watcher (its
 * delete engine, `src/delete/engine.ts`) sees of the server, with a wall-clock timeout, jitter, an
 * AbortSignal, and 404 (Nova's `Instance <id> could not be found.`) or status DELETED reported as
 * `'gone'`. The watcher owns the schedule, the rate limit and the poll pace of every look of the
 * client: N concurrent waits (guarded creates, delete-waits) cost one `changes-since` listing a tick
 * (Nova API reference, "List Servers Detailed"), not N `GET /servers/{id}` ("Show Server Details");
 * a wait alone gets its own GET each interval. A failed look is never taken as an answer.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { AbortError } from '../errors/index.js';
import type { WatchEnd } from '../delete/index.js';
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

/** Failed looks in a row a wait for ACTIVE tolerates (transient failures only), as many as the client's default retries. */
const ACTIVE_POLL_RETRIES = 4;

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
  /** Looks at the server: its own GETs, and the shared listings that showed it. */
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
 * Wait until the server leaves BUILD or `timeoutMs` passes, reading the client's watcher (its
 * `deleteEngine`: one schedule, one rate limit and one poll pace for every wait of the client).
 * Outcomes are resolved, not thrown.
 *
 * The wait is a predicate on what the watcher sees of the server (left BUILD, or gone). While it is
 * the client's only pending wait, each look is the server's own `GET /servers/{id}`, the first at
 * once, then one every `intervalMs`; while other waits are pending on the same client (other guarded
 * creates, delete-waits), one shared `GET /servers/detail?changes-since=T` a tick answers them all,
 * and only a server that listing could not answer gets its own GET. "Gone" is Nova's 404 for the
 * server's own GET (checked against a listing when a listing showed it a moment ago) or status
 * `DELETED`; an absence from a listing is never "gone". A transient failure (no response, 5xx, 429)
 * is looked at again at the next interval (widened while Nova is slow or failing), up to 4 in a row.
 *
 * `serverId` is sent in Nova's canonical form (lower case, 8-4-4-4-12 dashes, see `canonicalServerId`).
 *
 * @throws {@link ValidationError} (before any request) for a server id that is not a UUID, an unknown option name or a bad value;
 * {@link AbortError} when `signal` aborts; a look's {@link NovaApiError} when it is not
 * transient (401, 403) or more than 4 looks in a row failed; {@link OrphanedServerError} when Nova
 * answers 404 for the server while its listing still shows it; what `onBuild` throws.
 */
export async function waitForActive(client: NovaClient, id: string, options: WaitForActiveOptions = {}): Promise<WaitForActiveResult> {
  const serverId = normaliseServerId('server id', id);
  checkOptions('waitForActive options', options, WAIT_FOR_ACTIVE_SPEC);
  const timeoutMs = options.timeoutMs ?? 600000;
  const intervalMs = options.intervalMs ?? 2000;
  const jitter = options.jitter ?? 0.1;
  const engine = client.deleteEngine;
  const clock = engine.clock;
  const aborted = (): AbortError => new AbortError(`Wait for server ${serverId} to leave BUILD was aborted`, { cause: options.signal?.reason });
  if (options.signal?.aborted) throw aborted();
  const startedMs = clock.now();
  // `onBuild` runs with each BUILD body, one at a time; what it throws ends the wait.
  const onBuild = options.onBuild;
  const buildFailed = new AbortController();
  let building: Promise<void> = Promise.resolve();
  let buildError: { error: unknown } | undefined;
  const signal = options.signal ? AbortSignal.any([options.signal, buildFailed.signal]) : buildFailed.signal;
  let end: WatchEnd;
  try {
    end = await engine.watch(serverId, {
      intervalMs,
      confirmIntervalMs: intervalMs,
      jitter,
      deadlineAt: startedMs + timeoutMs,
      requestTimeoutMs: undefined,
      pollRetries: ACTIVE_POLL_RETRIES,
      signal,
      until: (obs) => obs.gone || outcomeOf(obs.server) !== undefined,
      onObservation: (obs) => {
        if (!onBuild || obs.gone || outcomeOf(obs.server) !== undefined) return;
        const body = obs.server;
        building = building.then(async () => {
          if (buildError) return;
          try {
            await onBuild(body);
          } catch (error) {
            buildError = { error };
            buildFailed.abort(error);
          }
        });
      },
    });
  } catch (e) {
    await building;
    if (buildError) throw buildError.error;
    if (options.signal?.aborted) throw aborted();
    throw e;
  }
  if (onBuild) await building;
  if (buildError) throw buildError.error;
  const server = end.server;
  const outcome: ActiveOutcome = server === undefined ? (end.lastStatus === 'NOT_FOUND' ? 'gone' : 'timeout') : (outcomeOf(server) ?? 'timeout');
  return { outcome, server, lastStatus: end.lastStatus, polls: end.polls, elapsedMs: Math.round(clock.now() - startedMs) };
}
