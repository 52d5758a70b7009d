/**
 * One tick of the delete engine: which requests to send for the pending servers, and what each
 * answer means for them. Plain data in, calls to `deliver`/`fail` out; the engine owns the state.
 *
 * @module
 */
import { inOperation } from '../core/telemetry.js';
import { timeoutSignal } from '../core/clock.js';
import { statusOf } from '../core/counting.js';
import { AbortError, NovaApiError } from '../errors/index.js';
import { isTransient } from '../transport/http.js';
import { CHANGES_SINCE_MARGIN_MS, listChangedSince, listIds, lookById, type Observation } from './observe.js';
import type { DeleteEngineStats, ServerApi, TickEntry } from './types.js';

export type { TickEntry } from './types.js';
import { absenceTriggers, judgeNotFound, live } from './evidence.js';

export { needsCheck } from './evidence.js';

/** Everything one tick needs (durations in ms). */
export interface TickContext {
  api: ServerApi;
  /** Send one GET under the engine's rate limit (skipped when `signal` aborted meanwhile). */
  send: <T>(fn: () => Promise<T>, signal: AbortSignal) => Promise<T>;
  /** Send one listing: after any other listing of the engine (one in flight at a time), then as `send`. */
  sendListing: <T>(fn: () => Promise<T>, signal: AbortSignal) => Promise<T>;
  stats: DeleteEngineStats;
  /** Aborted when no wait is left at all. */
  signal: AbortSignal;
  /** Shared listings (two or more pending, `coalesce` on) or one GET a server. */
  fleet: boolean;
  entries: TickEntry[];
  /** The entries whose waits want a look now (the others are answered only by shared listings). */
  due: ReadonlySet<TickEntry>;
  /** Nova's clock minus the local wall clock, when a `Date` header has told it. */
  offsetMs: number | undefined;
  /** Extra window taken off `changes-since` after servers were missing from a listing. */
  widenMs: number;
  /** Time limit of a listing, all its pages together. */
  listingTimeoutMs: number;
  /** Clock time now, and how old a status may get before a server under way is listed again, in ms. */
  now: number;
  statusRefreshMs: number;
  /** Time until the latest pending deadline. */
  timeLeftMs: () => number;
  requestTimeoutMs: (entry: TickEntry) => number;
  /** A shared listing answered (with its `Date`) or failed. */
  onListing: (ok: boolean, serverDateMs?: number | undefined) => void;
  /** A server whose DELETE date was known was missing from a `changes-since` listing. */
  onMissing: () => void;
  /**
   * An answer for `entry`'s server; `sentAt` (clock time) when it is the body of its own GET, sent
   * then (what a fleet consumer reconciles the watcher's proofs with: `fleetConsumer.ts`).
   */
  deliver: (entry: TickEntry, obs: Observation, sentAt?: number) => void;
  /**
   * The microversion of the brief listing (at least 2.69: servers of an unreachable cell are listed,
   * not left out, so they trigger no GET and a 404's check sees them), or undefined for the client's
   * own. A 406 to the higher microversion turns it off.
   */
  presenceMicroversion: string | undefined;
  onPresenceUnsupported: () => void;
  /** A listing still has the server: a look that shows it there (its status as last seen). */
  present: (entry: TickEntry) => void;
  /**
   * The ids a brief listing shows now (one listing a tick, shared), to check a 404 that contradicts
   * what the engine knows; rejects when the listing fails.
   */
  listedNow: () => Promise<ReadonlySet<string>>;
  /** Its own GET answered 404, yet a successful listing still shows it (an orphaned mapping). */
  orphan: (entry: TickEntry) => void;
  /** The check of a 404 failed (the listing did): the 404 is not confirmed; the server is looked at again next time. */
  checkFailed: (entry: TickEntry, error: unknown) => void;
  fail: (entry: TickEntry, error: unknown) => void;
  /**
   * Nova is in trouble now (the pace is widened by slow or failing answers, or shared listings are
   * backed off after failures): several GETs go out only after one of them was answered.
   */
  troubled: () => boolean;
  /** The clock time a server is due for its next look (the earliest of its waits'): the most overdue is probed first. */
  dueAt: (entry: TickEntry) => number;
  /**
   * Its GET was not sent this tick because the probe's failed with `error` (see `lookEach`): the
   * waits on it are told (their failures name it), without a failed look of their own counted.
   */
  skipped: (entry: TickEntry, error: unknown) => void;
}

