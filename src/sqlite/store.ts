/**
 * The ledger file: one SQLite database per endpoint and project, in WAL mode, and the operations of
 * the ledger, each ONE `BEGIN IMMEDIATE` transaction (one writer at a time across every process of
 * the host; readers do not block), so the check and the claim of `admit` cannot interleave with
 * another process's. The tables mirror the Redis ledger's keys (`src/redis/scripts.ts`):
 *
 * - `claims(id, cores, ram, inst, token, holder, server_id, expires_at)`: live claims, leases in ms
 *   of the host's monotonic clock (`hostClock.ts`: never stepped, the same in every process);
 * - `counted(id, cores, ram, inst, ord, at)`: claims released as `'counted'`, by the order number of
 *   their release (kept {@link COUNTED_RETENTION_MS});
 * - `claim_admitted(id, ord)`: the order number (`ord`, not moved) at each claim's admission by
 *   `admit`, while its claim or its `'counted'` record is kept (none for `claimAnyway`: its POST
 *   may be older than the claim; a claim without a row counts as admitted before every reading);
 * - `places(id, seq, cores, ram, inst, expires_at)`: the queue, oldest `seq` first;
 * - `holders(instance, expires_at)`: the live holders (heartbeat);
 * - `meta(key, value)`: `scope` (the endpoint and project the file belongs to), `schema`, the
 *   counters `token` (fencing tokens), `seq` (join order), `ord` (order of readings, counted
 *   releases and confirmed deletions), the kept reading (`limits_json`, `limits_seq`,
 *   `limits_sent_at`; `limits_stored_ord`: the order number taken when it was stored, valid while
 *   `limits_stored_for` is its `limits_seq`), `freed_seq` (order number of the last confirmed deletion), `freed_count`, the refresh
 *   lock (`lock`, `lock_expires_at`), and the clock's `boot` id and highest reading `mono_high`
 *   (`schema.ts` `timeOfWrite`).
 *
 * Every write transaction first takes its time (`timeOfWrite`: never below the file's highest,
 * moved across a reboot), drops expired claims, places and holders and old `'counted'` records,
 * and renews the caller's holder entry (never shortening it). Every time given to or stored by
 * this class is in ms of the host's monotonic clock.
 *
 * The connection's own busy timeout is `NATIVE_BUSY_MS` (`busy.ts`): an operation on a file that
 * another process holds locked fails with `SQLITE_BUSY` within a few ms, and the ledger tries it
 * again asynchronously. An operation may be tried again: each is one transaction, all or nothing.
 *
 * @module
 */
import { dirname } from 'node:path';
import { ValidationError } from '../errors/index.js';
import { NO_NEEDS } from '../ledger/index.js';
import type { ResourceAmounts } from '../core/index.js';
import { loadSqlite, type Database, type Statement } from './native.js';
import { refuseNetworkFileSystem } from './fileSystem.js';
import { makeDirectory } from './directory.js';
import { checkLedgerFile } from './ledgerFile.js';
import { sqliteError } from './errors.js';
import { NATIVE_BUSY_MS, isBusy } from './busy.js';
import { bootId } from './hostClock.js';
import { STATEMENTS, checkOwner, setUp, timeOfRead, timeOfWrite, type StatementName } from './schema.js';

/** How long a claim released as `'counted'` stays subtracted from readings sent before it, in ms. */
export const COUNTED_RETENTION_MS = 10 * 60_000;

/** The kept `/limits` reading as the file holds it. */
export interface KeptReading {
  readonly json: string | undefined;
  readonly seq: number;
  readonly sentAt: number;
  readonly freedSeq: number;
  /** The order number taken when it was stored (its answer received); `Infinity` when unknown (stored by an older nova-guard). */
  readonly storedOrd: number;
}

/** What `admit` decided. */
export interface AdmitResult {
  readonly fits: boolean;
  readonly token: number;
  readonly inFlight: ResourceAmounts;
  readonly ahead: ResourceAmounts;
  readonly holders: number;
  /** The holder names of the live holders (`QuotaLedger.members`). */
  readonly members: readonly string[];
  /** The order number of the place the call was queued as (`AdmitArgs.join`), 0 when it was not. */
  readonly joinSeq: number;
}

