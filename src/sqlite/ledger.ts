/**
 * `SqliteQuotaLedger`: the {@link QuotaLedger} of the processes of one host, kept in one local
 * SQLite file per endpoint and project (see `docs/sqlite-ledger.md`). Each operation is one
 * `BEGIN IMMEDIATE` transaction (`store.ts`), atomic across the processes of the host; the same
 * semantics as `RedisQuotaLedger` (admission, FIFO queue, leases, fencing tokens, shared `/limits`
 * readings, "quota freed" wake-ups), with polling of the file in place of pub/sub.
 *
 * Clocks: leases, place leases, holder entries, the refresh lock and the kept reading's send time
 * are stored in ms of the host's monotonic clock (`hostClock.ts`: `CLOCK_MONOTONIC`, the same in
 * every process of the host, read through `clock.now()`), never of the wall clock: a step of the
 * wall clock (NTP, `date -s`, a VM resumed and corrected) ends no lease and lengthens none, so a
 * claim whose server Nova does not count yet stays subtracted for as long as its holder renews it
 * (the guard does until Nova counts the server). What must stay ordered is ordered by counters in
 * the file (fencing tokens, join order, the order of readings, `'counted'` releases and confirmed
 * deletions), and a kept reading is also judged by this process's own clock (first seen longer
 * than `limitsMaxAgeMs` ago: stale). Waits, polls and heartbeats run on `clock.now()` /
 * `clock.setTimeout`.
 *
 * A locked file (another process in a long write transaction) costs a call, not the process: each
 * transaction blocks the event loop for at most `NATIVE_BUSY_MS` and is tried again asynchronously
 * for up to `busyTimeoutMs` (`busy.ts`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { sleep, systemClock, type Clock, type ResourceAmounts, type TimerHandle } from '../core/index.js';
import { componentLogger } from '../core/logger.js';
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import { AbortError, ValidationError, throwIfAborted } from '../errors/index.js';
import type { AcquireRequest, Acquisition, Admission, AdmitRequest, ClaimEnd, FreedCredit, LedgerClaim, LedgerLimits, LedgerPeek, LedgerPlace, LimitsRead, LimitsReading, QuotaLedger, RawHeadroom, UncountedRead } from '../ledger/index.js';
import { FreshWhenAsked, creditedLimits, rawHeadroomOf, refutedOrder } from '../ledger/index.js';
import { clientScope, fleetWatcherWanted, scopeMismatch } from '../ledger/index.js';
import { PlaceWakes } from '../ledger/index.js';
import type { NovaClient } from '../nova/index.js';
import { LedgerStore, type AdmitArgs, type AdmitResult, type Caller, type KeptReading, type Room } from './store.js';
import { FreedWatch } from './freed.js';
import { whileBusy } from './busy.js';
import { hostMonotonic } from './hostClock.js';
import { checkOptionNames, resolveOptions, type ResolvedSqliteOptions, type SqliteQuotaLedgerOptions } from './options.js';
import { FleetWatcher } from '../delete/fleetWatcher.js';
import { SqliteFleetStore } from './fleetStore.js';

/** How the kept reading is written into the file: JSON, unlimited (`Infinity`) as `"Infinity"`. */
const encodeReading = (r: LimitsReading): string => JSON.stringify({ absolute: r.absolute, requestId: r.requestId }, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v));
const decodeReading = (json: string): LimitsReading => JSON.parse(json, (_k, v: unknown) => (v === 'Infinity' ? Infinity : v)) as LimitsReading;

/** The room a reading leaves per resource, as the file's admission takes it (whole numbers; unknown or unlimited: `undefined`). */
const roomOf = (h: RawHeadroom): Room =>
  (['cores', 'ramMiB', 'instances'] as const).map((r) => {
    const v = h[r];
    return v === undefined || !Number.isFinite(v) ? undefined : Math.floor(v);
  });
/** The room of a reading kept in the file (its JSON). */
const roomOfKept = (json: string): Room => roomOf(rawHeadroomOf(decodeReading(json).absolute));
/** A kept reading's JSON with `freed` credited (`creditedLimits`); `undefined` when it has no usage to credit. */
const creditKept = (json: string, freed: ResourceAmounts): string | undefined => {
  const reading = decodeReading(json);
  const absolute = creditedLimits(reading.absolute, freed);
  return absolute === undefined ? undefined : encodeReading({ absolute, requestId: reading.requestId });
};