/** When Nova's clock is not known yet, `changes-since` reaches this far back, in ms (clocks minutes apart still meet). */
const UNKNOWN_OFFSET_WINDOW_MS = 600_000;

/** Deliver Nova's 404 for `e`'s own GET as the rules of evidence judge it (`judgeNotFound` in `evidence.ts`). */
async function deliverGone(ctx: TickContext, e: TickEntry): Promise<void> {
  const judged = await judgeNotFound(e, ctx.fleet, ctx.listedNow);
  if (!live(e)) return;
  if (judged.verdict === 'gone') ctx.deliver(e, { gone: true, evidence: 'not-found' });
  else if (judged.verdict === 'orphan') ctx.orphan(e);
  else ctx.checkFailed(e, judged.error);
}

/**
 * Run a listing (every page of it) within `ctx.listingTimeoutMs` and the time left: a listing whose
 * pages never end (a next link with a new marker each time) or come slowly is a failed listing, so
 * the servers get their own GETs, instead of a tick that never ends.
 */
async function bounded<T>(ctx: TickContext, list: (signal: AbortSignal, requestTimeoutMs: number) => Promise<T>): Promise<T> {
  const limitMs = Math.min(ctx.listingTimeoutMs, ctx.timeLeftMs());
  const limit = timeoutSignal(ctx.api.clock, limitMs, () => new Error(`listing took longer than ${limitMs} ms`));
  try {
    return await list(AbortSignal.any([ctx.signal, limit.signal]), limitMs);
  } finally {
    limit.dispose();
  }
}

/**
 * Look at `entries` one by one (rate-limited; each GET stops when its server's last wait ends). While
 * Nova is in trouble (`ctx.troubled`), the most overdue server is looked at first, alone: when its GET
 * fails too (5xx, 429, no answer), the others are not sent this tick (they stay due, and the next
 * tick probes the next most overdue), so a failing Nova gets one GET a tick, not one per server
 * waited on (the GETs that stood in for a failed listing multiplied the requests by the number of
 * waits); their waits are told of the probe's failure (`ctx.skipped`). When the probe is answered (a
 * listing that fails while GETs work), the others go out.
 */
async function lookEach(ctx: TickContext, entries: Iterable<TickEntry>): Promise<void> {
  let rest = [...entries].filter(live);
  if (rest.length >= 2 && ctx.troubled()) {
    rest.sort((a, b) => ctx.dueAt(a) - ctx.dueAt(b));
    const probe = rest.shift()!;
    const failed = await lookAt(ctx, probe);
    if (failed !== undefined) {
      for (const e of rest) if (live(e)) ctx.skipped(e, failed);
      return;
    }
    rest = rest.filter(live);
  }
  await Promise.all(rest.map((e) => lookAt(ctx, e)));
}

/** One GET of `e`'s server, its answer delivered; the error when it failed transiently (Nova in trouble), else undefined. */
async function lookAt(ctx: TickContext, e: TickEntry): Promise<unknown> {
  if (!live(e)) return undefined;
  const signal = e.controller.signal;
  try {
    let sentAt = Number.NaN;
    const obs = await ctx.send(() => {
      ctx.stats.gets++;
      sentAt = ctx.api.clock.now();
      return inOperation(e.operation, () => lookById(ctx.api, e.serverId, signal, ctx.requestTimeoutMs(e)));
    }, signal);
    if (!live(e)) return undefined;
    if (obs.gone) await deliverGone(ctx, e);
    else ctx.deliver(e, obs, sentAt);
    return undefined;
  } catch (error) {
    if (live(e) && !(error instanceof AbortError)) ctx.fail(e, error);
    return isTransient(error) ? error : undefined;
  }
}

/**
 * The `changes-since` listing for the servers not yet seen `DELETED`: delivers the bodies it shows
 * and returns the servers it could not answer.
 */
