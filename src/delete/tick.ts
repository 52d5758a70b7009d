/**
 * One tick of the delete engine: which requests to send for the pending servers, and what each
 * answer means for them. A {@link Tick} takes plain data ({@link TickPlan}: the servers, what is due,
 * the clock readings of its start) and sends its requests and answers through the engine's side
 * ({@link TickEngine}); the engine owns the waits and their state.
 *
 * @module
 */
import { inOperation } from '../core/telemetry.js';
import { timeoutSignal } from '../core/clock.js';
import { statusOf } from '../core/counting.js';
import { AbortError, NovaApiError } from '../errors/index.js';
import { isTransient } from '../transport/http.js';
import { absenceTriggers, judgeNotFound, live } from './evidence.js';
import { CHANGES_SINCE_MARGIN_MS, listChangedSince, listIds, listWhole, lookById, type Observation } from './observe.js';
import type { DeleteEngineStats, ServerApi } from './types.js';
import { lookTimeoutMs, type Entry } from './watch.js';

/**
 * The engine's side of its ticks: where their requests go out and their answers land. One object
 * per engine (`DeleteEngine` builds it once); every effect of a tick on the waits goes through it.
 */
export interface TickEngine {
  /** The client calls the requests are made of (and the clock). */
  readonly api: ServerApi;
  /** The engine's counters: each request of a tick is counted there. */
  readonly stats: DeleteEngineStats;
  /** Send one GET under the engine's rate limit (skipped when `signal` aborted meanwhile). */
  look<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T>;
  /** Send one listing: after any other listing of the engine (one in flight at a time), then as {@link look}. */
  listing<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T>;
  /**
   * The ids a brief listing shows now (one listing a tick, shared), to check a 404 that contradicts
   * what the engine knows; rejects when the listing fails.
   */
  listedNow(signal: AbortSignal): Promise<ReadonlySet<string>>;
  /**
   * Nova is in trouble now (the pace is widened by slow or failing answers, or shared listings are
   * backed off after failures): several GETs go out only after one of them was answered.
   */
  troubled(): boolean;
  /** A shared listing answered (with its `Date`) or failed; `intervalMs`: the tick's smallest interval. */
  listed(ok: boolean, intervalMs: number, serverDateMs?: number | undefined): void;
  /** A server whose DELETE date was known was missing from a `changes-since` listing. */
  missing(): void;
  /** Nova refused the brief listing's microversion (406): listed with the client's own from now on. */
  presenceUnsupported(): void;
  /**
   * An answer for `entry`'s server; `sentAt` (clock time) when it is the body of its own GET, sent
   * then (what a fleet consumer reconciles the watcher's proofs with: `fleetConsumer.ts`).
   */
  deliver(entry: Entry, obs: Observation, sentAt?: number): void;
  /** A listing still has the server: a look that shows it there (its status as last seen). */
  present(entry: Entry): void;
  /** Its own GET answered 404, yet a successful listing still shows it (an orphaned mapping). */
  orphan(entry: Entry): void;
  /** The check of a 404 failed (the listing did): the 404 is not confirmed; the server is looked at again next time. */
  checkFailed(entry: Entry, error: unknown): void;
  /** A look at the server failed. */
  fail(entry: Entry, error: unknown): void;
  /**
   * Its GET was not sent this tick because the probe's failed with `error` (see {@link Tick}): the
   * waits on it are told (their failures name it), without a failed look of their own counted.
   */
  skipped(entry: Entry, error: unknown): void;
}

/** What one tick is about: plain data, taken when it starts (durations in ms, times on the engine's clock). */
export interface TickPlan {
  /** Aborted when no wait is left at all. */
  readonly signal: AbortSignal;
  /** Shared listings (two or more pending, `coalesce` on) or one GET a server. */
  readonly shared: boolean;
  /** The servers it answers for: every pending one the fleet does not answer for (shared), or the due ones. */
  readonly entries: readonly Entry[];
  /** The entries whose waits want a look now (the others are answered only by shared listings). */
  readonly due: ReadonlySet<Entry>;
  /** Clock time the tick started. */
  readonly now: number;
  /** The latest pending deadline (clock time): no listing runs past it. */
  readonly deadlineAt: number;
  /** The smallest interval of the pending waits now (shorter where a 404 is near: `lookPlan.ts`). */
  readonly intervalMs: number;
  /**
   * The smallest of the pending waits' own intervals (`intervalMs` of their specs): a server under
   * way is listed with its status again after {@link STATUS_REFRESH_INTERVALS} of them.
   */
  readonly ownIntervalMs: number;
  /** Nova's clock minus the local wall clock, when a `Date` header has told it. */
  readonly offsetMs: number | undefined;
  /** Extra window taken off `changes-since` after servers were missing from a listing. */
  readonly widenMs: number;
  /**
   * The microversion of the brief listing (at least 2.69: servers of an unreachable cell are listed,
   * not left out, so they trigger no GET and a 404's check sees them), or undefined for the client's
   * own. A 406 to the higher microversion turns it off.
   */
  readonly presenceMicroversion: string | undefined;
}