/** The room of each resource (cores, RAM MiB, instances) a reading leaves before claims: `undefined` when unknown or unlimited. */
export type Room = readonly (number | undefined)[];

/** What an admission is asked beside its reading. */
export interface AdmitArgs {
  /** The caller's place ('' none). */
  readonly placeId: string;
  readonly needs: ResourceAmounts;
  readonly ttlMs: number;
  readonly holder: string;
  readonly claimId: string;
  /** Short with no place: queue the call as place `placeId` with a lease of `placeTtlMs`. */
  readonly join?: { readonly placeId: string; readonly placeTtlMs: number } | undefined;
}

/** Who runs a transaction: its holder instance (for the holder entry) and the lease of that entry. */
export interface Caller {
  readonly instance: string;
  readonly holderTtlMs: number;
}

type Row = { cores: number; ram: number; inst: number };

const sum = (rows: readonly Row[]): ResourceAmounts => {
  const out = { ...NO_NEEDS };
  for (const r of rows) {
    out.cores += r.cores;
    out.ramMiB += r.ram;
    out.instances += r.inst;
  }
  return out;
};

/** One open ledger file. */
export class LedgerStore {
  readonly #db: Database;
  readonly #path: string;
  readonly #scope: string;
  readonly #shiftFromWall: () => number;
  readonly #boot = bootId();
  #stmts: Record<StatementName, Statement> | undefined;

  /**
   * Opens (creating when missing) the ledger file `path` of `scope` (`<endpoint>\n<project>`).
   * While another process holds the file locked, what needs the write lock (the tables of a new
   * file, its owner) is left to the first operation, which is tried again until the lock is free.
   * @param shiftFromWall - (monotonic now - wall now) in ms: moves a schema-1 file's wall-clock times.
   * @throws `ConfigError` when better-sqlite3 cannot be loaded; `ValidationError` when the
   * directory is on a network file system, the file belongs to another scope, the path is not a
   * regular file (a device, a directory, a FIFO) or a file that is not a SQLite database;
   * `SqliteLedgerError` when the file cannot be created or opened, or is not a SQLite database.
   */
  constructor(path: string, scope: string, shiftFromWall: () => number) {
    const Sqlite = loadSqlite();
    this.#path = path;
    this.#scope = scope;
    this.#shiftFromWall = shiftFromWall;
    const dir = dirname(path);
    try {
      makeDirectory(dir, 0o700);
    } catch (error) {
      // makeDirectory names a regular file in the way ("X is not a directory, so Y cannot be made").
      throw sqliteError(path, 'creating its directory', error);
    }
    refuseNetworkFileSystem(dir);
    checkLedgerFile(path);
    let db: Database;
    try {
      db = new Sqlite(path, { timeout: NATIVE_BUSY_MS });
    } catch (error) {
      throw sqliteError(path, 'opening', error);
    }
    this.#db = db;
    try {
      this.#ready();
    } catch (error) {
      if (isBusy(error)) return; // the first operation sets it up
      db.close();
      throw error;
    }
  }

  /** The statements, once the file is set up and its owner checked (done at the first call that can). */
  #ready(): Record<StatementName, Statement> {
    if (this.#stmts !== undefined) return this.#stmts;
    if (!this.#db.open) throw sqliteError(this.#path, 'using it', Object.assign(new Error('the ledger is closed'), { code: 'NOVA_GUARD_CLOSED' }));
    const db = this.#db;
    try {
      setUp(db);
      checkOwner(db, this.#path, this.#scope, (fn) => db.transaction(fn).immediate(), this.#shiftFromWall);
      const stmts = {} as Record<StatementName, Statement>;
      for (const [name, sql] of Object.entries(STATEMENTS)) stmts[name as StatementName] = db.prepare(sql);
      this.#stmts = stmts;
      return stmts;
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw sqliteError(this.#path, 'opening', error);
    }
  }

  get #s(): Record<StatementName, Statement> {
    return this.#ready();
  }

  /** The file's path. */
  get path(): string {
    return this.#path;
  }

  /** True until {@link close}. */
  get open(): boolean {
    return this.#db.open;
  }

  #meta(key: string): unknown {
    return (this.#s.meta.get(key) as { value: unknown } | undefined)?.value;
  }

  #num(key: string, dflt = 0): number {
    const v = this.#meta(key);
    return v === undefined || v === null ? dflt : Number(v);
  }

  #next(key: string): number {
    const n = this.#num(key) + 1;
    this.#s.setMeta.run(key, n);
    return n;
  }