/** Needs as whole, non-negative numbers. */
function wholeNeeds(where: string, n: ResourceAmounts): ResourceAmounts {
  const v = [n.cores, n.ramMiB, n.instances];
  if (v.some((x) => typeof x !== 'number' || !Number.isFinite(x) || x < 0)) throw new ValidationError(`${where}: needs must be non-negative numbers, got ${JSON.stringify(n)}`);
  return { cores: Math.ceil(n.cores), ramMiB: Math.ceil(n.ramMiB), instances: Math.ceil(n.instances) };
}

/**
 * The quota ledger of the processes of one host, on a local SQLite file in WAL mode (one file per
 * endpoint and project). Every process on the host that opens the same file shares claims, queue,
 * `/limits` readings and freed-quota wake-ups. Needs the optional dependency better-sqlite3 (12.x).
 *
 * @example
 * ```ts
 * import { SqliteQuotaLedger } from 'nova-guard/sqlite';
 * const ledger = new SqliteQuotaLedger({ endpoint, projectId }); // ~/.local/state/nova-guard/ledger-....sqlite
 * const guard = new QuotaGuard(client, { ledger });
 * ```
 * Source: the claim-before-launch design of Zuul nodepool, as `RedisQuotaLedger`; the cross-process
 * lock is SQLite's (`BEGIN IMMEDIATE` in WAL mode: sqlite.org, "Write-Ahead Logging").
 */
export class SqliteQuotaLedger implements QuotaLedger {
  readonly kind = 'sqlite';
  readonly holder: string;
  /** The lease of this holder's places and of its entry among the live holders, in ms (the `placeTtlMs` option). */
  get placeTtlMs(): number {
    return this.#opts.placeTtlMs;
  }
  /** The endpoint (normalised) and project this ledger serves: a guard of another is refused. */
  readonly scope: LedgerScope;
  /** The ledger file (absolute path). */
  readonly path: string;
  readonly #opts: ResolvedSqliteOptions;
  readonly #clock: Clock;
  /** The host's monotonic clock in ms (`hostClock.ts`): the time of everything stored in the file. */
  readonly #hostNow: () => number;
  readonly #store: LedgerStore;
  readonly #caller: Caller;
  readonly #freed: FreedWatch;
  readonly #wakes = new PlaceWakes();
  #wakeListeners = 0;
  #offWakePoll: (() => void) | undefined;
  readonly #places = new Set<string>();
  /** The refresh locks this object holds (a read of its own for the fleet in flight): given back at `close()`. */
  readonly #locks = new Set<string>();
  readonly #claims = new Map<string, ResourceAmounts>();
  /** When this process first saw each kept reading (by order number, monotonic clock). */
  readonly #firstSeen = new Map<number, number>();
  #staleSeq = -1;
  #beat: TimerHandle | undefined;
  #members: readonly string[] = [];
  #closed = false;
  #fleet: FleetWatcher | undefined;

  /**
   * Opens (creating when missing) the ledger file.
   * @throws `ValidationError` for bad options (see {@link SqliteQuotaLedgerOptions}), a directory on
   * a network file system, or a file that holds another endpoint's or project's ledger.
   * @throws `ConfigError` when the optional dependency better-sqlite3 cannot be loaded.
   * @throws {@link SqliteLedgerError} when the file cannot be created or opened, or is not a SQLite
   * database. A file locked by another process does not make it throw or wait: what needs the lock
   * is left to the first call.
   */
  constructor(options: SqliteQuotaLedgerOptions) {
    this.#opts = resolveOptions(options);
    this.holder = this.#opts.holder;
    this.path = this.#opts.file;
    this.scope = ledgerScope(options.endpoint, options.projectId);
    this.#clock = options.clock ?? systemClock;
    this.#hostNow = hostMonotonic(this.#clock);
    this.#caller = { instance: `${randomUUID()} ${this.holder}`, holderTtlMs: this.#opts.placeTtlMs };
    // (monotonic - wall) moves the wall-clock times of a file an older nova-guard wrote (schema 1), once.
    this.#store = new LedgerStore(this.path, `${this.scope.endpoint}\n${this.scope.projectId}`, () => this.#hostNow() - this.#clock.wallNow());
    this.#freed = new FreedWatch(this.#store, this.#clock, this.#opts.pollIntervalMs);
    componentLogger(options.logger, 'sqlite-ledger').debug({ path: this.path }, 'SQLite ledger opened');
  }

