/**
 * The delete engine: one per client. It owns every pending delete-wait of the client (a small record
 * per server and per wait), one timer, one tick loop that decides which requests to send, one way
 * out for all of them and the DELETEs (`outbound.ts`: the rate limit, Nova's `Retry-After`, the poll
 * pace that widens the intervals while Nova is slow or failing, one listing in flight at a time, the
 * DELETE window), and the ledger of unconfirmed deletions with its "deletion confirmed" event.
 * `waitForDelete`, `deleteServer` and `deleteServers` are thin views over it.
 *
 * A tick, read top to bottom:
 * 1. Waits past their deadline end as `timeout` (the timer is set for the earliest deadline too, so
 *    a slow request never holds a wait past it).
 * 2. One server pending (or `coalesce: false`): each due server gets its own `GET /servers/{id}`.
 * 3. Two or more pending: one `changes-since` listing answers the servers not yet under way;
 *    one brief `GET /servers` tells which of those under way Nova no longer lists (a trigger only: each
 *    gets its own GET at once, once per server); a tick that wants both sends one listing of the whole
 *    project (`GET /servers/detail`) instead; every server the listings could not answer (absent,
 *    not anchored, listing failed: an error or the request time limit; a slow answer is an answer)
 *    gets its own GET. A failed listing is never a failed wait. A round goes out only when a wait is
 *    due, and when each wait is due is the look plan's (`lookPlan.ts`): often only where a 404 (or
 *    an ACTIVE) is near.
 * 4. Each answer goes to the waits of its server: "gone" (decided in `evidence.ts` only: Nova's 404
 *    for the server's own request, checked against a listing when it contradicts what the engine
 *    knows; never an absence from a listing) ends them as `deleted`; `SOFT_DELETED` and `ERROR` with no task end them; anything else
 *    (`DELETED` included) schedules the next look.
 * The guard's ACTIVE wait is a wait here too (its predicate: `WatchSpec.until`): one schedule, one
 * set of listings, one rate limit and pace for every wait of the client (its watcher). With a fleet
 * link attached (`fleet.ts`, the engine's end of it in `engineFleet.ts`) and consuming, the waits
 * take their answers from the fleet watcher.
 * Source: osc-lib `utils.wait_for_delete` (one wait), nodepool's shared server list (many waits),
 * Nova API reference "List Servers Detailed" (`changes-since`), tempest's `wait_for_server_termination`.
 * @module
 */
import { currentOperation } from '../core/telemetry.js';
import { jitteredMs, type Clock, type TimerHandle } from '../core/index.js';
import { MAX_TIMER_MS } from '../core/validate.js';
import { checkEngineOptions } from './options.js';
import { OrphanedServerError } from '../errors/index.js';
import { FailureLog } from './failureLog.js';
import { AbortGroups } from '../core/abortGroups.js';
import { DeleteLedger } from './ledger.js';
import { Tick, type TickEngine } from './tick.js';
import { endWatch, lookFailed, lookedPresent, newEntry, watchAborted, type Entry, type Watch } from './watch.js';
import { ServerMemory } from './memory.js';
import { ListingPolicy } from './listingPolicy.js';
import { Outbound } from './outbound.js';
import { PresenceCheck } from './presenceCheck.js';
import { ShortLooks } from './shortLooks.js';
import { LookPlan } from './lookPlan.js';
import { Follows } from './follow.js';
import { ORPHAN_EVIDENCE } from './evidence.js';
import { EngineFleet } from './engineFleet.js';
import type { DeleteEngineFleet, FleetInterest, FleetLink } from './fleet.js';
import { showsDeleted, type Observation } from './observe.js';
import type { DeleteEngineOptions, DeleteEngineStats, ServerApi, WatchEnd, WatchSpec } from './types.js';

export type { DeleteEngineOptions, DeleteEngineStats, WatchEnd, WatchSpec } from './types.js';

/** No look starts this close to its wait's deadline, in ms: it would reach Nova after the wait has ended. */
const LAST_LOOK_MARGIN_MS = 10;

