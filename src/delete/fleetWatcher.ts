/**
 * The fleet watcher, written once for every backend: the hosts of one project (one ledger scope)
 * elect one watcher through a {@link FleetStore} (memory, a SQLite file, Redis); it looks at the
 * servers any host waits on with its own delete engine (listings and GETs, under its rules of
 * evidence) and publishes what it saw; every other host's waits consume the publications instead
 * of looking by themselves (`fleetFeed.ts`, `fleetConsumer.ts`, `fleet.ts`).
 *
 * - **Election.** Every `leaseTtlMs / 3` each host runs `elect`: the holder renews its lease, anyone
 *   takes a lease nobody holds, with a new fencing epoch. The lease is set for five sixths of
 *   `leaseTtlMs` and renewed every third, so a dead or stopped watcher's lease lapses at most five
 *   sixths of the TTL after its holder stopped; the other hosts try every sixth: a watcher is
 *   replaced within `leaseTtlMs` of its stop (a renewal may come half a TTL late and still hold).
 * - **Fencing.** `publish` checks the lease is still the watcher's, of its epoch, in the same atomic
 *   step (a deposed watcher publishes nothing), and consumers ignore a publication of an epoch older
 *   than one seen.
 * - **Interest.** Each host registers the servers its waits wait on (delete waits and the guard's
 *   ACTIVE waits), with their deadline as the expiry (a day at most at a time), their intervals and
 *   whether a wait reads the whole body; it removes them when its waits end. The watcher reads the
 *   interest every round, and between rounds (every read interval, at most 250 ms) as soon as a
 *   registration moved the interest's version, so a new wait is looked at within a read interval,
 *   not a third of the lease; it follows it with `FleetLooks` (a wait of its own engine per server,
 *   ending at the 404 or the interest's expiry); what those waits observe is published, batched per
 *   microtask, and a heartbeat each round carries Nova's `Date`.
 * - **Publications** are numbered and kept for a while by the store, so a host that missed a few
 *   reads them on its next read; one trimmed away shows as a gap. Proofs are also kept by server id
 *   for {@link PROOF_RETENTION_MS}, for a host that catches up after a gap or registers late.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { newFleetStats, type FleetEngine, type FleetLink, type FleetStats, type Published } from './fleet.js';
import { FleetFeed } from './fleetFeed.js';
import { FleetLooks, wantServer, type WantedServer } from './fleetLooks.js';
import type { FleetInterestEntry, FleetStore } from './fleetStore.js';

/** How long a published proof stays readable by server id, in ms. */
export const PROOF_RETENTION_MS = 10 * 60_000;
/** The longest interest registered at once, in ms (an endless wait is registered a day at a time). */
const MAX_INTEREST_MS = 86_400_000;

/** What {@link FleetWatcher} needs. */
export interface FleetWatcherInit {
  /** The backend: election, publications, interest and kept proofs. */
  readonly store: FleetStore;
  /** This host's delete engine: it looks for the fleet while this host watches, and consumes otherwise. */
  readonly engine: FleetEngine;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The lease's TTL, in ms: renewed every third; a publication at least every third; `stallMs` is the TTL. */
  readonly leaseTtlMs: number;
}

/** One host's part in the fleet watcher (see the module). */
export class FleetWatcher implements FleetLink {
  /** Counters. */
  readonly stats: FleetStats = newFleetStats();
  readonly #d: FleetWatcherInit;
  readonly #store: FleetStore;
  readonly #token = randomUUID();
  readonly #feed: FleetFeed;
  readonly #detach: () => void;
  /** The lease, while this host holds it: its epoch, and the clock time until which it surely holds. */
  #lease: { epoch: number; until: number } | undefined;
  /** The looks of this host's engine for the fleet while it watches. */
  readonly #looks: FleetLooks;
  #pending: Published[] = [];
  #flushing: Promise<void> | undefined;
  #flushQueued = false;
  /** What this host has registered: server id -> `<intervalMs>,<confirmIntervalMs>,<whole>,<deadline>`. */
  #registered = new Map<string, string>();
  #syncing: Promise<void> | undefined;
  #dirty = false;
  /** The interest's version this watcher last followed. */
  #interestVersion: string | undefined;
  #electTimer: TimerHandle | undefined;
  #readTimer: TimerHandle | undefined;
  #rounds = new Set<Promise<void>>();
  #closed = false;

  /**
   * Start this host's part (`onFail` is called when it cannot start, e.g. to close the ledger it
   * came with, before the error is thrown again).
   * @throws `ValidationError` when another fleet link is attached to the engine (one fleet watcher per client).
   */
  static async start(init: FleetWatcherInit, onFail: () => Promise<void> = async () => undefined): Promise<FleetWatcher> {
    try {
      return new FleetWatcher(init);
    } catch (error) {
      await onFail();
      throw error;
    }
  }

