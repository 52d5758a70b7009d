/**
 * `DeleteWatcher`: coalesced delete-waiting. One watcher per {@link NovaClient}; every pending
 * `waitForDelete` / `deleteServer(id, { wait: true })` of that client is served by it, so one
 * request per tick answers for all of them instead of one GET per server.
 *
 * Source: nodepool's delete state machine (`nodepool/driver/openstack/adapter.py`, a cached server
 * list with a 1 s TTL shared by every pending delete, absent or status `deleted` = gone; its provider
 * `rate`), and Nova's `changes-since` filter (Nova API reference, "List Servers Detailed": servers
 * changed since a time, deleted ones included with status `DELETED`; observed on a real Nova in
 * `../shared/realnova/REPORT.md`). See `../shared/reference/field-cases.md` A.3.
 *
 * How a tick works:
 * - **One server pending**: a plain `GET /servers/{id}`, at the wait's own schedule: exactly the
 *   single waiter's requests, never slowed by the rate cap.
 * - **Two or more servers pending**: one `GET /servers/detail?changes-since=T` (all pages), where T
 *   is the earliest pending server's first observation on Nova's clock (its `Date` header) minus
 *   {@link CHANGES_SINCE_MARGIN_MS}. A server in the listing is observed with that body (status
 *   `DELETED` ends the wait as deleted, `SOFT_DELETED`, ERROR and `task_state` as the single waiter
 *   classifies them). A server absent from the listing has not changed since T (Nova bumps
 *   `updated_at` on every state change, the last save before `destroy()` included): if it was
 *   observed before, at or after its anchor (>= T + margin), that observation still holds (no
 *   request); a server never observed yet is confirmed with its own GET (404 = deleted). When the
 *   `Date` header shows Nova's clock is behind the time sent, the listing is repeated once with the
 *   corrected time. (Not covered: a row deleted and archived by `nova-manage db
 *   archive_deleted_rows` between two ticks, which no listing would show.)
 * - Ticks are `watchIntervalMs` apart (default: half the smallest pending `intervalMs`, jittered),
 *   and never faster than the client's `maxRequestsPerSecond` allows.
 * - A failed listing is never taken as "gone": a transient failure (5xx 502/503/504, no response,
 *   request timeout, rate limit) or a 401 is delivered to every pending wait, which retries it with
 *   its own backoff and budget exactly as it would a failed GET. Any other failure (400, 403, 404,
 *   500, ...) means the listing cannot answer: every wait falls back to its own GET (at one tick per
 *   `intervalMs`, rate-capped) and the listing is tried again after {@link LISTING_RETRY_MS}.
 * - A wait that settles or aborts leaves at once; when none is left, the tick timer is cleared and
 *   an in-flight request is aborted.
 *
 * @module
 */
import { setMaxListeners } from 'node:events';
import pLimit from 'p-limit';
import type { NovaClient } from '../nova/client.js';
import { AbortError, AuthError, NovaNetworkError, ServerError } from '../errors/index.js';
import { isServerNotFound, isTransient } from '../transport/http.js';
import type { Server } from '../core/types.js';
import type { Observation } from './waitForDelete.js';
import { CHANGES_SINCE_MARGIN_MS, NovaClock, isoSeconds } from './novaClock.js';
import { TokenBucket } from '../transport/rateLimiter.js';

/** After a listing answers with a non-transient error, per-server GETs are used for this long, in ms. */
export const LISTING_RETRY_MS = 60000;
/** Concurrent confirming or fallback GETs of one tick. */
export const CONFIRM_CONCURRENCY = 8;
/** The listing is repeated when the time sent turns out to be this much later than needed, in ms. */
const RELIST_TOLERANCE_MS = 1000;