  /**
   * A ledger for `client`'s endpoint and project: `endpoint` from `client.endpoint()`, `projectId`
   * from `client.projectId`, unless given (see `clientScope` in `src/guard/ledgerScope.ts`).
   *
   * The processes that share the file elect one fleet watcher through it (this one may be elected,
   * looking with this client): on by default (`fleetWatcher: false` turns it off). As with
   * `RedisQuotaLedger.forClient`, the client must know its project (its `projectId`, a noauth
   * token's, or its Keystone token's): by default a client that does not, or whose engine has
   * another fleet link attached, gets the ledger without the watcher (logged at info,
   * `fleetWatcherWanted` in `src/ledger/scope.ts`); `fleetWatcher: true` refuses it instead.
   * @throws `ValidationError` when the client has no project id and none is given, with
   * `fleetWatcher: true` when the client does not know its project or another fleet link is
   * attached to its engine (one fleet watcher per client: the ledger is closed first); what the
   * constructor throws.
   */
  static async forClient(client: NovaClient, options: Omit<SqliteQuotaLedgerOptions, 'endpoint' | 'projectId'> & { endpoint?: string; projectId?: string }): Promise<SqliteQuotaLedger> {
    checkOptionNames('SqliteQuotaLedger.forClient options', options);
    const { fleetWatcher, ...rest } = options;
    const logger = componentLogger(options.logger, 'fleet-watcher');
    const watch = await fleetWatcherWanted(client, fleetWatcher, (reason) => logger.info({ reason }, 'SQLite ledger without the fleet watcher (its default): each process looks by itself'));
    const ledger = new SqliteQuotaLedger({ ...rest, ...(await clientScope('SqliteQuotaLedger.forClient', client, options, watch)) });
    if (!watch) return ledger;
    const store = new SqliteFleetStore({ file: ledger.#store, attempts: (fn) => ledger.#attempts(fn) });
    ledger.#fleet = await FleetWatcher.start({ store, engine: client.deleteEngine, clock: ledger.#clock, leaseTtlMs: ledger.#opts.fleetLeaseTtlMs, logger }, () => ledger.close());
    return ledger;
  }

  /** This process's part in the fleet watcher (on by default with `forClient`, see `src/delete/fleetWatcher.ts`): its counters, whether it watches. */
  get fleetWatcher(): FleetWatcher | undefined { return this.#fleet; } // prettier-ignore

  /**
   * A guard of `scope` is about to use this ledger (see `QuotaLedger.bindScope`).
   * @throws `ValidationError` naming both when `scope` is another endpoint or project.
   */
  bindScope(scope: LedgerScope): void {
    if (!sameScope(this.scope, scope)) throw scopeMismatch(this.kind, this.scope, scope);
  }

  #now(): number {
    return this.#hostNow();
  }

  /** `fn` (one transaction, given the host's monotonic now at each attempt), tried again while the file is locked, for up to `busyTimeoutMs`. */
  #attempts<T>(fn: (now: number) => T): Promise<T> {
    return whileBusy(() => fn(this.#now()), this.#opts.busyTimeoutMs, this.#clock);
  }

  /** Run `fn` (one transaction) after starting the heartbeat; rejects after `close()`. */
  async #run<T>(fn: (now: number) => T): Promise<T> {
    if (this.#closed) throw new ValidationError(`SqliteQuotaLedger ${this.path} is closed`);
    this.#heartbeat();
    return this.#attempts(fn);
  }

  /** A call a closed ledger ignores (`leave`, `release`, `bind`): resolves at once after `close()`, quietly when `close()` cut it off. */
  async #quiet(fn: (now: number) => void): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#run(fn);
    } catch (error) {
      if (!this.#closed) throw error;
    }
  }

  /** Every `placeTtlMs / 3` from the first call until `close()`: the holder entry and this ledger's places renewed. */
  #heartbeat(): void {
    if (this.#beat !== undefined || this.#closed) return;
    this.#beat = this.#clock.setTimeout(() => {
      if (this.#closed) return;
      const next = (): void => {
        this.#beat = undefined;
        this.#heartbeat();
      };
      // a failure: the next beat tries again; places that lapse meanwhile are taken again by the guard
      this.#attempts((now) => this.#store.heartbeat(now, this.#caller, [...this.#places], this.#opts.placeTtlMs)).then((members) => {
        this.#members = members;
        next();
      }, next);
    }, this.#opts.placeTtlMs / 3);
    (this.#beat as { unref?: () => void }).unref?.();
  }

  /** The holder names of the file's live holders as this ledger last saw them (its admissions and heartbeats; see `QuotaLedger.members`). */
  members(): readonly string[] {
    return this.#members;
  }

  async join(needs: ResourceAmounts): Promise<LedgerPlace> {
    const n = wholeNeeds('join', needs);
    const id = randomUUID();
    await this.#run((now) => this.#store.join(now, this.#caller, id, n, this.#opts.placeTtlMs));
    this.#places.add(id);
    this.#wakes.joined(id);
    return { id, needs: { ...needs } };
  }

  async leave(place: LedgerPlace): Promise<void> {
    this.#places.delete(place.id);
    this.#wakes.left(place.id);
    await this.#quiet((now) => this.#store.leave(now, this.#caller, place.id));
  }

  /**
   * Check and claim atomically (one transaction): every live claim, every claim released as
   * `'counted'` at or after `stamp` (the reading's order number) and every place ahead is
   * subtracted. The answer carries `holders`, the live holders of the file.
   */
  async admit(request: AdmitRequest): Promise<Admission> {
    const needs = wholeNeeds('admit', request.needs);
    const args: AdmitArgs = { placeId: request.place?.id ?? '', needs, ttlMs: Math.ceil(request.ttlMs), holder: this.holder, claimId: randomUUID() };
    const res = await this.#run((now) => this.#store.admit(now, this.#caller, { ...args, room: roomOf(request.headroom), stamp: Math.floor(request.stamp) }));
    const { place: _place, reading: _reading, ...admission } = this.#answer(request, args, res, { absolute: {}, requestId: undefined, stamp: 0, ageMs: 0, shared: false });
    return admission;
  }

  /**
   * Admit or queue against one reading (`QuotaLedger.acquire`), the admission in the same
   * transaction as the decision on the kept reading: a fresh kept reading is admitted on in ONE
   * transaction; otherwise this process takes the refresh lock, calls `read` (Nova) and keeps the
   * reading, frees the lock and admits on it in one more transaction. While another process
   * refreshes, it polls the file every `pollIntervalMs` for at most `limitsLockMs + busyTimeoutMs`,
   * then admits on the stale kept reading (or, with none, on a read of its own), as `limits` hands
   * them out. With `request.staleShortMs`, a kept reading up to that old (on the host's monotonic
   * clock) that was sent after the last confirmed deletion and leaves the needs short answers "not
   * admitted" at once, with no lock and no read (such a reading can only overstate the usage, except
   * for quota freed outside the ledger). Short with no place and `joinIfShort`: the call is queued
   * in the same transaction. `uncounted` is not used: a restart does not empty a file (the vetting of
   * an emptied store is the Redis ledger's).
   * @throws {@link SqliteLedgerError} when the file fails; `AbortError` when `signal` aborts; what
   * `read` throws (the refresh lock is given back first).
   */
  async acquire(request: AcquireRequest, read: LimitsRead, signal: AbortSignal | undefined, _uncounted?: UncountedRead): Promise<Acquisition> {
    const needs = wholeNeeds('acquire', request.needs);
    const join = request.joinIfShort && request.place === undefined ? { placeId: randomUUID(), placeTtlMs: this.#opts.placeTtlMs } : undefined;
    const args: AdmitArgs = { placeId: request.place?.id ?? '', needs, ttlMs: Math.ceil(request.ttlMs), holder: this.holder, claimId: randomUUID(), join };
    const shortMaxAgeMs = Math.max(0, Math.floor(request.staleShortMs ?? 0));
    // A reading Nova's quota check refuted for this call (and any older) is not fresh for it.
    const refuted = refutedOrder(request);
    const lock = randomUUID();
    const deadline = this.#clock.now() + this.#opts.limitsLockMs + this.#opts.busyTimeoutMs;
    const fresh = new FreshWhenAsked(this.#clock, this.#opts.limitsMaxAgeMs);
    for (;;) {
      throwIfAborted(signal);
      const local = this.#clock.now();
      const begun = await this.#run((now) =>
        this.#store.acquireBegin(now, this.#caller, { ...args, maxAgeMs: fresh.maxAgeMs(local), staleSeq: Math.max(this.#stale(), refuted), shortMaxAgeMs, lock, lockMs: this.#opts.limitsLockMs, roomOf: roomOfKept }),
      );
      const { state, kept, sendSeq, now } = begun;
      if (state === 'fresh') this.#saw(kept.seq, local);
      if (begun.result !== undefined) return this.#answer(request, args, begun.result, this.#keptReading(kept, now, local));
      if (state === 'lock' || this.#clock.now() >= deadline) {
        if (state !== 'lock' && kept.json !== undefined) {
          const res = await this.#run((t) => this.#store.admit(t, this.#caller, { ...args, room: roomOfKept(kept.json!), stamp: kept.seq }));
          return this.#answer(request, args, res, this.#keptReading(kept, now, local));
        }
        const reading = await this.#read(read, signal, state === 'lock' ? lock : undefined);
        this.#saw(sendSeq, local);
        const json = encodeReading(reading);
        const res = await this.#run((t) => this.#store.storeAdmit(t, this.#caller, { ...args, json, seq: sendSeq, sentAt: now, lock, room: roomOfKept(json) })).finally(() => this.#locks.delete(lock));
        return this.#answer(request, args, res, { absolute: reading.absolute, requestId: reading.requestId, stamp: sendSeq, ageMs: 0, shared: false });
      }
      // Another process's Nova read: Nova's time, not the ledger's (the guard's time limit pauses).
      await fresh.waitForOthers(read, this.#waitForReading(Math.min(this.#opts.pollIntervalMs, Math.max(1, deadline - this.#clock.now())), signal));
    }
  }

  /** `read` for this caller; a failure gives the refresh lock `lock` back first (when this caller holds it). */
  async #read(read: LimitsRead, signal: AbortSignal | undefined, lock: string | undefined): Promise<LimitsReading> {
    try {
      throwIfAborted(signal);
      if (lock !== undefined) this.#locks.add(lock);
      return await read(signal);
    } catch (error) {
      // a failure: the lock goes back at once (should that fail, it expires by itself)
      if (lock !== undefined && !this.#closed) await this.#attempts((t) => this.#store.unlock(t, this.#caller, lock)).catch(() => undefined);
      if (lock !== undefined) this.#locks.delete(lock);
      throw error;
    }
  }

  /** The kept reading as handed out (`now`: the file's time of the transaction; `local`: this process's clock then). */
  #keptReading(kept: KeptReading, now: number, local: number): LedgerLimits {
    const first = this.#firstSeen.get(kept.seq);
    return { ...decodeReading(kept.json!), stamp: kept.seq, ageMs: Math.max(0, now - kept.sentAt, first === undefined ? 0 : local - first), shared: true };
  }

  /** The answer of an admission of the file (`res`) on `reading`: the claim this ledger now holds, or the place it queued. */
  #answer(request: AdmitRequest | AcquireRequest, args: AdmitArgs, res: AdmitResult, reading: LedgerLimits): Acquisition {
    const { inFlight, ahead, holders } = res;
    this.#members = res.members;
    if (!res.fits) {
      if (res.joinSeq === 0 || args.join === undefined) return { admitted: false, inFlight, ahead, holders, reading };
      this.#places.add(args.join.placeId);
      this.#wakes.joined(args.join.placeId);
      return { admitted: false, inFlight, ahead, holders, reading, place: { id: args.join.placeId, needs: { ...request.needs } } };
    }
    if (args.placeId !== '') this.#places.delete(args.placeId);
    this.#claims.set(args.claimId, args.needs);
    return { admitted: true, claim: { id: args.claimId, token: res.token, needs: { ...request.needs }, holder: this.holder }, inFlight, ahead, holders, reading };
  }

  /**
   * `limits`, then `inFlight` for its stamp: a reading and what an admission on it would subtract
   * for claims, claiming nothing (the guard's `headroom()`).
   * @throws {@link SqliteLedgerError} when the file fails; `AbortError` when `signal` aborts; what `read` throws.
   */
  async peek(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerPeek> {
    const reading = await this.limits(read, signal);
    return { reading, inFlight: await this.inFlight(reading.stamp) };
  }

  /** What {@link SqliteQuotaLedger.admit} would subtract for claims for a reading of `stamp` (a read-only transaction). */
  async inFlight(stamp: number): Promise<ResourceAmounts> {
    return this.#run((now) => this.#store.inFlight(now, Math.floor(stamp)));
  }

  /**
   * The ids of the file's claims, of every holder on the host, neither released nor past their
   * lease: the metadata `nova-guard-claim-id` of the servers they create (for the reaper's `liveClaims`).
   */
  async liveClaimIds(): Promise<string[]> {
    return this.#run((now) => this.#store.liveClaimIds(now));
  }

  async claimAnyway(needs: ResourceAmounts, ttlMs: number): Promise<LedgerClaim> {
    const n = wholeNeeds('claimAnyway', needs);
    const id = randomUUID();
    const token = await this.#run((now) => this.#store.claimAnyway(now, this.#caller, id, n, Math.ceil(ttlMs), this.holder));
    this.#claims.set(id, n);
    return { id, token, needs: { ...needs }, holder: this.holder };
  }

  /** The lease set to now + `ttlMs`; `false` when it is lost (expired, released, or unknown to the file). */
  async renew(claim: LedgerClaim, ttlMs: number): Promise<boolean> {
    const live = await this.#run((now) => this.#store.renew(now, this.#caller, claim.id, Math.ceil(ttlMs)));
    if (!live) this.#claims.delete(claim.id);
    return live;
  }

  async bind(claim: LedgerClaim, serverId: string): Promise<void> {
    await this.#quiet((now) => this.#store.bind(now, this.#caller, claim.id, serverId));
  }

  async release(claim: LedgerClaim, end: ClaimEnd): Promise<void> {
    this.#claims.delete(claim.id);
    await this.#quiet((now) => this.#store.release(now, this.#caller, claim.id, end === 'counted', wholeNeeds('release', claim.needs)));
  }

  /**
   * Tell every holder that quota was freed: this process's listeners at once, the other processes'
   * at their next poll of the file (`pollIntervalMs`). The kept `/limits` reading from before this
   * deletion stops being fresh. After `close()`: the local listeners only.
   */
  async publishFreed(_serverId: string, credit?: FreedCredit): Promise<void> {
    this.#freed.notifyOwn();
    if (this.#closed) return;
    const c = credit === undefined ? undefined : { claimId: credit.claimId, keptSeq: credit.keptSeq, apply: creditKept };
    await this.#run((now) => this.#store.freed(now, this.#caller, c));
    this.#freed.published();
  }

  /**
   * The order number of the reading kept in the file now, read without a write lock (a reading in
   * the file was stored; `QuotaLedger.keptSeen`); `undefined` when none is kept, the file cannot be
   * read, or the ledger is closed.
   */
  keptSeen(): number | undefined {
    if (this.#closed) return undefined;
    try {
      const seq = this.#store.keptSeq();
      return seq >= 0 ? seq : undefined;
    } catch {
      return undefined;
    }
  }

  onFreed(listener: () => void): () => void {
    return this.#freed.add(listener);
  }

  /**
   * Listen for the wake-ups of `place` (see `QuotaLedger.onWake`): a deletion confirmed in any
   * process of the file wakes the oldest place of this ledger object (one admission per process
   * that waits, not one per waiting call); that place leaving (admitted, or given up) wakes the next.
   */
  onWake(place: LedgerPlace, listener: () => void): () => void {
    const off = this.#wakes.listen(place.id, listener);
    // One poll listener while any place listens: a freed server wakes the oldest place once.
    if (this.#wakeListeners++ === 0) this.#offWakePoll = this.#freed.add(() => this.#wakes.wakeHead());
    let on = true;
    return () => {
      if (!on) return;
      on = false;
      off();
      if (--this.#wakeListeners === 0) {
        this.#offWakePoll?.();
        this.#offWakePoll = undefined;
      }
    };
  }

  /** The highest order number of a kept reading this process has seen for longer than `limitsMaxAgeMs` (-1: none). */
  #stale(): number {
    const now = this.#clock.now();
    for (const [seq, at] of this.#firstSeen) if (now - at > this.#opts.limitsMaxAgeMs) this.#staleSeq = Math.max(this.#staleSeq, seq);
    for (const seq of this.#firstSeen.keys()) if (seq <= this.#staleSeq) this.#firstSeen.delete(seq);
    return this.#staleSeq;
  }

  #saw(seq: number, at: number): void {
    if (seq > this.#staleSeq && !this.#firstSeen.has(seq)) this.#firstSeen.set(seq, at);
  }

  /**
   * A `/limits` reading: the kept one when fresh (by the host's monotonic clock stored in the file, after the
   * last confirmed deletion, and by this process's own clock), else one made through `read` under
   * the file's refresh lock and kept for the others. While another process refreshes, this one
   * polls the file every `pollIntervalMs` for at most `limitsLockMs + busyTimeoutMs`, then hands
   * out the stale kept reading (or, with none, reads on its own). A reading that was fresh when
   * this call first asked is fresh for it after such a wait (`FreshWhenAsked`).
   * @throws {@link SqliteLedgerError} when the file fails; `AbortError` when `signal` aborts; what
   * `read` throws (the refresh lock is given back first).
   */
  async limits(read: LimitsRead, signal: AbortSignal | undefined): Promise<LedgerLimits> {
    const lock = randomUUID();
    const deadline = this.#clock.now() + this.#opts.limitsLockMs + this.#opts.busyTimeoutMs;
    const fresh = new FreshWhenAsked(this.#clock, this.#opts.limitsMaxAgeMs);
    for (;;) {
      throwIfAborted(signal);
      const local = this.#clock.now();
      const begun = await this.#run((now) => this.#store.limitsBegin(now, this.#caller, { maxAgeMs: fresh.maxAgeMs(local), staleSeq: this.#stale(), lock, lockMs: this.#opts.limitsLockMs }));
      const { state, kept, sendSeq, now } = begun;
      if (state === 'fresh') {
        this.#saw(kept.seq, local);
        return this.#keptReading(kept, now, local);
      }
      if (state === 'lock' || this.#clock.now() >= deadline) {
        if (state !== 'lock' && kept.json !== undefined) return this.#keptReading(kept, now, local);
        const reading = await this.#read(read, signal, state === 'lock' ? lock : undefined);
        this.#saw(sendSeq, local);
        // A reading kept for the others is a bonus; this caller's reading stands even if the file fails now.
        if (!this.#closed) await this.#attempts((t) => this.#store.limitsStore(t, this.#caller, { json: encodeReading(reading), seq: sendSeq, sentAt: now, lock })).catch(() => undefined);
        this.#locks.delete(lock);
        return { absolute: reading.absolute, requestId: reading.requestId, stamp: sendSeq, ageMs: 0, shared: false };
      }
      // Another process's Nova read: Nova's time, not the ledger's (the guard's time limit pauses).
      await fresh.waitForOthers(read, this.#waitForReading(Math.min(this.#opts.pollIntervalMs, Math.max(1, deadline - this.#clock.now())), signal));
    }
  }

  /** Wait `ms` before the file is read again for a newer kept reading (rejects with `AbortError` on abort). */
  #waitForReading(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return sleep(this.#clock, ms, signal).catch(() => {
      throw new AbortError(undefined, { cause: signal?.reason });
    });
  }

  /**
   * True (the file is open): other processes may admit on it, so a guard whose call fails (the file
   * locked beyond `busyTimeoutMs`) waits for the ledger instead of admitting alone (`src/guard/degradedLedger.ts`).
   */
  everReached(): boolean {
    return true;
  }

  /** A local file: no round trip to budget for (`undefined`: the guard's `ledgerTimeoutMs` bounds each call). */
  callBudgetMs(): number | undefined {
    return undefined;
  }

  /**
   * Proves the file answers: a read of it.
   * @throws {@link SqliteLedgerError} when it cannot be read.
   */
  async probe(): Promise<void> {
    if (this.#closed) throw new ValidationError(`SqliteQuotaLedger ${this.path} is closed`);
    this.#store.keptSeq();
  }

  /**
   * Leaves every place, drops every claim this ledger holds (as not created: a create still in
   * flight is Nova's to count) and its holder entry, and closes the file (always, even when the
   * file fails). Calls of `leave`, `release`, `bind` and `publishFreed` after it resolve quietly.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#clock.clearTimeout(this.#beat);
    this.#freed.close();
    try {
      await this.#fleet?.close();
      // a failure (the file locked beyond busyTimeoutMs): what it held expires by its leases
      await this.#attempts((now) => this.#store.goodbye(now, this.#caller, [...this.#places], [...this.#claims.keys()], [...this.#locks])).catch(() => undefined);
    } finally {
      this.#places.clear();
      this.#locks.clear();
      this.#wakes.clear();
      this.#claims.clear();
      this.#store.close();
    }
  }

  toJSON(): Record<string, unknown> {
    return { kind: this.kind, holder: this.holder, path: this.path };
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `SqliteQuotaLedger { holder: ${JSON.stringify(this.holder)}, path: ${JSON.stringify(this.path)} }`;
  }
}