/** A server under way is listed with its status again after this many of the waits' own intervals (an ERROR shows only in its status). */
const STATUS_REFRESH_INTERVALS = 3;

/** When Nova's clock is not known yet, `changes-since` reaches this far back, in ms (clocks minutes apart still meet). */
const UNKNOWN_OFFSET_WINDOW_MS = 600_000;

/** The time limit of a look at `e`: its waits' `requestTimeoutMs` (or the client's), capped by their latest deadline. */
const requestTimeoutMs = (api: ServerApi, e: Entry): number => lookTimeoutMs(e, api.requestTimeoutMs, api.clock.now());

/** The clock time `e` is due for its next look (the earliest of its waits'): the most overdue is probed first. */
const dueAt = (e: Entry): number => Math.min(...e.watches.map((w) => w.nextAt));

/** One tick of the delete engine (see the module): {@link Tick.run} it once. */
export class Tick {
  readonly #engine: TickEngine;
  readonly #plan: TickPlan;

  constructor(engine: TickEngine, plan: TickPlan) {
    this.#engine = engine;
    this.#plan = plan;
  }

  /** Run the tick. Never rejects: every failure is delivered to the waits it concerns. */
  async run(): Promise<void> {
    const plan = this.#plan;
    try {
      if (!plan.shared) {
        await this.#lookEach(plan.entries);
        return;
      }
      // Status for the servers not yet under way (and now and then for the others: an ERROR shows only so).
      // A listing goes out only when a wait that is due now needs it; the others ride along.
      const statusRefreshMs = STATUS_REFRESH_INTERVALS * plan.ownIntervalMs;
      const pending = plan.entries.filter(live);
      const needStatus = pending.filter((e) => !e.underway || plan.now - e.statusAt >= statusRefreshMs);
      const statusWanted = needStatus.some((e) => plan.due.has(e));
      // A server under way wants a look when due, or near its 404 (`DELETED`) at every round; so does
      // one whose DELETE this engine saw accepted, before any look showed it deleting (its first
      // status would show it `DELETED` or deleting, and a presence listing would follow at once).
      const wantsLook = (e: Entry): boolean => (e.underway || e.deletingSince !== undefined) && (plan.due.has(e) || e.seenDeleted);
      const presenceWanted = pending.some(wantsLook);
      // Status and presence wanted at once: one listing of the whole project answers both, where a
      // `changes-since` and a brief listing took two requests. Status alone: the `changes-since`
      // listing (a small answer in a project with many servers).
      if (statusWanted && presenceWanted) {
        await this.#lookEach(await this.#wholeListing(pending));
        return;
      }
      const { missing, shown } = await this.#statusListing(statusWanted ? needStatus : []);
      // Presence for the servers under way, except those the status listing has just shown present (a
      // status other than `DELETED`: a row Nova may have destroyed shows so). The servers the status
      // listing could not answer get their GETs meanwhile, not after a slow listing.
      const answered = new Set([...missing, ...shown]);
      const underway = plan.entries.filter((e) => live(e) && e.underway && !answered.has(e));
      const presence = this.#presenceListing(underway.some(wantsLook) ? underway : []).then((look) => this.#lookEach(look));
      await Promise.all([this.#lookEach(missing), presence]);
    } catch (error) {
      // Not expected (each step catches its own); a tick must never reject.
      for (const e of plan.entries) if (live(e)) this.#engine.fail(e, error);
    }
  }

  /** Deliver Nova's 404 for `e`'s own GET as the rules of evidence judge it (`judgeNotFound` in `evidence.ts`). */
  async #deliverGone(e: Entry): Promise<void> {
    const engine = this.#engine;
    const judged = await judgeNotFound(e, this.#plan.shared, () => engine.listedNow(this.#plan.signal));
    if (!live(e)) return;
    if (judged.verdict === 'gone') engine.deliver(e, { gone: true, evidence: 'not-found' });
    else if (judged.verdict === 'orphan') engine.orphan(e);
    else engine.checkFailed(e, judged.error);
  }

  /**
   * Run a listing (every page of it) within the request time limit and the time left: a listing whose
   * pages never end (a next link with a new marker each time) or come slowly is a failed listing, so
   * the servers get their own GETs, instead of a tick that never ends. A slow listing is still an
   * answer: only an error or the time limit fails it.
   */
  async #bounded<T>(list: (signal: AbortSignal, requestTimeoutMs: number) => Promise<T>): Promise<T> {
    const { api } = this.#engine;
    const limitMs = Math.min(api.requestTimeoutMs, Math.max(1, this.#plan.deadlineAt - api.clock.now()));
    const limit = timeoutSignal(api.clock, limitMs, () => new Error(`listing took longer than ${limitMs} ms`));
    try {
      return await list(AbortSignal.any([this.#plan.signal, limit.signal]), limitMs);
    } finally {
      limit.dispose();
    }
  }

  /**
   * Look at `entries` one by one (rate-limited; each GET stops when its server's last wait ends). While
   * Nova is in trouble ({@link TickEngine.troubled}), the most overdue server is looked at first, alone: when its GET
   * fails too (5xx, 429, no answer), the others are not sent this tick (they stay due, and the next
   * tick probes the next most overdue), so a failing Nova gets one GET a tick, not one per server
   * waited on (the GETs that stood in for a failed listing multiplied the requests by the number of
   * waits); their waits are told of the probe's failure ({@link TickEngine.skipped}). When the probe is answered (a
   * listing that fails while GETs work), the others go out.
   */
  async #lookEach(entries: Iterable<Entry>): Promise<void> {
    let rest = [...entries].filter(live);
    if (rest.length >= 2 && this.#engine.troubled()) {
      rest.sort((a, b) => dueAt(a) - dueAt(b));
      const probe = rest.shift()!;
      const failed = await this.#lookAt(probe);
      if (failed !== undefined) {
        for (const e of rest) if (live(e)) this.#engine.skipped(e, failed);
        return;
      }
      rest = rest.filter(live);
    }
    await Promise.all(rest.map((e) => this.#lookAt(e)));
  }

  /** One GET of `e`'s server, its answer delivered; the error when it failed transiently (Nova in trouble), else undefined. */
  async #lookAt(e: Entry): Promise<unknown> {
    if (!live(e)) return undefined;
    const engine = this.#engine;
    const signal = e.controller.signal;
    try {
      let sentAt = Number.NaN;
      const obs = await engine.look(() => {
        engine.stats.gets++;
        sentAt = engine.api.clock.now();
        return inOperation(e.operation, () => lookById(engine.api, e.serverId, signal, requestTimeoutMs(engine.api, e)));
      }, signal);
      if (!live(e)) return undefined;
      if (obs.gone) await this.#deliverGone(e);
      else engine.deliver(e, obs, sentAt);
      return undefined;
    } catch (error) {
      if (live(e) && !(error instanceof AbortError)) engine.fail(e, error);
      return isTransient(error) ? error : undefined;
    }
  }

  /**
   * The `changes-since` listing for the servers not yet under way (and those whose status is due
   * again): delivers the bodies it shows; returns the servers it could not answer (`missing`, the due
   * ones) and those it showed present (`shown`: a status other than `DELETED`).
   */
  async #statusListing(wanted: Entry[]): Promise<{ missing: Entry[]; shown: Entry[] }> {
    if (wanted.length === 0) return { missing: [], shown: [] };
    const engine = this.#engine;
    const plan = this.#plan;
    const since = Math.min(
      ...wanted.map((e) => e.anchorNovaMs ?? (plan.offsetMs === undefined ? e.createdWallMs - UNKNOWN_OFFSET_WINDOW_MS : e.createdWallMs + plan.offsetMs)),
    );
    let listed: Awaited<ReturnType<typeof listChangedSince>>;
    try {
      listed = await engine.listing(() => {
        engine.stats.listings++;
        return this.#bounded((signal, limitMs) => listChangedSince(engine.api, since - CHANGES_SINCE_MARGIN_MS - plan.widenMs, signal, limitMs));
      }, plan.signal);
    } catch (error) {
      if (error instanceof AbortError && plan.signal.aborted) return { missing: [], shown: [] };
      engine.stats.listingFailures++;
      engine.listed(false, plan.intervalMs);
      return { missing: wanted.filter((e) => plan.due.has(e)), shown: [] };
    }
    engine.listed(true, plan.intervalMs, listed.serverDateMs);
    const missing: Entry[] = [];
    const shown: Entry[] = [];
    let missingAnchored = false;
    for (const e of wanted) {
      const server = listed.byId.get(e.serverId);
      e.lastListed = server !== undefined && statusOf(server) !== 'DELETED';
      if (server && live(e)) {
        engine.deliver(e, { gone: false, server });
        if (e.lastListed) shown.push(e);
        // An absent server is only "not seen": its own GET answers for it.
      } else if (live(e)) {
        missing.push(e);
        if (e.anchorNovaMs !== undefined) missingAnchored = true;
      }
    }
    if (missingAnchored) engine.missing();
    engine.stats.fallbackGets += missing.filter((e) => plan.due.has(e)).length;
    return { missing: missing.filter((e) => plan.due.has(e)), shown };
  }

  /**
   * The whole project's detail listing, for a tick that wants status and presence at once: a server
   * it shows is delivered with its body (present, `DELETED` included: a row Nova has destroyed is not
   * listed); one it does not show is only "not seen" (rules of evidence, `evidence.ts`): its own GET
   * when due, or now once per server under way ({@link absenceTriggers}), whose 404 is the proof.
   * When the listing fails, the due ones are looked at.
   */
  async #wholeListing(pending: Entry[]): Promise<Entry[]> {
    const engine = this.#engine;
    const plan = this.#plan;
    let listed: Awaited<ReturnType<typeof listWhole>>;
    try {
      listed = await engine.listing(() => {
        engine.stats.listings++;
        return this.#bounded((signal, limitMs) => listWhole(engine.api, signal, limitMs));
      }, plan.signal);
    } catch (error) {
      if (error instanceof AbortError && plan.signal.aborted) return [];
      engine.stats.listingFailures++;
      engine.listed(false, plan.intervalMs);
      return pending.filter((e) => live(e) && plan.due.has(e));
    }
    engine.listed(true, plan.intervalMs, listed.serverDateMs);
    const look: Entry[] = [];
    for (const e of pending) {
      if (!live(e)) continue;
      const server = listed.byId.get(e.serverId);
      e.lastListed = server !== undefined;
      if (server) {
        engine.deliver(e, { gone: false, server });
      } else if (!e.underway) {
        if (plan.due.has(e)) {
          engine.stats.fallbackGets++;
          look.push(e);
        }
      } else if (this.#looksAtAbsent(e)) {
        look.push(e);
      }
    }
    return look;
  }

  /**
   * A server under way that a listing of present servers did not show: it gets its own GET when due,
   * or now, once per server ({@link absenceTriggers}); the 404 of that GET is the proof, the absence
   * none.
   */
  #looksAtAbsent(e: Entry): boolean {
    if (this.#plan.due.has(e)) return true;
    if (!absenceTriggers(e)) return false;
    e.absenceLooked = true;
    this.#engine.stats.absenceGets++;
    return true;
  }

  /**
   * The brief listing for the servers under way: a server it shows is present (a look at it, its
   * status as last seen). A server it does not show is NOT taken for gone, whatever the listing
   * (rules of evidence, `evidence.ts`): a proxy, a cache or a page size in front of Nova can drop some
   * servers and keep others. Its absence triggers its own GET now, once per server
   * ({@link absenceTriggers}; sent as every look is, a probe first while Nova is in trouble), whose 404 is the proof; after that it gets
   * its GETs when due. When the listing fails, the due ones are looked at.
   */
  async #presenceListing(underway: Entry[]): Promise<Entry[]> {
    const engine = this.#engine;
    const plan = this.#plan;
    if (underway.length <= 1) return underway.filter((e) => e.seenDeleted || plan.due.has(e));
    try {
      const { ids } = await engine.listing(() => {
        engine.stats.briefListings++;
        return this.#bounded((signal, limitMs) => listIds(engine.api, signal, limitMs, plan.presenceMicroversion));
      }, plan.signal);
      engine.listed(true, plan.intervalMs);
      const look: Entry[] = [];
      for (const e of underway) {
        e.lastListed = ids.has(e.serverId);
        if (e.lastListed) engine.present(e);
        else if (this.#looksAtAbsent(e)) look.push(e);
      }
      return look;
    } catch (error) {
      if (error instanceof AbortError && plan.signal.aborted) return [];
      engine.stats.listingFailures++;
      if (error instanceof NovaApiError && error.status === 406 && plan.presenceMicroversion !== undefined) engine.presenceUnsupported();
      else engine.listed(false, plan.intervalMs);
      return underway.filter((e) => plan.due.has(e));
    }
  }
}