/** Options of one coalesced wait (taken from {@link WaitForDeleteOptions}). */
export interface CoalescedWaitOptions {
  /** The wait's poll interval, in ms. */
  intervalMs: number;
  /** The wait's jitter factor, in [0, 1). */
  jitter: number;
  /** The wait's per-request time limit, in ms; undefined = the client's `requestTimeoutMs`. */
  requestTimeoutMs: number | undefined;
  /** `performance.now()` time at which the wait times out. */
  deadlineAt: number;
}

/** What a coalesced wait plugs into `waitForDeleteWithHooks` (its `observe` and `sleep` hooks). */
export interface CoalescedWait {
  /** The next observation of the server: the freshest delivered one, or the next tick's. */
  observe(signal: AbortSignal, requestTimeoutMs: number): Promise<Observation>;
  /** Wait up to `delayMs` for the next tick that observes the server (ends early on any tick). */
  sleep(delayMs: number, signal: AbortSignal): Promise<void>;
}

/** Counters of one watcher (all since it was created). */
export interface DeleteWatcherStats {
  /** Ticks run. */
  ticks: number;
  /** `GET /servers/{id}` of ticks with a single server pending. */
  singleGets: number;
  /** `changes-since` listings (each may have several pages). */
  listings: number;
  /** Pages read by the listings. */
  listingPages: number;
  /** Listings repeated after learning Nova's clock. */
  relistings: number;
  /** GETs confirming a server absent from a listing. */
  confirmGets: number;
  /** GETs made because the listing could not answer. */
  fallbackGets: number;
  /** Listings that failed. */
  listingFailures: number;
  /** Observations answered from an earlier one because the server was unchanged (no request). */
  unchanged: number;
}

type Delivery = { obs: Observation; error?: undefined } | { error: unknown; obs?: undefined };

interface Entry {
  readonly serverId: string;
  /** Its pending waits (usually one). */
  readonly waits: Wait[];
  /** Local wall-clock time the first wait for it subscribed. */
  readonly subscribedWallMs: number;
  /** Nova time (a `Date` header) of its first observation by a listing tick; a lower bound of that observation's time. */
  anchorNovaMs: number | undefined;
  /** Last body seen. */
  last: Server | undefined;
}

interface Wait extends CoalescedWaitOptions {
  readonly serverId: string;
  /** Set when it subscribes (its first observe or sleep). */
  entry: Entry | undefined;
  /** `performance.now()` time it wants its next observation, or undefined while it has one to use. */
  wantsAt: number | undefined;
  /** An observation (or error) delivered and not yet taken. */
  fresh: Delivery | undefined;
  /** What a blocked call waits for: `'observe'` takes the delivery, `'sleep'` only ends. */
  blocked: 'observe' | 'sleep' | undefined;
  resolve: ((value: Observation | undefined) => void) | undefined;
  reject: ((e: unknown) => void) | undefined;
}