/** The delete engine of one client. */
export class DeleteEngine implements DeleteEngineFleet {
  /** Unconfirmed deletions and the "deletion confirmed" event. */
  readonly ledger: DeleteLedger;
  /** The client calls the engine sends its requests through. */
  readonly api: ServerApi;
  /** The clock of the engine's timers (the client's). */
  readonly clock: Clock;
  /** Counters. */
  readonly stats: DeleteEngineStats = { ticks: 0, gets: 0, listings: 0, briefListings: 0, listingFailures: 0, fallbackGets: 0, absenceGets: 0 };
  readonly #coalesce: boolean;
  readonly #watchIntervalMs: number | undefined;
  /** How the requests go out: rate limit, Nova's pause, poll pace, one listing at a time, DELETE window (`outbound.ts`). */
  readonly outbound: Outbound;
  readonly #entries = new Map<string, Entry>();
  /** One abort listener per signal shared by waits (a batch's). */
  readonly #abortGroups = new AbortGroups<Watch>((w, signal) => this.#settle(w, watchAborted(w.entry.serverId, signal.reason)));
  /** What is remembered of servers between waits: the Date of their accepted DELETE, their faults. */
  readonly #memory = new ServerMemory();
  #offsetMs: number | undefined;
  #waits = 0;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #ticking: AbortController | undefined;
  #lastTickAt = Number.NEGATIVE_INFINITY;
  readonly #listings: ListingPolicy;
  readonly #presence: PresenceCheck;
  /** Short looks at deletions while a create waits for headroom (`shortLooks.ts`). */
  readonly shortLooks = new ShortLooks(() => this.#pullIn(), () => this.outbound.pace.factor);
  /** When each wait looks next: often only where a change is near (`lookPlan.ts`), learned from the engine's own looks. */
  readonly lookPlan = new LookPlan({ paceFactor: () => this.outbound.pace.factor, intervalOf: (w) => this.shortLooks.intervalOf(w), nearOf: (w) => this.shortLooks.nearOf(w) });
  /** Deletions nobody waits for, followed to their 404 while anyone listens for confirmed deletions (`follow.ts`). */
  readonly follows: Follows = new Follows(this);
  /** The engine's end of a fleet link (`engineFleet.ts`). */
  readonly #fleet: EngineFleet;
  /** The engine's side of its ticks (`tick.ts`). */
  readonly #tickSide: TickEngine;

  constructor(api: ServerApi, options: DeleteEngineOptions = {}) {
    checkEngineOptions(options);
    this.api = api;
    this.clock = api.clock;
    this.#coalesce = options.coalesce ?? true;
    this.#listings = new ListingPolicy(api.microversion);
    this.#watchIntervalMs = options.watchIntervalMs;
    this.ledger = new DeleteLedger(() => this.clock.wallNow());
    this.outbound = new Outbound(this.clock, api.logger, options.maxRequestsPerSecond ?? 10);
    const counted = (): void => void this.stats.briefListings++;
    this.#presence = new PresenceCheck({ api, send: (fn, signal) => this.outbound.listing(fn, signal), microversion: () => this.#listings.presenceMicroversion, counted, unsupported: () => this.#listings.presenceUnsupported() });
    const wake = (): void => void (this.#ticking || this.#reschedule());
    this.#fleet = new EngineFleet({ clock: this.clock, entries: this.#entries, memory: this.#memory, nearOf: (w) => this.shortLooks.nearOf(w), deliver: (e, obs) => this.#deliver(e, obs), wake });
    this.#tickSide = {
      api,
      stats: this.stats,
      look: (fn, signal) => this.outbound.look(fn, signal),
      listing: (fn, signal) => this.outbound.listing(fn, signal),
      listedNow: (signal) => this.#presence.listed(signal),
      troubled: () => this.outbound.pace.factor > 1 || !this.#listings.usable(this.clock.now()),
      listed: (ok, intervalMs, serverDateMs) => {
        if (ok) this.noteNovaDate(serverDateMs);
        this.#listings.listed(ok, this.clock.now(), intervalMs);
      },
      missing: () => this.#listings.missing(),
      presenceUnsupported: () => this.#listings.presenceUnsupported(),
      deliver: (e, obs, sentAt) => {
        if (sentAt !== undefined) this.#fleet.ownLook(e.serverId, obs, sentAt);
        // No `sentAt`: a shared listing's answer (see `#nextLookAt`).
        this.#deliver(e, obs, sentAt === undefined);
      },
      present: (e) => this.#present(e),
      orphan: (e) => this.#orphan(e),
      // The listing that had to check its 404 failed: nothing confirmed, nothing failed; looked at again.
      checkFailed: (e, error) => (this.#checkFailed(e.serverId, error), this.#present(e)),
      fail: (e, error) => this.#fail(e, error),
      skipped: (e, error) => e.watches.forEach((w) => w.log.note('look', error)),
    };
  }

  /** Check Nova's 404 for `serverId` before anything showed it: see `PresenceCheck.confirmGone`. */
  confirmGone(serverId: string, signal: AbortSignal, deleteAttempts: number, minDelayMs?: number): Promise<void> {
    return this.#presence.confirmGone(serverId, signal, deleteAttempts, (e) => this.#checkFailed(serverId, e), minDelayMs);
  }

  /** The listing that checks a 404 failed: the 404 is not confirmed, the server is looked at (and checked) again. */
  #checkFailed(serverId: string, e: unknown): void {
    for (const w of this.#entries.get(serverId)?.watches ?? []) w.log.note('look', e);
    this.api.logger.warn({ serverId, err: e instanceof Error ? e.message : String(e) }, 'listing to check a 404 failed: not confirmed, checking again');
  }

  /** Pending waits. */
  get pendingWaits(): number { return this.#waits; } // prettier-ignore
  /** Servers with at least one pending wait. */
  get pendingServers(): number { return this.#entries.size; } // prettier-ignore
  /** Nova's clock minus the local wall clock, in ms, once a `Date` header has told it. */
  get novaOffsetMs(): number | undefined { return this.#offsetMs; } // prettier-ignore

  /** True when nothing is pending, no timer is set and no tick runs. */
  get idle(): boolean {
    return this.#entries.size === 0 && this.#timer === undefined && this.#ticking === undefined;
  }

  /**
   * Send one request under the engine's rate limit. Rejects with {@link AbortError} as soon as
   * `signal` aborts, also while the request waits for its turn (a call settles by its deadline
   * however long the queue); `fn` is then never called (nothing is sent after a call settles), and
   * the turn it waited for goes to the next request waiting.
   */
  send<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.outbound.send(fn, signal);
  }

  /** Record a Nova `Date` header (epoch ms) received now; with `serverId`, the date its DELETE was accepted. */
  noteNovaDate(serverDateMs: number | undefined, serverId?: string): void {
    if (serverDateMs === undefined || !Number.isFinite(serverDateMs)) return;
    this.#offsetMs = serverDateMs - this.clock.wallNow();
    if (serverId === undefined) return;
    this.#memory.deleteAccepted(serverId, serverDateMs, this.clock.now());
    const entry = this.#entries.get(serverId);
    if (entry) {
      entry.anchorNovaMs = serverDateMs;
      entry.deletingSince ??= this.#memory.acceptedAt(serverId);
    }
  }

  /**
   * Wait until `serverId` is gone (Nova's 404), soft-deleted, in ERROR with no task, or its deadline.
   * @throws {@link AbortError} (its `serverId` set) when `spec.signal` aborts; the last failure when `pollRetries` failed
   * looks in a row were exceeded, or a failure no later look can mend (401, 403).
   */
  watch(serverId: string, spec: WatchSpec): Promise<WatchEnd> {
    if (spec.signal?.aborted) return Promise.reject(watchAborted(serverId, spec.signal.reason));
    return new Promise<WatchEnd>((resolve, reject) => {
      let entry = this.#entries.get(serverId);
      if (!entry) {
        entry = newEntry(serverId, this.#memory.deleteDate(serverId), this.clock.wallNow(), currentOperation(), this.clock.now(), this.#memory.acceptedAt(serverId));
        if (spec.phase === 'building') entry.building = true;
        else if (spec.phase === 'deleting') {
          // Taken as under way (its presence from brief listings, its status again after three of
          // its intervals: `tick.ts`) until a look shows otherwise.
          entry.deletingSince ??= this.clock.now();
          entry.underway = true;
          entry.statusAt = this.clock.now();
        }
        this.#entries.set(serverId, entry);
      }
      const now = this.clock.now();
      const w: Watch = {
        ...spec,
        entry,
        nextAt: now,
        polls: 0,
        failures: 0,
        log: new FailureLog(serverId, spec.onFailure, this.api.logger),
        end: { outcome: 'timeout', polls: 0, server: undefined, lastStatus: undefined, lastTaskState: undefined },
        resolve,
        reject,
      };
      if (spec.signal) this.#abortGroups.add(spec.signal, w);
      // The fleet watcher's wait started again for the same server (other intervals, a later
      // deadline: `FleetLooks.follow`) keeps its server's schedule: its next look by the plan from the last one.
      if (spec.fleetWatch === true && Number.isFinite(entry.lastLookAt)) w.nextAt = Math.max(now, this.#nextLookAt(w, entry.lastLookAt));
      // A server not looked at yet whose deletion or build is known to have begun: its first look at the learned time.
      else w.nextAt = now + jitteredMs(this.lookPlan.firstDelayMs(w, now), w.jitter);
      entry.watches.push(w);
      this.#waits++;
      this.#fleet.interestChanged();
      const shared = this.#coalesce && this.#entries.size >= 2;
      const tickAt = Math.max(shared ? Math.max(w.nextAt, this.#lastTickAt + this.#gapMs(this.lookPlan.intervalMs(w, now))) : w.nextAt, this.outbound.pausedUntil);
      this.#wantTimer(Math.min(tickAt, w.deadlineAt));
    });
  }

  /** End `w` with `end` (or reject it with an error), and forget it; its server's requests stop when no wait is left. */
  #settle(w: Watch, end: WatchEnd | Error): void {
    const entry = w.entry;
    const i = entry.watches.indexOf(w);
    if (i < 0) return;
    entry.watches.splice(i, 1);
    this.#waits--;
    if (w.signal) this.#abortGroups.remove(w.signal, w);
    if (entry.watches.length === 0 && this.#entries.get(entry.serverId) === entry) {
      this.#entries.delete(entry.serverId);
      entry.controller.abort(new Error('no wait left for this server'));
      if (this.#entries.size === 0) this.#ticking?.abort(new Error('no wait left'));
    }
    endWatch(w, end);
    if (this.#entries.size === 0) this.#clearTimer();
    this.#fleet.interestChanged();
  }

  /** See {@link DeleteEngineFleet.attachFleet} (`fleet.ts`) and {@link EngineFleet.attach}. @throws {@link ValidationError} when another link is attached. */
  attachFleet(link: FleetLink): () => void {
    return this.#fleet.attach(link);
  }

  /** Whether a fleet link is attached to this engine (one per client: `attachFleet`). */
  get fleetAttached(): boolean {
    return this.#fleet.attached;
  }

  /** The servers the engine's delete waits wait on (see `fleet.ts`). */
  interest(): FleetInterest[] {
    return this.#fleet.interest();
  }

  /** The link started or stopped consuming: a wait the fleet no longer answers for looks at once. */
  fleetChanged(): void {
    this.#fleet.changed();
  }

  /** What the fleet watcher published about `serverId`: see {@link EngineFleet.observed}. @returns whether it was taken. */
  fleetObserved(serverId: string, obs: Observation | undefined): boolean {
    return this.#fleet.observed(serverId, obs);
  }

  /** Time between shared ticks: `watchIntervalMs`, or half the smallest interval, shorter where a 404 is near (`lookPlan.ts`); widened by the pace. */
  #gapMs(intervalMs: number, confirmIntervalMs = Number.POSITIVE_INFINITY): number {
    return this.outbound.pace.widen(Math.min(this.#watchIntervalMs ?? intervalMs / 2, confirmIntervalMs));
  }

  /**
   * When `w` looks next after a look at clock time `now`: as the look plan says (`lookPlan.ts`, the
   * pace included), jittered. After a shared listing (`listed`), the jitter only delays: the next
   * round comes when the first of the waits it answered is due, and with each wait's jitter drawn
   * both ways the earliest of many draws came about `jitter` of an interval early (a listing every
   * 0.9 interval for 40 waits at jitter 0.1: 10 % more listings than one wait's own schedule, more
   * looks than osc-lib's loop on a slow Nova). Drawn from [1, 1 + jitter] times the delay, the round
   * comes at the interval; one wait alone still spreads its looks.
   */
  #nextLookAt(w: Watch, now: number, listed = false): number {
    return now + jitteredMs(this.lookPlan.delayMs(w, now), w.jitter, listed ? 0.5 + Math.random() / 2 : Math.random());
  }

  /** Short looks were asked for: a wait on a deletion looks next within its short interval (widened by the pace). */
  #pullIn(): void {
    const now = this.clock.now();
    for (const w of this.#allWaits()) if (!w.until) w.nextAt = Math.min(w.nextAt, this.#nextLookAt(w, now));
    this.#fleet.interestChanged(); // the fleet's interest carries the short interval
    this.#reschedule();
  }

  #wantTimer(at: number): void {
    // Nothing due (a tick runs and no deadline is set: `timeoutMs: Infinity`): the tick's end reschedules.
    if (!Number.isFinite(at)) return;
    if (this.#timer !== undefined && at >= this.#timerAt - 0.5) return;
    this.#clearTimer();
    this.#timerAt = at;
    // A timer waits at most 2^31-1 ms; a later time is reached by waking up once on the way.
    this.#timer = this.clock.setTimeout(() => this.#onTimer(), Math.min(MAX_TIMER_MS, Math.max(0, at - this.clock.now())));
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  /** Every pending wait, in order. */
  *#allWaits(): Generator<Watch> {
    for (const e of this.#entries.values()) yield* e.watches;
  }

  /** Set the timer for the earliest deadline or (no tick running) the next tick. */
  #reschedule(): void {
    this.#clearTimer();
    if (this.#entries.size === 0) return;
    let deadline = Number.POSITIVE_INFINITY;
    let next = Number.POSITIVE_INFINITY;
    let interval = Number.POSITIVE_INFINITY;
    let confirm = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    for (const w of this.#allWaits()) {
      deadline = Math.min(deadline, w.deadlineAt);
      if (w.nextAt < w.deadlineAt - LAST_LOOK_MARGIN_MS && !this.#fleet.covers(w.entry)) next = Math.min(next, w.nextAt);
      interval = Math.min(interval, this.lookPlan.intervalMs(w, now));
      if (w.entry.seenDeleted) confirm = Math.min(confirm, w.confirmIntervalMs);
    }
    // A look due at or after the deadline of its wait is never sent: the deadline ends the wait first.
    const shared = this.#coalesce && this.#entries.size >= 2;
    const tickAt = this.#ticking ? Number.POSITIVE_INFINITY : Math.max(shared ? Math.max(next, this.#lastTickAt + this.#gapMs(interval, confirm)) : next, this.outbound.pausedUntil);
    this.#wantTimer(Math.min(deadline, tickAt));
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    for (const w of [...this.#allWaits()]) if (w.deadlineAt <= now) this.#settle(w, w.end);
    if (!this.#ticking && this.#entries.size > 0) this.#startTick(now);
    this.#reschedule();
  }

  #startTick(now: number): void {
    // Shared listings while two or more are pending, unless a listing failed lately (back-off).
    // The servers the fleet watcher answers for get no looks of their own (`fleet.ts`).
    const entries = [...this.#entries.values()].filter((e) => !this.#fleet.covers(e));
    const shared = this.#coalesce && entries.length >= 2 && this.#listings.usable(now);
    const due = entries.filter((e) => e.watches.some((w) => w.nextAt <= now && now < w.deadlineAt - LAST_LOOK_MARGIN_MS));
    if (due.length === 0) return;
    const controller = new AbortController();
    this.#ticking = controller;
    this.#lastTickAt = now;
    this.stats.ticks++;
    let interval = Number.POSITIVE_INFINITY;
    let ownInterval = Number.POSITIVE_INFINITY;
    let deadline = Number.NEGATIVE_INFINITY;
    for (const w of this.#allWaits()) {
      interval = Math.min(interval, this.lookPlan.intervalMs(w, now));
      ownInterval = Math.min(ownInterval, w.intervalMs);
      deadline = Math.max(deadline, w.deadlineAt);
    }
    this.outbound.pace.baseMs = interval;
    void new Tick(this.#tickSide, {
      signal: controller.signal,
      shared,
      // Shared listings answer every pending server; single looks go only to servers that are due.
      entries: shared ? entries : due,
      due: new Set(due),
      now,
      deadlineAt: deadline,
      intervalMs: interval,
      ownIntervalMs: ownInterval,
      offsetMs: this.#offsetMs,
      widenMs: this.#listings.widenMs,
      presenceMicroversion: this.#listings.presenceMicroversion,
    })
      .run()
      .finally(() => {
        if (this.#ticking === controller) this.#ticking = undefined;
        this.#reschedule();
      });
  }

  #deliver(entry: Entry, obs: Observation, listed = false): void {
    this.lookPlan.observed(entry, obs, this.clock.now());
    if (showsDeleted(obs)) entry.seenDeleted = true;
    if (!obs.gone) {
      entry.statusAt = this.clock.now();
      // Under way while a look shows it so (a hint, `WatchSpec.phase`, that a look contradicts is dropped).
      entry.underway = entry.seenDeleted || obs.server['OS-EXT-STS:task_state'] === 'deleting';
    }
    // The server's own `updated` is on the clock `changes-since` is compared with: the best anchor.
    const updated = obs.gone ? Number.NaN : Date.parse(String(obs.server.updated ?? ''));
    if (Number.isFinite(updated)) entry.anchorNovaMs = updated;
    const end = this.#memory.classify(entry.serverId, obs);
    const now = this.clock.now();
    for (const w of [...entry.watches]) {
      w.polls++;
      w.failures = 0;
      w.log.answered();
      w.end = {
        outcome: end ?? 'timeout',
        polls: w.polls,
        server: obs.gone ? undefined : obs.server,
        lastStatus: obs.gone ? 'NOT_FOUND' : obs.server.status,
        lastTaskState: obs.gone ? null : obs.server['OS-EXT-STS:task_state'],
      };
      try {
        w.onObservation?.(obs, w.polls);
      } catch {
        // a callback must not break the wait
      }
      if (!entry.watches.includes(w)) continue; // the callback settled it (an abort)
      if (w.until ? w.until(obs) : end !== undefined) this.#settle(w, w.end);
      else w.nextAt = this.#nextLookAt(w, now, listed);
    }
    if (obs.gone) {
      this.#memory.forget(entry.serverId);
      // Seen gone by any wait (a plain waitForDelete too): the deletion is confirmed.
      this.ledger.confirm(entry.serverId);
    }
  }

  /** A shared listing still has `entry`'s server (or its 404 is unchecked): a look at it, its status as last seen. */
  #present(entry: Entry): void {
    const now = this.clock.now();
    this.lookPlan.observed(entry, undefined, now);
    lookedPresent(entry, (w) => this.#nextLookAt(w, now, true));
  }

  /** Its GET answered 404, yet Nova still lists it: every wait on it fails; it stays unconfirmed. */
  #orphan(entry: Entry): void {
    const error = new OrphanedServerError({ serverId: entry.serverId, deleteAttempts: 0, evidence: ORPHAN_EVIDENCE, lastStatus: entry.watches[0]?.end.lastStatus });
    for (const w of [...entry.watches]) this.#settle(w, error);
  }

  #fail(entry: Entry, error: unknown): void {
    const now = this.clock.now();
    lookFailed(entry, error, (w, e) => this.#settle(w, e), (w) => now + jitteredMs(this.outbound.pace.widen(this.lookPlan.intervalMs(w, now)), w.jitter));
  }
}