  /** `fn` in one `BEGIN IMMEDIATE` transaction; SQLite's errors as `SqliteLedgerError`, others as thrown. */
  #tx<T>(what: string, fn: () => T): T {
    if (!this.#db.open) throw sqliteError(this.#path, what, Object.assign(new Error('the ledger is closed'), { code: 'NOVA_GUARD_CLOSED' }));
    this.#ready();
    try {
      return this.#db.transaction(fn).immediate();
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw sqliteError(this.#path, what, error);
    }
  }

  /**
   * A write transaction: takes its time from `now` (`timeOfWrite`), drops what expired by then and
   * renews the caller's holder entry first; `fn` gets that time.
   */
  #write<T>(what: string, now: number, caller: Caller, fn: (now: number) => T): T {
    return this.#tx(what, () => {
      const at = timeOfWrite(this.#db, now, this.#boot);
      // a claim that lapsed (its holder died or hung) may have a server no kept reading counts: stale
      const lapsed = this.#s.dropClaims.run(at).changes > 0;
      if (lapsed) this.#s.setMeta.run('freed_seq', this.#next('ord'));
      this.#s.dropPlaces.run(at);
      if (this.#s.dropCounted.run(at - COUNTED_RETENTION_MS).changes > 0 || lapsed) this.#s.dropAdmittedGone.run();
      this.#s.dropHolders.run(at);
      this.#s.holder.run(caller.instance, at + caller.holderTtlMs);
      return fn(at);
    });
  }