/** A multiset of numbers with its minimum (few distinct values: one per distinct option). */
class MinCounter {
  readonly #counts = new Map<number, number>();
  #min = Number.POSITIVE_INFINITY;
  add(v: number): void {
    this.#counts.set(v, (this.#counts.get(v) ?? 0) + 1);
    if (v < this.#min) this.#min = v;
  }
  remove(v: number): void {
    const n = (this.#counts.get(v) ?? 0) - 1;
    if (n > 0) {
      this.#counts.set(v, n);
      return;
    }
    this.#counts.delete(v);
    if (v === this.#min) this.#min = Math.min(...this.#counts.keys());
  }
  /** The smallest value, Infinity when empty. */
  get min(): number {
    return this.#min;
  }
}

/** Options of {@link DeleteWatcher}. */
export interface DeleteWatcherOptions {
  /** Cap on the watcher's requests per second while two or more servers are pending; `Infinity` = none. Default 10. */
  maxRequestsPerSecond?: number;
  /** Time between ticks while two or more servers are pending, in ms. Default: half the smallest pending `intervalMs`. */
  watchIntervalMs?: number | undefined;
  /** Margin subtracted from `changes-since` times, in ms. Default {@link CHANGES_SINCE_MARGIN_MS}. */
  marginMs?: number;
}

const now = (): number => performance.now();

function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}

/** The coalescing delete watcher of one client. Get it with {@link deleteWatcherOf}. */
export class DeleteWatcher {
  /** Counters, for tests and benchmarks. */
  readonly stats: DeleteWatcherStats = {
    ticks: 0,
    singleGets: 0,
    listings: 0,
    listingPages: 0,
    relistings: 0,
    confirmGets: 0,
    fallbackGets: 0,
    listingFailures: 0,
    unchanged: 0,
  };
  readonly #client: NovaClient;
  readonly #entries = new Map<string, Entry>();
  readonly #bucket: TokenBucket;
  readonly #clock = new NovaClock();
  readonly #watchIntervalMs: number | undefined;
  readonly #marginMs: number;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = 0;
  #tickAbort: AbortController | undefined;
  #lastTickAt = Number.NEGATIVE_INFINITY;
  #jitterDraw = 0;
  #listingOffUntil = Number.NEGATIVE_INFINITY;
  #waitCount = 0;
  readonly #intervals = new MinCounter();
  readonly #jitters = new MinCounter();

  constructor(client: NovaClient, options: DeleteWatcherOptions = {}) {
    this.#client = client;
    this.#bucket = new TokenBucket(options.maxRequestsPerSecond ?? 10);
    this.#watchIntervalMs = options.watchIntervalMs;
    this.#marginMs = options.marginMs ?? CHANGES_SINCE_MARGIN_MS;
  }

  /** Pending waits. */
  get pendingWaits(): number {
    return this.#waitCount;
  }

  /** Servers with at least one pending wait. */
  get pendingServers(): number {
    return this.#entries.size;
  }

  /** True when nothing is pending, no timer is set and no request is in flight. */
  get idle(): boolean {
    return this.#entries.size === 0 && this.#timer === undefined && this.#tickAbort === undefined;
  }

  /** Nova's clock offset (Nova minus local), in ms, once a listing has told it. */
  get novaClockOffsetMs(): number | undefined {
    return this.#clock.offsetMs;
  }

  /**
   * A wait for `serverId`, to plug into `waitForDeleteWithHooks` as its `observe` and `sleep`
   * hooks. It subscribes on its first call and leaves when the signal passed to it aborts (the
   * waiter aborts it when it settles).
   */
  watch(serverId: string, options: CoalescedWaitOptions): CoalescedWait {
    // A literal with every field (no spread): all waits share one hidden class.
    const w: Wait = {
      serverId,
      intervalMs: options.intervalMs,
      jitter: options.jitter,
      requestTimeoutMs: options.requestTimeoutMs,
      deadlineAt: options.deadlineAt,
      entry: undefined,
      wantsAt: undefined,
      fresh: undefined,
      blocked: undefined,
      resolve: undefined,
      reject: undefined,
    };
    return {
      observe: (signal) => this.#observe(w, signal),
      sleep: (delayMs, signal) => this.#sleep(w, delayMs, signal),
    };
  }

  /** Subscribe on the first call; false when the signal is already aborted. */
  #attach(w: Wait, signal: AbortSignal): boolean {
    if (w.entry) return true;
    if (signal.aborted) return false;
    let entry = this.#entries.get(w.serverId);
    if (entry) {
      entry.waits.push(w);
    } else {
      entry = { serverId: w.serverId, waits: [w], subscribedWallMs: Date.now(), anchorNovaMs: undefined, last: undefined };
      this.#entries.set(w.serverId, entry);
    }
    w.entry = entry;
    this.#waitCount++;
    this.#intervals.add(w.intervalMs);
    this.#jitters.add(w.jitter);
    // One listener for the wait's whole life: it leaves, and a blocked observe/sleep rejects.
    signal.addEventListener('abort', () => this.#abort(w, signal), { once: true });
    return true;
  }

  #abort(w: Wait, signal: AbortSignal): void {
    this.#leave(w);
    const reject = w.reject;
    w.resolve = w.reject = w.blocked = undefined;
    reject?.(abortError(signal));
  }

  #observe(w: Wait, signal: AbortSignal): Promise<Observation> {
    if (!this.#attach(w, signal)) return Promise.reject(abortError(signal));
    const d = w.fresh;
    if (d) {
      w.fresh = undefined;
      return d.obs ? Promise.resolve(d.obs) : Promise.reject(d.error);
    }
    w.wantsAt = now();
    this.#schedule();
    return new Promise<Observation | undefined>((resolve, reject) => {
      w.blocked = 'observe';
      w.resolve = resolve;
      w.reject = reject;
    }) as Promise<Observation>;
  }

  #sleep(w: Wait, delayMs: number, signal: AbortSignal): Promise<void> {
    if (!this.#attach(w, signal)) return Promise.reject(abortError(signal));
    if (w.fresh) return Promise.resolve();
    w.wantsAt = now() + delayMs;
    this.#schedule();
    return new Promise<Observation | undefined>((resolve, reject) => {
      w.blocked = 'sleep';
      w.resolve = resolve;
      w.reject = reject;
    }) as Promise<unknown> as Promise<void>;
  }

  #leave(w: Wait): void {
    const entry = w.entry;
    const i = entry ? entry.waits.indexOf(w) : -1;
    if (!entry || i < 0) return;
    entry.waits.splice(i, 1);
    this.#waitCount--;
    this.#intervals.remove(w.intervalMs);
    this.#jitters.remove(w.jitter);
    if (entry.waits.length === 0 && this.#entries.get(entry.serverId) === entry) this.#entries.delete(entry.serverId);
    if (this.#entries.size === 0) {
      this.#clearTimer();
      this.#tickAbort?.abort(new Error('no wait pending'));
      return;
    }
    this.#schedule();
  }

  #deliver(entry: Entry, d: Delivery): void {
    for (const w of entry.waits) {
      w.wantsAt = undefined;
      const { blocked, resolve, reject } = w;
      w.resolve = w.reject = w.blocked = undefined;
      if (blocked === 'observe') {
        w.fresh = undefined;
        if (d.obs) resolve!(d.obs);
        else reject!(d.error);
      } else {
        w.fresh = d; // taken by the next observe
        resolve?.(undefined);
      }
    }
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Time between fleet ticks: `watchIntervalMs`, or half the smallest pending interval (the whole interval while listing is off), jittered. */
  #fleetGapMs(): number {
    const interval = this.#intervals.min;
    const jitter = Math.min(1, this.#jitters.min);
    const listing = now() >= this.#listingOffUntil;
    const base = listing ? (this.#watchIntervalMs ?? interval / 2) : interval;
    return base * (1 + this.#jitterDraw * jitter);
  }

  #schedule(): void {
    if (this.#tickAbort) return; // the running tick reschedules when it ends
    if (this.#entries.size === 0) {
      this.#clearTimer();
      return;
    }
    const t = now();
    let at: number;
    if (this.#entries.size === 1) {
      at = Number.POSITIVE_INFINITY;
      // A wait that wants its next look at or after its deadline gets none: it times out (no doomed request).
      for (const e of this.#entries.values()) for (const w of e.waits) if (w.wantsAt !== undefined && w.wantsAt < w.deadlineAt && t < w.deadlineAt) at = Math.min(at, w.wantsAt);
      if (at === Number.POSITIVE_INFINITY) {
        this.#clearTimer();
        return;
      }
    } else {
      at = Math.max(this.#lastTickAt + this.#fleetGapMs(), t + this.#bucket.delayFor(1));
    }
    if (this.#timer !== undefined && Math.abs(this.#timerAt - at) < 0.5) return;
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#tick();
    }, Math.max(0, at - t));
  }

  async #tick(): Promise<void> {
    const entries = [...this.#entries.values()];
    if (entries.length === 0) return;
    const ac = new AbortController();
    setMaxListeners(0, ac.signal); // every request of the tick (pages, confirming GETs) listens to it
    this.#tickAbort = ac;
    this.#lastTickAt = now();
    this.#jitterDraw = Math.random() * 2 - 1;
    this.stats.ticks++;
    try {
      if (entries.length === 1) {
        this.stats.singleGets++;
        const entry = entries[0]!;
        const d = await this.#get(entry, ac.signal);
        if (d) this.#deliver(entry, d);
      } else {
        await this.#fleetTick(entries, ac.signal);
      }
    } catch (e) {
      // Unexpected (a bug, not a Nova answer): every wait sees it rather than hanging.
      if (!ac.signal.aborted) for (const entry of entries) this.#deliver(entry, { error: e });
    } finally {
      this.#tickAbort = undefined;
      this.#schedule();
    }
  }

  /**
   * The request time limit for an entry: its waits' smallest, capped by the time left to their
   * deadlines; `capped` when the deadline is what limits it.
   */
  #requestTimeoutFor(entry: Entry): { ms: number; capped: boolean } {
    const t = now();
    let configured = Number.POSITIVE_INFINITY;
    let left = Number.POSITIVE_INFINITY;
    for (const w of entry.waits) {
      configured = Math.min(configured, w.requestTimeoutMs ?? this.#client.requestTimeoutMs);
      left = Math.min(left, w.deadlineAt - t);
    }
    if (!Number.isFinite(configured)) configured = this.#client.requestTimeoutMs;
    return { ms: Math.max(1, Math.min(configured, left)), capped: left < configured };
  }

  async #get(entry: Entry, signal: AbortSignal): Promise<Delivery | undefined> {
    const limit = this.#requestTimeoutFor(entry);
    try {
      const server = await this.#client.getServer(entry.serverId, { signal, requestTimeoutMs: limit.ms, retry: false });
      return { obs: { gone: false, server } };
    } catch (e) {
      if (signal.aborted) return undefined;
      if (isServerNotFound(e, entry.serverId)) return { obs: { gone: true } };
      // Cut off by the wait's own deadline: nothing to deliver, the wait is timing out.
      if (limit.capped && e instanceof NovaNetworkError && e.timedOut) return undefined;
      return { error: e };
    }
  }

  /** `changes-since` time for these entries: the earliest anchor (or estimated subscription time on Nova's clock) minus the margin. */
  #sinceMs(entries: readonly Entry[]): number {
    let min = Number.POSITIVE_INFINITY;
    for (const e of entries) min = Math.min(min, e.anchorNovaMs ?? this.#clock.toNova(e.subscribedWallMs));
    return min - this.#marginMs;
  }

  async #fleetTick(entries: Entry[], signal: AbortSignal): Promise<void> {
    if (now() >= this.#listingOffUntil) {
      const listed = await this.#list(entries, signal);
      if (listed === 'done') return;
      if (listed !== 'unusable') {
        await this.#answerFromListing(entries, listed.servers, listed.novaDateMs, signal);
        return;
      }
    }
    this.stats.fallbackGets += entries.length;
    await this.#getEach(entries, signal, undefined);
  }

  async #list(entries: Entry[], signal: AbortSignal): Promise<'done' | 'unusable' | { servers: Server[]; novaDateMs: number | undefined }> {
    let requestTimeoutMs = Number.POSITIVE_INFINITY;
    for (const e of entries) for (const w of e.waits) requestTimeoutMs = Math.min(requestTimeoutMs, w.requestTimeoutMs ?? this.#client.requestTimeoutMs);
    if (!Number.isFinite(requestTimeoutMs)) requestTimeoutMs = this.#client.requestTimeoutMs;
    let since = this.#sinceMs(entries);
    for (let attempt = 0; ; attempt++) {
      this.#bucket.take(1);
      this.stats.listings++;
      if (attempt > 0) this.stats.relistings++;
      let res: Awaited<ReturnType<NovaClient['listServersWithMeta']>>;
      try {
        res = await this.#client.listServersWithMeta({ 'changes-since': isoSeconds(since) }, { signal, requestTimeoutMs, retry: false });
      } catch (e) {
        if (signal.aborted) return 'done';
        this.stats.listingFailures++;
        // A listing's 500 keeps falling back as before 500 became transient (the engine rewrite replaces this).
        if ((isTransient(e) && !(e instanceof ServerError && e.status === 500)) || e instanceof AuthError) {
          for (const entry of entries) this.#deliver(entry, { error: e });
          return 'done';
        }
        this.#listingOffUntil = now() + LISTING_RETRY_MS;
        this.#client.logger.warn(
          { err: (e as Error).message, status: (e as { status?: number }).status, retryAfterMs: LISTING_RETRY_MS },
          'changes-since listing cannot answer: pending deletes fall back to per-server GETs',
        );
        return 'unusable';
      }
      this.#bucket.take(res.pages - 1);
      this.stats.listingPages += res.pages;
      this.#clock.learn(res.serverDateMs, Date.now());
      const needed = this.#sinceMs(entries);
      if (attempt === 0 && since - needed > RELIST_TOLERANCE_MS) {
        since = needed; // Nova's clock is behind ours: ask again with the time on its clock
        continue;
      }
      return { servers: res.servers, novaDateMs: res.serverDateMs };
    }
  }

  async #answerFromListing(entries: Entry[], servers: Server[], novaDateMs: number | undefined, signal: AbortSignal): Promise<void> {
    const byId = new Map<string, Server>();
    for (const s of servers) if (s && typeof s.id === 'string') byId.set(s.id, s);
    const confirm: Entry[] = [];
    for (const entry of entries) {
      if (entry.waits.length === 0) continue;
      const server = byId.get(entry.serverId);
      if (server) {
        entry.last = server;
        if (novaDateMs !== undefined) entry.anchorNovaMs ??= novaDateMs;
        this.#deliver(entry, { obs: { gone: false, server } });
      } else if (entry.anchorNovaMs !== undefined && entry.last) {
        // Absent: not updated since `since` <= anchor - margin, and it was observed at or after its anchor.
        this.stats.unchanged++;
        this.#deliver(entry, { obs: { gone: false, server: entry.last } });
      } else {
        confirm.push(entry);
      }
    }
    this.stats.confirmGets += confirm.length;
    await this.#getEach(confirm, signal, novaDateMs);
  }

