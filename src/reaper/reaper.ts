/**
 * The leak reaper: find the fleet's servers that a dead worker left behind and delete them, without
 * racing a worker that is just creating one.
 *
 * - **Fleet**: a name prefix and/or a metadata key (and value); never every server of a project.
 * - **Age**: only servers older than `olderThanMs` (from `created`).
 * - **Two passes**: a server is deleted only when it was a candidate on two consecutive passes and did
 *   not change in between (nodepool's leak cleanup, `cleanupLeakedResources`; `docs/field-cases.md#what-nodepool-does`).
 * - **Time-boxed, one at a time per server**: each deletion is `deleteServer(id, { wait: true })`
 *   bounded by `deleteTimeoutMs`, and settles on its own; one stuck server never stops the others
 *   (autopkgtest-cloud's janitor; `docs/field-cases.md#servers-stuck-in-deleting`).
 * - **A time box per pass**: `timeoutMs` bounds the listing and every deletion of a pass.
 * - **Ownership on the client side only**: the listing sends no `metadata`, `all_tenants` or
 *   `status=DELETED` filter (Nova drops the first two for non-admins without a word and answers the
 *   last with 403; Nova API reference, "List Servers"); the fleet selector is applied to what is listed.
 * - **Never a record that is gone or unknowable**: DELETED and SOFT_DELETED records are skipped, and so
 *   are UNKNOWN ones (a cell that does not answer; Nova API guide, "Down cells").
 *
 * Three ways to run it:
 * - {@link reapServers}: two passes `passIntervalMs` apart, then return (a one-shot command).
 * - A cron job: `new Reaper(client, { ...options, state: await readReaperState(file) })`, one
 *   `pass()` per run, then `writeReaperState(file, reaper.state)`. The second run deletes what the
 *   first saw.
 * - A daemon: `reaper.run({ intervalMs, signal })`, a pass every `intervalMs` until aborted.
 *
 * @module
 */
import pLimit from 'p-limit';
import type { NovaClient } from '../nova/client.js';
import { checkDeleteOptions, deleteServer } from '../delete/index.js';
import { AbortError, OperationTimeoutError, ValidationError, throwIfAborted } from '../errors/index.js';
import { componentLogger, type Logger } from '../core/logger.js';
import { sleep, timeoutSignal } from '../core/clock.js';
import {
  checkSelector,
  emptyReaperState,
  planPass,
  type ReaperState,
} from './plan.js';
import { is } from '../core/validate.js';
import { checkOptions as checkOptionsSpec, type OptionsSpec } from '../core/options.js';
import type { DeleteServerOptions } from '../delete/index.js';

/** Default {@link ReaperOptions.timeoutMs}: 15 min per pass. */
const DEFAULT_PASS_TIMEOUT_MS = 900_000;

export type { FleetSelector, ReaperState } from './plan.js';

export type { ReaperOptions, ReaperRunOptions, ReapServersOptions, ReapEvent, ReapResult } from './types.js';
import type { ReaperOptions, ReaperRunOptions, ReapServersOptions, ReapDeleted, ReapFailure, ReapEvent, ReapPassResult, ReapResult } from './types.js';

/** What a {@link Reaper} takes (see {@link ReaperOptions}); `deleteOptions` is checked as `deleteServer`'s. */
const REAPER_SPEC: OptionsSpec<ReaperOptions> = {
  prefix: null,
  metadataKey: null,
  metadataValue: null,
  olderThanMs: is.durationMs({ allowZero: true }),
  dryRun: is.boolean,
  // Both feed timers: a finite value above MAX_TIMER_MS would fire at once.
  deleteTimeoutMs: is.durationMs({ timer: true }),
  deleteIntervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  timeoutMs: is.durationMs({ timer: true }),
  concurrency: is.integer({ min: 1 }),
  pageSize: is.integer({ min: 1 }),
  state: (value) => checkState(value),
  // deleteOptions reach every deleteServer call: a bad one is refused before the listing, not once per server.
  deleteOptions: (value) => checkDeleteOptions(value as DeleteServerOptions, REAPER_DELETE_KEYS),
  now: is.function,
  signal: is.signal,
  logger: is.object,
  onEvent: is.function,
  liveClaims: is.function,
};

/** The `deleteServer` options a reaper passes on: all but the four it sets itself. */
const REAPER_DELETE_KEYS = ['pollRetries', 'jitter', 'confirmIntervalMs', 'onProgress', 'requestTimeoutMs', 'redeleteAfterMs', 'forceSoftDeleted', 'confirmGoneMs', 'deleteRetries', 'force'] as const satisfies ReadonlyArray<
  keyof NonNullable<ReaperOptions['deleteOptions']>
>;