  #holders(now: number): number {
    return Number((this.#s.holders.get(now) as { n: number }).n);
  }

  /** The holder names of the live holders (each entry is `<uuid> <holder>`: the instance of its `Caller`). */
  #members(now: number): string[] {
    return (this.#s.holderEntries.all(now) as Array<{ instance: string }>).map(({ instance }) => {
      const space = instance.indexOf(' ');
      return space < 0 ? instance : instance.slice(space + 1);
    });
  }

  /**
   * Live claims plus the claims released as `'counted'` at or after `stamp` (an order number); with
   * `admittedFrom`, only those of them admitted at or after that order number (`claim_admitted`).
   */
  #inFlight(now: number, stamp: number, admittedFrom?: number): ResourceAmounts {
    const live = sum(this.#s.liveClaims.all(now) as Row[]);
    const since = now - COUNTED_RETENTION_MS;
    const late = sum((admittedFrom === undefined ? this.#s.countedSince.all(stamp, since) : this.#s.countedSinceAdmittedFrom.all(stamp, since, admittedFrom)) as Row[]);
    return { cores: live.cores + late.cores, ramMiB: live.ramMiB + late.ramMiB, instances: live.instances + late.instances };
  }

  /**
   * The admission's check alone: whether `needs` fits `room` after subtracting `inFlight` and the
   * places ahead (a resource neither the call nor the places ahead need never blocks: the guard's
   * `fitsRawHeadroom`).
   */
  #fits(a: AdmitArgs & { room: Room }, inFlight: ResourceAmounts, ahead: ResourceAmounts): boolean {
    const need = [a.needs.cores, a.needs.ramMiB, a.needs.instances];
    const used = [inFlight.cores + ahead.cores, inFlight.ramMiB + ahead.ramMiB, inFlight.instances + ahead.instances];
    const want = [need[0]! + ahead.cores, need[1]! + ahead.ramMiB, need[2]! + ahead.instances];
    return a.room.every((room, r) => room === undefined || want[r]! <= 0 || room - used[r]! - need[r]! >= 0);
  }

  /** The needs of the places ahead of `placeId` (every place when it has none or its place is gone). */
  #ahead(placeId: string): ResourceAmounts {
    const mine = placeId === '' ? undefined : (this.#s.place.get(placeId) as { seq: number } | undefined);
    return sum((mine === undefined ? this.#s.allPlaces.all(placeId) : this.#s.placesBefore.all(mine.seq, placeId)) as Row[]);
  }

  /**
   * A kept reading of order number `stamp`, stored at order number `storedOrd`, leaves the needs
   * short only because of claims released as `'counted'` after it was sent that it may count
   * already: admitted before it was stored (or not known when), so their POST may have reached Nova
   * before Nova answered it, and Nova may have counted their servers before the guard saw it and
   * ended their claims. "Short" on it may then count them twice, and the caller reads `/limits`
   * instead (the protocol, step 2, in `ledger/port.ts`). A late claim admitted after the reading was
   * stored cannot be in it (its POST was sent after Nova's answer came): it stays subtracted, and a
   * reading short with it is answered on.
   */
  #mayCountTwice(now: number, a: AdmitArgs & { room: Room; stamp: number }, storedOrd: number): boolean {
    const ahead = this.#ahead(a.placeId);
    if (this.#fits(a, this.#inFlight(now, a.stamp), ahead)) return false;
    return this.#fits(a, this.#inFlight(now, a.stamp, storedOrd), ahead);
  }

  /**
   * The admission: subtract live claims, claims released as `'counted'` at or after `stamp`, and the
   * needs of every place ahead of `placeId` (every place when it has none or it is gone); claim when
   * `needs` still fits every resource `room` constrains (`undefined`: unknown or unlimited) that the
   * call or the places ahead need. Short with no place and `join`: the call queued (`joinSeq`).
   */
  admit(now: number, caller: Caller, a: AdmitArgs & { room: Room; stamp: number }): AdmitResult {
    return this.#write('admit', now, caller, (now) => this.#admitIn(now, a, true));
  }

  /** {@link LedgerStore.admit} inside a transaction; `claim` false: decide only (nothing taken; a short call still joins). */
  #admitIn(now: number, a: AdmitArgs & { room: Room; stamp: number }, claim: boolean): AdmitResult {
    const inFlight = this.#inFlight(now, a.stamp);
    const ahead = this.#ahead(a.placeId);
    const fits = this.#fits(a, inFlight, ahead);
    let token = 0;
    let joinSeq = 0;
    if (fits && claim) {
      token = this.#next('token');
      this.#s.addClaim.run(a.claimId, a.needs.cores, a.needs.ramMiB, a.needs.instances, token, a.holder, now + a.ttlMs);
      // the order of its admission: its POST comes later, so a reading stored before now cannot count its server
      this.#s.addAdmitted.run(a.claimId, this.#num('ord'));
      if (a.placeId !== '') this.#s.dropPlace.run(a.placeId);
    }
    if (!fits && a.join !== undefined && a.placeId === '') {
      joinSeq = this.#next('seq');
      this.#s.addPlace.run(a.join.placeId, joinSeq, a.needs.cores, a.needs.ramMiB, a.needs.instances, now + a.join.placeTtlMs);
    }
    const members = this.#members(now);
    return { fits, token, inFlight, ahead, holders: members.length, members, joinSeq };
  }

  /**
   * The first transaction of an admission with its reading (`SqliteQuotaLedger.acquire`), as
   * {@link LedgerStore.limitsBegin} decides on the kept reading, with the admission in the same
   * transaction: a fresh kept reading is admitted on at once (state `fresh`, with `result`); a kept
   * reading that is not fresh but at most `shortMaxAgeMs` old and sent after the last confirmed
   * deletion, and that leaves the needs short, answers short (state `short`, with `result`: no
   * claim, the call queued when asked); otherwise the refresh lock (`lock`) or `wait`. A kept
   * reading short only by late `'counted'` claims it may count already (admitted before it was
   * stored, or with no `claim_admitted` row: `#mayCountTwice`) is taken as not fresh. `roomOf`
   * turns a kept reading's JSON into the room of each resource.
   */
  acquireBegin(
    now: number,
    caller: Caller,
    a: AdmitArgs & { maxAgeMs: number; staleSeq: number; shortMaxAgeMs: number; lock: string; lockMs: number; roomOf: (json: string) => Room },
  ): { state: 'fresh' | 'short' | 'lock' | 'wait'; kept: KeptReading; sendSeq: number; now: number; result?: AdmitResult } {
    return this.#write('acquire', now, caller, (now) => {
      const kept = this.#kept();
      const json = kept.json;
      const recent = (maxAgeMs: number): boolean => json !== undefined && kept.sentAt <= now && now - kept.sentAt <= maxAgeMs && kept.seq > kept.freedSeq;
      const on = json === undefined ? undefined : { ...a, room: a.roomOf(json), stamp: kept.seq };
      // Short only by claims released after it was sent: read again rather than answer on it.
      const usable = (maxAgeMs: number): boolean => on !== undefined && recent(maxAgeMs) && !this.#mayCountTwice(now, on, kept.storedOrd);
      if (kept.seq > a.staleSeq && usable(a.maxAgeMs)) return { state: 'fresh' as const, kept, sendSeq: 0, now, result: this.#admitIn(now, on!, true) };
      if (a.shortMaxAgeMs > 0 && usable(a.shortMaxAgeMs)) {
        const result = this.#admitIn(now, on!, false);
        if (!result.fits) return { state: 'short' as const, kept, sendSeq: 0, now, result };
      }
      return { ...this.#lockOrWait(now, a.lock, a.lockMs), kept, now };
    });
  }

  /**
   * The second transaction of an admission with its reading, after the caller's read: the reading
   * kept for the others (unless a newer one is), the refresh lock freed when still `lock`, and the
   * admission on the reading (order number `seq`), as one transaction.
   */
  storeAdmit(now: number, caller: Caller, a: AdmitArgs & { json: string; seq: number; sentAt: number; lock: string; room: Room }): AdmitResult {
    return this.#write('acquire', now, caller, (now) => {
      this.#keep(a);
      return this.#admitIn(now, { ...a, stamp: a.seq }, true);
    });
  }

  /** A claim without a check; returns its fencing token. */
  claimAnyway(now: number, caller: Caller, claimId: string, needs: ResourceAmounts, ttlMs: number, holder: string): number {
    return this.#write('claimAnyway', now, caller, (now) => {
      const token = this.#next('token');
      this.#s.addClaim.run(claimId, needs.cores, needs.ramMiB, needs.instances, token, holder, now + ttlMs);
      return token;
    });
  }

  /** A place at the end of the queue; returns its join order. */
  join(now: number, caller: Caller, placeId: string, needs: ResourceAmounts, placeTtlMs: number): number {
    return this.#write('join', now, caller, (now) => {
      const seq = this.#next('seq');
      this.#s.addPlace.run(placeId, seq, needs.cores, needs.ramMiB, needs.instances, now + placeTtlMs);
      return seq;
    });
  }

  /** Leave the queue (idempotent). */
  leave(now: number, caller: Caller, placeId: string): void {
    this.#write('leave', now, caller, () => this.#s.dropPlace.run(placeId));
  }

  /** The lease of a live claim set to `now + ttlMs`; false when the claim is gone (expired or released). */
  renew(now: number, caller: Caller, claimId: string, ttlMs: number): boolean {
    return this.#write('renew', now, caller, (now) => this.#s.renew.run(now + ttlMs, claimId).changes === 1);
  }

  /** Note the server a claim's create made. */
  bind(now: number, caller: Caller, claimId: string, serverId: string): void {
    this.#write('bind', now, caller, () => this.#s.bind.run(serverId, claimId));
  }

  /** End a claim; a `'counted'` end is kept with its order number (idempotent). */
  release(now: number, caller: Caller, claimId: string, counted: boolean, needs: ResourceAmounts): void {
    this.#write('release', now, caller, (now) => {
      this.#s.dropClaim.run(claimId);
      if (counted) this.#s.addCounted.run(claimId, needs.cores, needs.ramMiB, needs.instances, this.#next('ord'), now);
      else this.#s.dropAdmitted.run(claimId);
    });
  }

  /** Heartbeat: the caller's holder entry and its places still in the file renewed; returns the holder names of the live holders. */
  heartbeat(now: number, caller: Caller, placeIds: readonly string[], placeTtlMs: number): string[] {
    return this.#write('heartbeat', now, caller, (now) => {
      for (const id of placeIds) this.#s.renewPlace.run(now + placeTtlMs, id);
      return this.#members(now);
    });
  }

  /**
   * A confirmed deletion: `freed_count` (the number of confirmed deletions) goes up by one (the
   * answer: the new count, and whether the credit held). With a `credit` that holds (see
   * `FreedCredit`, `src/ledger/port.ts`: the kept reading is the one of `keptSeq`, the claim's
   * `'counted'` record is older than that reading and within the retention, and the claim was not
   * credited into that reading yet), the kept reading becomes `credit.apply(json, needs)` (the
   * claim's needs subtracted from its usage) and stays fresh; otherwise (or when `apply` answers
   * `undefined`) the deletion's order number becomes `freed_seq`: older readings are no longer fresh.
   */
  freed(now: number, caller: Caller, credit?: { claimId: string; keptSeq: number; apply: (json: string, needs: ResourceAmounts) => string | undefined }): { count: number; credited: boolean } {
    return this.#write('publishFreed', now, caller, (now) => {
      const credited = credit !== undefined && this.#credit(now, credit);
      if (!credited) this.#s.setMeta.run('freed_seq', this.#next('ord'));
      return { count: this.#next('freed_count'), credited };
    });
  }

  /** The credit of {@link freed}, inside its transaction: true when it held and the kept reading was rewritten. */
  #credit(now: number, c: { claimId: string; keptSeq: number; apply: (json: string, needs: ResourceAmounts) => string | undefined }): boolean {
    const kept = this.#kept();
    if (kept.json === undefined || kept.seq !== c.keptSeq) return false;
    const row = this.#s.countedOne.get(c.claimId, now - COUNTED_RETENTION_MS) as { cores: number; ram: number; inst: number; ord: number } | undefined;
    if (row === undefined || !(row.ord < kept.seq)) return false;
    const done = String(this.#meta('limits_credited') ?? '');
    if (done.split(',').includes(c.claimId)) return false;
    const json = c.apply(kept.json, { cores: row.cores, ramMiB: row.ram, instances: row.inst });
    if (json === undefined) return false;
    this.#s.setMeta.run('limits_json', json);
    this.#s.setMeta.run('limits_credited', done === '' ? c.claimId : `${done},${c.claimId}`);
    return true;
  }

  /** `freed_count`, read without a write lock (WAL readers do not block). */
  freedCount(): number {
    try {
      return this.#num('freed_count');
    } catch (error) {
      throw sqliteError(this.#path, 'reading freed_count', error);
    }
  }

  /** The kept reading's order number, read without a write lock. */
  keptSeq(): number {
    try {
      return this.#num('limits_seq', -1);
    } catch (error) {
      throw sqliteError(this.#path, 'reading limits_seq', error);
    }
  }

  #kept(): KeptReading {
    const json = this.#meta('limits_json');
    const seq = this.#num('limits_seq', -1);
    // stored by an older nova-guard (no order of its storing): every late claim may be in it
    const storedOrd = this.#num('limits_stored_for', -1) === seq ? this.#num('limits_stored_ord', Infinity) : Infinity;
    return { json: typeof json === 'string' ? json : undefined, seq, sentAt: this.#num('limits_sent_at', -1), freedSeq: this.#num('freed_seq', -1), storedOrd };
  }

  /**
   * The kept reading, and whether it is fresh: sent no later than `now`, at most `maxAgeMs` old,
   * after the last confirmed deletion, and newer than `staleSeq`. When it is not fresh: the refresh
   * lock for `lock` when free (state `lock`, with the order number of the read the caller sends
   * now), else state `wait` (with an order number for a read of the caller's own). `now`: the
   * transaction's time (`timeOfWrite`).
   */
  limitsBegin(now: number, caller: Caller, a: { maxAgeMs: number; staleSeq: number; lock: string; lockMs: number }): { state: 'fresh' | 'lock' | 'wait'; kept: KeptReading; sendSeq: number; holders: number; now: number } {
    return this.#write('limits', now, caller, (now) => {
      const kept = this.#kept();
      const fresh = kept.json !== undefined && kept.sentAt <= now && now - kept.sentAt <= a.maxAgeMs && kept.seq > kept.freedSeq && kept.seq > a.staleSeq;
      if (fresh) return { state: 'fresh' as const, kept, sendSeq: 0, holders: this.#holders(now), now };
      return { ...this.#lockOrWait(now, a.lock, a.lockMs), kept, holders: this.#holders(now), now };
    });
  }

  /** The refresh lock for `lock` when free (`lock`), else `wait`; either way the order number of a read sent now. */
  #lockOrWait(now: number, lock: string, lockMs: number): { state: 'lock' | 'wait'; sendSeq: number } {
    const held = this.#meta('lock');
    const free = held === undefined || held === null || held === '' || this.#num('lock_expires_at') <= now;
    if (free) {
      this.#s.setMeta.run('lock', lock);
      this.#s.setMeta.run('lock_expires_at', now + lockMs);
    }
    return { state: free ? 'lock' : 'wait', sendSeq: this.#next('ord') };
  }

  /** Keep a reading sent at `sentAt` with order number `seq` unless a newer one is kept; free the lock if it is still `lock`. */
  limitsStore(now: number, caller: Caller, a: { json: string; seq: number; sentAt: number; lock: string }): void {
    this.#write('storing a reading', now, caller, () => this.#keep(a));
  }

  /** Keep the reading unless a newer one is kept; free the lock if it is still `lock` (inside a transaction). */
  #keep(a: { json: string; seq: number; sentAt: number; lock: string }): void {
    if (this.#num('limits_seq', -1) < a.seq) {
      this.#s.setMeta.run('limits_json', a.json);
      this.#s.setMeta.run('limits_credited', '');
      this.#s.setMeta.run('limits_seq', a.seq);
      this.#s.setMeta.run('limits_sent_at', a.sentAt);
      // its answer is in: a claim admitted from now on is POSTed after Nova answered it
      this.#s.setMeta.run('limits_stored_ord', this.#next('ord'));
      this.#s.setMeta.run('limits_stored_for', a.seq);
    }
    if (this.#meta('lock') === a.lock) this.#s.setMeta.run('lock', '');
  }

  /** Free the refresh lock if it is still `lock` (after a failed read). */
  unlock(now: number, caller: Caller, lock: string): void {
    this.#write('unlock', now, caller, () => {
      if (this.#meta('lock') === lock) this.#s.setMeta.run('lock', '');
    });
  }

  /**
   * `fn(db, at)` in one `BEGIN IMMEDIATE` transaction at the file's time `at` (`timeOfWrite`), with
   * none of the ledger's own chores: the fleet watcher's tables (`fleetStore.ts`).
   */
  writeAt<T>(what: string, now: number, fn: (db: Database, at: number) => T): T {
    return this.#tx(what, () => fn(this.#db, timeOfWrite(this.#db, now, this.#boot)));
  }

  /** `fn(db, at)` in one read transaction at the file's time `at` (`timeOfRead`): no write lock. */
  readAt<T>(what: string, now: number, fn: (db: Database, at: number) => T): T {
    try {
      this.#ready();
      return this.#db.transaction(() => fn(this.#db, timeOfRead(this.#db, now, this.#boot)))();
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw sqliteError(this.#path, what, error);
    }
  }

  /** What `admit` would subtract for claims for a reading of `stamp` (a read-only transaction). */
  inFlight(now: number, stamp: number): ResourceAmounts {
    try {
      this.#ready();
      return this.#db.transaction(() => this.#inFlight(timeOfRead(this.#db, now, this.#boot), stamp))();
    } catch (error) {
      throw sqliteError(this.#path, 'inFlight', error);
    }
  }

  /** The ids of the live claims, oldest token first (read-only). */
  liveClaimIds(now: number): string[] {
    try {
      this.#ready();
      return this.#db.transaction(() => (this.#s.liveClaimIds.all(timeOfRead(this.#db, now, this.#boot)) as Array<{ id: string }>).map((r) => r.id))();
    } catch (error) {
      throw sqliteError(this.#path, 'liveClaimIds', error);
    }
  }

  /** Leave `places`, drop `claims` (not created) and the caller's holder entry, and give back the refresh lock when it is one of `locks`, in one transaction. */
  goodbye(now: number, caller: Caller, places: readonly string[], claims: readonly string[], locks: readonly string[] = []): void {
    this.#tx('close', () => {
      for (const id of places) this.#s.dropPlace.run(id);
      for (const id of claims) {
        this.#s.dropClaim.run(id);
        this.#s.dropAdmitted.run(id);
      }
      // a refresh lock of this object's read in flight: the others read at once instead of waiting it out
      if (locks.includes(String(this.#meta('lock') ?? ''))) this.#s.setMeta.run('lock', '');
      this.#s.goodbye.run(caller.instance);
      void now;
    });
  }

  /** Close the file (idempotent). */
  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