  /** GET each entry (rate-capped, bounded concurrency) and deliver; `anchorNovaMs` anchors entries first seen this way. */
  async #getEach(entries: Entry[], signal: AbortSignal, anchorNovaMs: number | undefined): Promise<void> {
    if (entries.length === 0) return;
    const limit = pLimit(CONFIRM_CONCURRENCY);
    await Promise.all(
      entries.map((entry) =>
        limit(async () => {
          if (signal.aborted || entry.waits.length === 0) return;
          try {
            await this.#bucket.acquire(signal);
          } catch {
            return; // aborted
          }
          const d = await this.#get(entry, signal);
          if (!d) return;
          if (d.obs && !d.obs.gone) {
            entry.last = d.obs.server;
            if (anchorNovaMs !== undefined) entry.anchorNovaMs ??= anchorNovaMs;
          }
          this.#deliver(entry, d);
        }),
      ),
    );
  }
}

const watchers = new WeakMap<NovaClient, DeleteWatcher>();

/**
 * The delete watcher of `client` (created on first use with the client's `maxRequestsPerSecond`
 * and `watchIntervalMs`). It holds no timer while nothing is pending.
 */
export function deleteWatcherOf(client: NovaClient): DeleteWatcher {
  let w = watchers.get(client);
  if (!w) {
    w = new DeleteWatcher(client, { maxRequestsPerSecond: client.maxRequestsPerSecond, watchIntervalMs: client.watchIntervalMs });
    watchers.set(client, w);
  }
  return w;
}