function checkOptions(options: ReaperOptions): void {
  if (!options || typeof options !== 'object') throw new ValidationError('the reaper needs options');
  checkOptionsSpec('Reaper options', options, REAPER_SPEC);
  checkSelector(options);
  if (options.olderThanMs === undefined) throw new ValidationError('olderThanMs is required (ms; 0 means any age)');
}

/** What {@link Reaper.run} takes (see {@link ReaperRunOptions}). */
const RUN_SPEC: OptionsSpec<ReaperRunOptions> = {
  intervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  signal: is.signal,
  onPass: is.function,
  onError: is.function,
};

/** Throws {@link ValidationError} unless `state` is a {@link ReaperState}. */
export function checkState(state: unknown): asserts state is ReaperState {
  const s = state as ReaperState;
  if (!s || typeof s !== 'object' || s.version !== 1 || !Number.isInteger(s.passes) || typeof s.candidates !== 'object' || s.candidates === null) {
    throw new ValidationError('reaper state must be {version: 1, passes, lastPassMs, candidates}');
  }
  for (const [id, c] of Object.entries(s.candidates)) {
    if (!c || typeof c.fingerprint !== 'string' || typeof c.firstSeenMs !== 'number') throw new ValidationError(`reaper state: bad entry for server ${id}`);
  }
}

/**
 * A reaper that keeps its state between passes. See the module description for cron and daemon use.
 *
 * @example
 * ```ts
 * const reaper = new Reaper(nova, { prefix: 'adt-', olderThanMs: 2 * 3600_000 });
 * await reaper.pass();            // sees the leaks
 * const r = await reaper.pass();  // deletes those still there, unchanged
 * ```
 */
export class Reaper {
  readonly #client: NovaClient;
  readonly #options: ReaperOptions;
  readonly #log: Logger;
  #state: ReaperState;
  #running = false;

  /** @throws {@link ValidationError} for bad options (an unknown name such as `dryrun`, naming the closest; no fleet, no `olderThanMs`, a `dryRun` that is not a boolean, bad durations, state or `deleteOptions`). */
  constructor(client: NovaClient, options: ReaperOptions) {
    checkOptions(options);
    this.#client = client;
    this.#options = { ...options };
    this.#log = componentLogger(options.logger ?? client.logger, 'reaper');
    this.#state = structuredClone(options.state ?? emptyReaperState());
  }