  private constructor(init: FleetWatcherInit) {
    this.#detach = init.engine.attachFleet(this);
    this.#d = init;
    this.#store = init.store;
    this.#looks = new FleetLooks(init.engine, (item) => this.#queue(item));
    this.#feed = new FleetFeed({
      store: init.store,
      engine: init.engine,
      clock: init.clock,
      logger: init.logger,
      stats: this.stats,
      stallMs: init.leaseTtlMs,
      catchUp: () => this.#catchUp(),
    });
    this.#schedule('elect', 0);
    this.#schedule('read', 0);
  }

  /** True while this host holds the lease (it looks for the fleet). */
  get watching(): boolean {
    return this.#lease !== undefined;
  }

  /** The epoch of the lease this host holds, if any. */
  get epoch(): number | undefined {
    return this.#lease?.epoch;
  }

  /** See {@link FleetLink.consuming}: never while this host is the watcher. */
  get consuming(): boolean {
    return !this.#closed && this.#lease === undefined && this.#feed.consumer.consuming;
  }

  /** See {@link FleetLink.interestChanged}: the registration follows in a microtask. */
  interestChanged(): void {
    if (this.#closed || this.#dirty) return;
    this.#dirty = true;
    queueMicrotask(() => void this.#syncInterest());
  }

  /** See {@link FleetLink.ownLookAlive}: reconciled with the proofs this host took (`FleetConsumer.ownLookAlive`). */
  ownLookAlive(serverId: string, sentAt: number): void {
    if (!this.#closed) this.#feed.consumer.ownLookAlive(serverId, sentAt);
  }

  #schedule(which: 'elect' | 'read', ms: number): void {
    if (this.#closed) return;
    const timer = this.#d.clock.setTimeout(() => {
      const round = (which === 'elect' ? this.#electRound() : this.#readRound()).finally(() => {
        this.#rounds.delete(round);
        this.#schedule(which, which === 'elect' ? this.#electEveryMs() : this.#readEveryMs());
      });
      this.#rounds.add(round);
    }, ms);
    (timer as { unref?: () => void }).unref?.();
    if (which === 'elect') this.#electTimer = timer;
    else this.#readTimer = timer;
  }

  /** The lease as set in the store, in ms: five sixths of the TTL (see the module). */
  #leasePxMs(): number {
    return Math.floor((this.#d.leaseTtlMs * 5) / 6);
  }

  /** The holder renews every third of the TTL; the others try every sixth. */
  #electEveryMs(): number {
    return this.#lease ? this.#d.leaseTtlMs / 3 : this.#d.leaseTtlMs / 6;
  }

  /** Time between reads of the publications, in ms. */
  #readEveryMs(): number {
    return Math.max(20, Math.min(250, this.#d.leaseTtlMs / 8));
  }

  async #electRound(): Promise<void> {
    const started = this.#d.clock.now();
    try {
      const { held, epoch } = await this.#store.elect(this.#token, this.#leasePxMs());
      if (this.#closed) return;
      this.#feed.consumer.sawEpoch(epoch);
      if (held) this.#hold(epoch, started);
      else if (this.#lease) this.#lose('another host holds the lease');
    } catch (error) {
      if (this.#lease && this.#d.clock.now() >= this.#lease.until) this.#lose(`the lease could not be renewed (${(error as Error).message})`);
    }
    if (this.#lease && !this.#closed) await this.#watchRound().catch((e: unknown) => this.#d.logger.debug({ err: (e as Error).message }, 'fleet watcher: round failed'));
  }

  #hold(epoch: number, started: number): void {
    if (this.#lease?.epoch !== epoch) {
      if (this.#lease) this.#lose('the lease lapsed');
      this.stats.elections++;
      this.#feed.consumer.stop();
      this.#d.logger.info({ epoch }, 'fleet watcher: this host watches for the fleet');
      this.#lease = { epoch, until: started + this.#leasePxMs() };
      // No longer consuming: its own waits look by themselves (with the fleet's, in the same listings).
      this.#d.engine.fleetChanged();
    }
    this.#lease = { epoch, until: started + this.#leasePxMs() };
  }

  #lose(reason: string): void {
    this.#d.logger.info({ epoch: this.#lease?.epoch, reason }, 'fleet watcher: this host no longer watches for the fleet');
    this.#lease = undefined;
    this.#pending = [];
    this.#looks.stop('no longer the fleet watcher');
    this.#feed.consumer.stop();
    this.#d.engine.fleetChanged();
  }

  /** As the watcher: follow the fleet's interest with waits of this engine (`FleetLooks`), and publish (a heartbeat at least). */
  async #watchRound(): Promise<void> {
    await this.#followInterest();
    if (!this.#lease || this.#closed) return;
    await this.#flush(true);
  }

  /** As the watcher, between rounds: a host registered new interest (the version moved), so follow it now rather than at the next round. */
  async #followNewInterest(): Promise<void> {
    const v = await this.#store.interestVersion();
    if (this.#lease && !this.#closed && v !== this.#interestVersion) await this.#followInterest();
  }

  async #followInterest(): Promise<void> {
    const { entries, version } = await this.#store.interest();
    if (!this.#lease || this.#closed) return;
    this.#interestVersion = version;
    const wanted = new Map<string, WantedServer>();
    for (const e of entries) wantServer(wanted, e.serverId, { remainingMs: e.remainingMs, intervalMs: e.intervalMs || 5000, confirmIntervalMs: e.confirmIntervalMs || 1000, whole: e.whole });
    this.#looks.follow(wanted);
  }

  /** Publish `item` with whatever else comes in this microtask (only while this host watches). */
  #queue(item: Published): void {
    if (!this.#lease) return;
    this.#pending.push(item);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      void this.#flush(false);
    });
  }

  /** Publish what is pending (with `heartbeat`, also when nothing is); one publication at a time; kept for the next try when it fails. */
  async #flush(heartbeat: boolean): Promise<void> {
    while (this.#flushing) await this.#flushing;
    const lease = this.#lease;
    if (!lease || this.#closed || (!heartbeat && this.#pending.length === 0)) return;
    const items = this.#pending;
    this.#pending = [];
    const offset = this.#d.engine.novaOffsetMs;
    const novaDateMs = offset === undefined ? undefined : Math.round(this.#d.clock.wallNow() + offset);
    this.#flushing = this.#store.publish(this.#token, lease.epoch, { novaDateMs, items }, PROOF_RETENTION_MS).then(
      (seq) => {
        if (seq > 0) this.stats.published++;
        else if (this.#lease === lease) this.#lose("the lease is another host's (publication refused)");
      },
      (error: unknown) => {
        if (this.#lease === lease) this.#pending = [...items, ...this.#pending];
        this.#d.logger.debug({ err: (error as Error).message }, 'fleet watcher: publication failed: tried again next round');
      },
    );
    try {
      await this.#flushing;
    } finally {
      this.#flushing = undefined;
    }
  }

  async #readRound(): Promise<void> {
    if (this.#dirty) void this.#syncInterest();
    if (this.#lease) {
      await this.#followNewInterest().catch((e: unknown) => this.#d.logger.debug({ err: (e as Error).message }, 'fleet watcher: interest read failed'));
      return;
    }
    try {
      await this.#feed.read();
    } catch (error) {
      this.#d.logger.debug({ err: (error as Error).message }, 'fleet watcher: read failed');
    }
  }

  /** Register (or remove) this host's interest: what its waits wait on now (with `all`, every server again). */
  async #syncInterest(all = false): Promise<void> {
    while (this.#syncing) await this.#syncing;
    if (this.#closed) return;
    this.#dirty = false;
    const now = this.#d.clock.now();
    const next = new Map<string, string>();
    const add: FleetInterestEntry[] = [];
    for (const i of this.#d.engine.interest()) {
      const whole = i.whole === true;
      const sig = `${i.intervalMs},${i.confirmIntervalMs},${whole ? 1 : 0},${Math.round(now + i.remainingMs)}`;
      next.set(i.serverId, sig);
      if (!all && this.#registered.get(i.serverId) === sig) continue;
      // An endless wait (`timeoutMs: Infinity`) is registered for a day at a time.
      add.push({ serverId: i.serverId, remainingMs: Math.max(1, Math.round(Math.min(i.remainingMs, MAX_INTEREST_MS))), intervalMs: i.intervalMs, confirmIntervalMs: i.confirmIntervalMs, whole });
    }
    const remove = [...this.#registered.keys()].filter((id) => !next.has(id));
    if (add.length === 0 && remove.length === 0) return;
    this.#syncing = this.#store.register(this.#token, add, remove).then(
      (kept) => {
        this.#registered = next;
        // Judged as a publication's proof (its evidence by the engine, its epoch by the consumer).
        for (const p of kept) this.#feed.consumer.proof(p.serverId, p.evidence, p.epoch);
      },
      (error: unknown) => {
        this.#dirty = true;
        this.#feed.consumer.fallBack(`the servers waited on could not be registered (${(error as Error).message})`);
      },
    );
    try {
      await this.#syncing;
    } finally {
      this.#syncing = undefined;
    }
  }

  /** After a gap or a stall: every server waited on registered again, with the proofs kept for it. */
  #catchUp(): void {
    void this.#syncInterest(true);
  }

  /**
   * Stop: no timer, no round, no fleet wait left; the lease given up (another host takes it at its
   * next round) and this host's interest removed, each at most one store call's time. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#electTimer !== undefined) this.#d.clock.clearTimeout(this.#electTimer);
    if (this.#readTimer !== undefined) this.#d.clock.clearTimeout(this.#readTimer);
    this.#looks.stop('fleet watcher closed');
    this.#detach();
    await Promise.allSettled([...this.#rounds, this.#syncing, this.#flushing]);
    const removals: Array<Promise<unknown>> = [];
    if (this.#lease) removals.push(this.#store.resign(this.#token));
    if (this.#registered.size > 0) removals.push(this.#store.register(this.#token, [], [...this.#registered.keys()]));
    this.#lease = undefined;
    await Promise.allSettled(removals);
  }
}