async function statusListing(ctx: TickContext, wanted: TickEntry[]): Promise<TickEntry[]> {
  if (wanted.length === 0) return [];
  const since = Math.min(
    ...wanted.map((e) => e.anchorNovaMs ?? (ctx.offsetMs === undefined ? e.createdWallMs - UNKNOWN_OFFSET_WINDOW_MS : e.createdWallMs + ctx.offsetMs)),
  );
  let listed: Awaited<ReturnType<typeof listChangedSince>>;
  try {
    listed = await ctx.sendListing(() => {
      ctx.stats.listings++;
      return bounded(ctx, (signal, limitMs) => listChangedSince(ctx.api, since - CHANGES_SINCE_MARGIN_MS - ctx.widenMs, signal, limitMs));
    }, ctx.signal);
  } catch (error) {
    if (error instanceof AbortError && ctx.signal.aborted) return [];
    ctx.stats.listingFailures++;
    ctx.onListing(false);
    return wanted.filter((e) => ctx.due.has(e));
  }
  ctx.onListing(true, listed.serverDateMs);
  const missing: TickEntry[] = [];
  let missingAnchored = false;
  for (const e of wanted) {
    const server = listed.byId.get(e.serverId);
    e.lastListed = server !== undefined && statusOf(server) !== 'DELETED';
    if (server && live(e)) {
      ctx.deliver(e, { gone: false, server });
      // An absent server is only "not seen": its own GET answers for it.
    } else if (live(e)) {
      missing.push(e);
      if (e.anchorNovaMs !== undefined) missingAnchored = true;
    }
  }
  if (missingAnchored) ctx.onMissing();
  ctx.stats.fallbackGets += missing.filter((e) => ctx.due.has(e)).length;
  return missing.filter((e) => ctx.due.has(e));
}

/**
 * The brief listing for the servers under way: a server it shows is present (a look at it, its
 * status as last seen). A server it does not show is NOT taken for gone, whatever the listing
 * (rules of evidence, `evidence.ts`): a proxy, a cache or a page size in front of Nova can drop some
 * servers and keep others. Its absence triggers its own GET now, once per server
 * ({@link absenceTriggers}; sent as every look is, a probe first while Nova is in trouble), whose 404 is the proof; after that it gets
 * its GETs when due. When the listing fails, the due ones are looked at.
 */
async function presenceListing(ctx: TickContext, underway: TickEntry[]): Promise<TickEntry[]> {
  if (underway.length <= 1) return underway.filter((e) => e.seenDeleted || ctx.due.has(e));
  try {
    const { ids } = await ctx.sendListing(() => {
      ctx.stats.briefListings++;
      return bounded(ctx, (signal, limitMs) => listIds(ctx.api, signal, limitMs, ctx.presenceMicroversion));
    }, ctx.signal);
    ctx.onListing(true);
    const look: TickEntry[] = [];
    for (const e of underway) {
      e.lastListed = ids.has(e.serverId);
      if (e.lastListed) ctx.present(e);
      else if (ctx.due.has(e)) look.push(e);
      else if (absenceTriggers(e)) {
        e.absenceLooked = true;
        ctx.stats.absenceGets++;
        look.push(e);
      }
    }
    return look;
  } catch (error) {
    if (error instanceof AbortError && ctx.signal.aborted) return [];
    ctx.stats.listingFailures++;
    if (error instanceof NovaApiError && error.status === 406 && ctx.presenceMicroversion !== undefined) ctx.onPresenceUnsupported();
    else ctx.onListing(false);
    return underway.filter((e) => ctx.due.has(e));
  }
}

/** Run one tick. Never rejects: every failure is delivered to the waits it concerns. */
export async function runTick(ctx: TickContext): Promise<void> {
  try {
    if (!ctx.fleet) {
      await lookEach(ctx, ctx.entries);
      return;
    }
    // Status for the servers not yet under way (and now and then for the others: an ERROR shows only so).
    // A listing goes out only when a wait that is due now needs it; the others ride along.
    const needStatus = ctx.entries.filter((e) => live(e) && (!e.underway || ctx.now - e.statusAt >= ctx.statusRefreshMs));
    const single = await statusListing(ctx, needStatus.some((e) => ctx.due.has(e)) ? needStatus : []);
    // Presence for the servers under way, those the status listing has just shown so included. The
    // servers the status listing could not answer get their GETs meanwhile, not after a slow listing.
    const answered = new Set(single);
    const underway = ctx.entries.filter((e) => live(e) && e.underway && !answered.has(e));
    const presence = presenceListing(ctx, underway.some((e) => ctx.due.has(e) || e.seenDeleted) ? underway : []).then((look) => lookEach(ctx, look));
    await Promise.all([lookEach(ctx, single), presence]);
  } catch (error) {
    // Not expected (each step catches its own); a tick must never reject.
    for (const e of ctx.entries) if (live(e)) ctx.fail(e, error);
  }
}