  /** A copy of the state after the last pass: plain JSON, for a cron job's state file. */
  get state(): ReaperState {
    return structuredClone(this.#state);
  }

  #emit(event: ReapEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // a progress display must not break the reaper
    }
  }

  /**
   * One pass: list every server (all pages), decide (see `planPass`), delete the confirmed
   * candidates at bounded concurrency, each time-boxed, and remember this pass's candidates.
   *
   * @throws {@link ValidationError} when another pass of this reaper is running; the listing's
   * {@link NovaApiError} (the state is then unchanged); {@link AbortError} when `signal` aborts;
   * {@link OperationTimeoutError} (`operation` `Reaper.pass`) when `timeoutMs` runs out. Deletion
   * failures never throw: they are in `failed` (a deletion the pass had no time left to start:
   * an OperationTimeoutError).
   */
  async pass(): Promise<ReapPassResult> {
    if (this.#running) throw new ValidationError('a pass of this reaper is already running');
    this.#running = true;
    try {
      return await this.#pass();
    } finally {
      this.#running = false;
    }
  }

  async #pass(): Promise<ReapPassResult> {
    const o = this.#options;
    const { signal } = o;
    throwIfAborted(signal);
    const clock = this.#client.clock;
    const started = clock.now();
    const timeoutMs = o.timeoutMs ?? DEFAULT_PASS_TIMEOUT_MS;
    const deadlineAt = started + timeoutMs;
    const timedOut = (): OperationTimeoutError =>
      new OperationTimeoutError(`The reaper pass did not finish within timeoutMs (${timeoutMs} ms)`, { operation: 'Reaper.pass', timeoutMs, elapsedMs: Math.round(clock.now() - started) });
    const deadline = Number.isFinite(timeoutMs) ? timeoutSignal(clock, timeoutMs, timedOut) : undefined;
    // Aborted when the pass settles: no request of this pass outlives it.
    const settled = new AbortController();
    const backstop = signal ? AbortSignal.any([settled.signal, signal]) : settled.signal;
    const listing = deadline ? AbortSignal.any([backstop, deadline.signal]) : backstop;
    try {
      return await this.#passWithin({ listing, backstop }, deadlineAt, started);
    } catch (e) {
      if (deadline?.signal.aborted && !signal?.aborted) throw deadline.signal.reason;
      throw e;
    } finally {
      deadline?.dispose();
      settled.abort();
    }
  }

  async #passWithin(signals: { listing: AbortSignal; backstop: AbortSignal }, deadlineAt: number, started: number): Promise<ReapPassResult> {
    const o = this.#options;
    const { signal } = o;
    const now = o.now ?? (() => this.#client.clock.wallNow());
    // The pass's own deadline bounds its listing (not the listing's shorter default).
    const listingTimeoutMs = Number.isFinite(deadlineAt) ? Math.max(1, deadlineAt - this.#client.clock.now()) : Number.POSITIVE_INFINITY;
    const servers = await this.#client.listServers(o.pageSize ? { limit: o.pageSize } : {}, { signal: signals.listing, timeoutMs: listingTimeoutMs });
    const startedAtMs = now();
    // After the listing: a claim that began before it is seen live.
    const live = o.liveClaims ? await o.liveClaims() : undefined;
    const plan = planPass({ servers, previous: this.#state, selector: o, olderThanMs: o.olderThanMs, dryRun: o.dryRun ?? false, nowMs: startedAtMs, live });
    const next = plan.next;
    for (const { server } of plan.toDelete) next.candidates[server.id]!.deleteAttempted = true;
    this.#state = next;
    const unreachable = plan.unreachable.length;
    const wouldDelete = plan.skipped.filter((s) => s.reason === 'dry-run').length;
    this.#emit({ type: 'listed', pass: next.passes, listed: servers.length, candidates: plan.candidates.length, toDelete: plan.toDelete.length, wouldDelete, unreachable });
    if (unreachable > 0) this.#log.warn({ unreachable }, 'servers with status UNKNOWN (a cell does not answer): never reaped');
    this.#log.info(
      { pass: next.passes, listed: servers.length, candidates: plan.candidates.length, toDelete: plan.toDelete.length, dryRun: o.dryRun ?? false },
      'reaper pass',
    );

    const deleted: ReapDeleted[] = [];
    const failed: ReapFailure[] = [];
    const limit = pLimit(o.concurrency ?? 10);
    await Promise.all(
      plan.toDelete.map(({ server, candidate }) =>
        limit(async () => {
          if (signal?.aborted) return;
          const leftMs = deadlineAt - this.#client.clock.now();
          if (leftMs < 1) {
            const error = new OperationTimeoutError(`not attempted: the pass's timeoutMs ran out before this deletion could start`, { operation: 'Reaper.pass', timeoutMs: o.timeoutMs ?? DEFAULT_PASS_TIMEOUT_MS });
            failed.push({ serverId: server.id, name: server.name, ageMs: candidate.ageMs, error });
            this.#emit({ type: 'delete-failed', serverId: server.id, name: server.name, error });
            return;
          }
          this.#emit({ type: 'delete-started', serverId: server.id, name: server.name });
          const t0 = this.#client.clock.now();
          try {
            const r = await this.#deleteOne(server.id, leftMs, signals.backstop);
            const item: ReapDeleted = { serverId: server.id, name: server.name, ageMs: candidate.ageMs, outcome: r.outcome, elapsedMs: Math.round(this.#client.clock.now() - t0) };
            deleted.push(item);
            delete this.#state.candidates[server.id];
            this.#log.info({ serverId: server.id, outcome: r.outcome, elapsedMs: item.elapsedMs }, 'reaped');
            this.#emit({ type: 'deleted', serverId: server.id, name: server.name, outcome: r.outcome, elapsedMs: item.elapsedMs });
          } catch (e) {
            const error = e instanceof Error ? e : new Error(String(e));
            failed.push({ serverId: server.id, name: server.name, ageMs: candidate.ageMs, error });
            this.#log.warn({ serverId: server.id, err: error.message }, 'reap failed: the next pass tries again');
            this.#emit({ type: 'delete-failed', serverId: server.id, name: server.name, error });
          }
        }),
      ),
    );
    if (signal?.aborted) throw new AbortError('The reaper pass was aborted', { cause: signal.reason });
    const order = new Map(plan.toDelete.map(({ server }, i) => [server.id, i]));
    const byOrder = (a: { serverId: string }, b: { serverId: string }): number => (order.get(a.serverId) ?? 0) - (order.get(b.serverId) ?? 0);
    return {
      pass: next.passes,
      dryRun: o.dryRun ?? false,
      listed: servers.length,
      candidates: plan.candidates,
      deleted: deleted.sort(byOrder),
      skipped: plan.skipped,
      failed: failed.sort(byOrder),
      unreachable: plan.unreachable,
      startedAtMs,
      elapsedMs: Math.round(this.#client.clock.now() - started),
    };
  }

  /**
   * `deleteServer` with wait, bounded by `deleteTimeoutMs` and by what is left of the pass (`leftMs`):
   * its `timeoutMs` covers the DELETE and the wait, so it ends with {@link DeleteTimeoutError} by then.
   * `backstop` is the caller's signal and the pass's end (a safety net: nothing outlives the pass).
   */
  #deleteOne(serverId: string, leftMs: number, backstop: AbortSignal): ReturnType<typeof deleteServer> {
    const o = this.#options;
    const timeoutMs = Math.min(o.deleteTimeoutMs ?? 300000, leftMs);
    return deleteServer(this.#client, serverId, {
      ...o.deleteOptions,
      wait: true,
      timeoutMs,
      intervalMs: o.deleteIntervalMs ?? 5000,
      requestTimeoutMs: Math.min(o.deleteOptions?.requestTimeoutMs ?? this.#client.requestTimeoutMs, timeoutMs),
      signal: backstop,
    });
  }

  /**
   * Run a pass every `intervalMs` until `signal` aborts (a daemon). Resolves with the number of passes
   * when aborted between or during passes; a pass whose listing fails is logged, given to `onError`
   * and retried at the next interval.
   */
  async run(options: ReaperRunOptions): Promise<number> {
    if (!options || typeof options !== 'object') throw new ValidationError('Reaper.run needs options ({ intervalMs, signal })');
    checkOptionsSpec('Reaper.run options', options, RUN_SPEC);
    if (options.intervalMs === undefined) throw new ValidationError('intervalMs is required (ms)');
    let passes = 0;
    const { signal } = options;
    const outer = this.#options.signal;
    const both = outer ? AbortSignal.any([outer, signal]) : signal;
    const saved = this.#options.signal;
    this.#options.signal = both;
    try {
      while (!both.aborted) {
        try {
          const r = await this.pass();
          passes++;
          options.onPass?.(r);
        } catch (e) {
          if (both.aborted) break;
          this.#log.warn({ err: (e as Error).message }, 'reaper pass failed');
          options.onError?.(e as Error);
        }
        this.#emit({ type: 'waiting', nextPassInMs: options.intervalMs });
        try {
          await sleep(this.#client.clock, options.intervalMs, both);
        } catch {
          break;
        }
      }
    } finally {
      this.#options.signal = saved;
    }
    return passes;
  }
}

/** What {@link reapServers} takes: a {@link Reaper}'s options and the time between its two passes. */
const REAP_SERVERS_SPEC: OptionsSpec<ReapServersOptions> = {
  ...REAPER_SPEC,
  passIntervalMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
};

/**
 * Find and delete the fleet's leaked servers: two passes `passIntervalMs` apart (see {@link Reaper}).
 * When the first pass finds no candidate it returns at once: a second pass could not delete anything.
 *
 * @example
 * ```ts
 * const r = await reapServers(nova, { prefix: 'adt-', olderThanMs: 7_200_000 });
 * console.log(`${r.deleted.length} deleted, ${r.failed.length} failed`);
 * ```
 * @throws {@link ValidationError} for bad options, an unknown name included (before any request); a listing's
 * {@link NovaApiError}; {@link AbortError} when `signal` aborts. Deletion failures are in `failed`.
 */
export async function reapServers(client: NovaClient, options: ReapServersOptions): Promise<ReapResult> {
  if (!options || typeof options !== 'object') throw new ValidationError('reapServers needs options');
  checkOptionsSpec('reapServers options', options, REAP_SERVERS_SPEC);
  const { passIntervalMs: _passIntervalMs, ...reaperOptions } = options;
  const reaper = new Reaper(client, reaperOptions);
  const passes: ReapPassResult[] = [await reaper.pass()];
  const first = passes[0]!;
  const needSecond = first.candidates.some((c) => !c.confirmed) || first.failed.length > 0;
  if (needSecond) {
    const waitMs = options.passIntervalMs ?? 60000;
    try {
      options.onEvent?.({ type: 'waiting', nextPassInMs: waitMs });
    } catch {
      // ignored, as every event
    }
    await sleep(client.clock, waitMs, options.signal).catch((e: unknown) => {
      throw new AbortError('reapServers was aborted between passes', { cause: e });
    });
    passes.push(await reaper.pass());
  }
  const last = passes[passes.length - 1]!;
  const deleted = passes.flatMap((p) => p.deleted);
  const deletedIds = new Set(deleted.map((d) => d.serverId));
  const failedById = new Map<string, ReapFailure>();
  for (const p of passes) for (const f of p.failed) failedById.set(f.serverId, f);
  return {
    dryRun: options.dryRun ?? false,
    deleted,
    skipped: last.skipped,
    failed: [...failedById.values()].filter((f) => !deletedIds.has(f.serverId)),
    candidates: last.candidates,
    unreachable: last.unreachable,
    passes,
    state: reaper.state,
  };
}
