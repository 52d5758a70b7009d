/**
 * The ledger file: one SQLite database per endpoint and project, in WAL mode, and the operations of
 * the ledger, each ONE `BEGIN IMMEDIATE` transaction (one writer at a time across every process of
 * the host; readers do not block), so the check and the claim of `admit` cannot interleave with
 * another process's. The tables mirror the Redis ledger's keys (`src/redis/scripts.ts`):
 *
 * - `claims(id, cores, ram, inst, token, holder, server_id, expires_at)`: live claims, leases in ms
 *   on the host's wall clock;
 * - `counted(id, cores, ram, inst, ord, at)`: claims released as `'counted'`, by the order number of
 *   their release (kept {@link COUNTED_RETENTION_MS});
 * - `places(id, seq, cores, ram, inst, expires_at)`: the queue, oldest `seq` first;
 * - `holders(instance, expires_at)`: the live holders (heartbeat);
 * - `meta(key, value)`: `scope` (the endpoint and project the file belongs to), `schema`, the
 *   counters `token` (fencing tokens), `seq` (join order), `ord` (order of readings, counted
 *   releases and confirmed deletions), the kept reading (`limits_json`, `limits_seq`,
 *   `limits_sent_at`), `freed_seq` (order number of the last confirmed deletion), `freed_count`, and the refresh
 *   lock (`lock`, `lock_expires_at`).
 *
 * Every write transaction first drops expired claims, places and holders and old `'counted'`
 * records, and renews the caller's holder entry (never shortening it).
 *
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ValidationError } from '../errors/index.js';
import { NO_NEEDS } from '../guard/headroom.js';
import type { ResourceAmounts } from '../core/index.js';
import { loadSqlite, type Database, type Statement } from './native.js';
import { refuseNetworkFileSystem } from './fileSystem.js';
import { sqliteError } from './errors.js';

/** How long a claim released as `'counted'` stays subtracted from readings sent before it, in ms. */
export const COUNTED_RETENTION_MS = 10 * 60_000;

/** The schema version written into `meta`. */
const SCHEMA = 1;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (id TEXT PRIMARY KEY, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, token INTEGER NOT NULL, holder TEXT NOT NULL, server_id TEXT, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS counted (id TEXT PRIMARY KEY, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, ord INTEGER NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS places (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS holders (instance TEXT PRIMARY KEY, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS places_seq ON places (seq);
`;

/** The kept `/limits` reading as the file holds it. */
export interface KeptReading {
  readonly json: string | undefined;
  readonly seq: number;
  readonly sentAt: number;
  readonly freedSeq: number;
}

/** What `admit` decided. */
export interface AdmitResult {
  readonly fits: boolean;
  readonly token: number;
  readonly inFlight: ResourceAmounts;
  readonly ahead: ResourceAmounts;
  readonly holders: number;
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
  readonly #s: Record<string, Statement>;

  /**
   * Opens (creating when missing) the ledger file `path` of `scope` (`<endpoint>\n<project>`).
   * @throws `ConfigError` when better-sqlite3 cannot be loaded; `ValidationError` when the
   * directory is on a network file system or the file belongs to another scope;
   * `SqliteLedgerError` when the file cannot be created or opened, or is not a SQLite database.
   */
  constructor(path: string, scope: string, busyTimeoutMs: number) {
    const Sqlite = loadSqlite();
    this.#path = path;
    const dir = dirname(path);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw sqliteError(path, 'creating its directory', error);
    }
    refuseNetworkFileSystem(dir);
    let db: Database | undefined;
    try {
      db = new Sqlite(path, { timeout: busyTimeoutMs });
      const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
      if (mode.toLowerCase() !== 'wal') throw new Error(`journal_mode is ${mode}, not wal`);
      db.pragma('synchronous = NORMAL');
      db.exec(DDL);
    } catch (error) {
      db?.close();
      throw sqliteError(path, 'opening', error);
    }
    this.#db = db;
    const q = (sql: string): Statement => db.prepare(sql);
    this.#s = {
      meta: q('SELECT value FROM meta WHERE key = ?'),
      setMeta: q('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      dropClaims: q('DELETE FROM claims WHERE expires_at <= ?'),
      dropPlaces: q('DELETE FROM places WHERE expires_at <= ?'),
      dropCounted: q('DELETE FROM counted WHERE at <= ?'),
      dropHolders: q('DELETE FROM holders WHERE expires_at <= ?'),
      holder: q('INSERT INTO holders (instance, expires_at) VALUES (?, ?) ON CONFLICT (instance) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)'),
      holders: q('SELECT count(*) AS n FROM holders WHERE expires_at > ?'),
      goodbye: q('DELETE FROM holders WHERE instance = ?'),
      liveClaims: q('SELECT cores, ram, inst FROM claims WHERE expires_at > ?'),
      liveClaimIds: q('SELECT id FROM claims WHERE expires_at > ? ORDER BY token'),
      countedSince: q('SELECT cores, ram, inst FROM counted WHERE ord >= ? AND at > ?'),
      place: q('SELECT seq FROM places WHERE id = ?'),
      placesBefore: q('SELECT cores, ram, inst FROM places WHERE seq < ? AND id <> ?'),
      allPlaces: q('SELECT cores, ram, inst FROM places WHERE id <> ?'),
      addClaim: q('INSERT INTO claims (id, cores, ram, inst, token, holder, server_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)'),
      addPlace: q('INSERT INTO places (id, seq, cores, ram, inst, expires_at) VALUES (?, ?, ?, ?, ?, ?)'),
      dropPlace: q('DELETE FROM places WHERE id = ?'),
      renewPlace: q('UPDATE places SET expires_at = max(expires_at, ?) WHERE id = ?'),
      renew: q('UPDATE claims SET expires_at = ? WHERE id = ?'),
      bind: q('UPDATE claims SET server_id = ? WHERE id = ?'),
      dropClaim: q('DELETE FROM claims WHERE id = ?'),
      addCounted: q('INSERT OR IGNORE INTO counted (id, cores, ram, inst, ord, at) VALUES (?, ?, ?, ?, ?, ?)'),
    };
    this.#tx('checking its owner', () => {
      const owner = this.#meta('scope');
      if (owner === undefined) {
        this.#s.setMeta!.run('scope', scope);
        this.#s.setMeta!.run('schema', SCHEMA);
      } else if (owner !== scope) {
        throw new ValidationError(`the SQLite ledger file ${path} belongs to ${JSON.stringify(String(owner).replace('\n', ' project '))}, not ${JSON.stringify(scope.replace('\n', ' project '))}: give each endpoint and project its own file (a directory as the path gives one file each)`);
      }
      const schema = Number(this.#meta('schema'));
      if (schema !== SCHEMA) throw new ValidationError(`the SQLite ledger file ${path} has schema ${schema}, this nova-guard writes ${SCHEMA}: delete the file (it holds only leases and queue places)`);
    });
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
    return (this.#s.meta!.get(key) as { value: unknown } | undefined)?.value;
  }

  #num(key: string, dflt = 0): number {
    const v = this.#meta(key);
    return v === undefined || v === null ? dflt : Number(v);
  }

  #next(key: string): number {
    const n = this.#num(key) + 1;
    this.#s.setMeta!.run(key, n);
    return n;
  }

  /** `fn` in one `BEGIN IMMEDIATE` transaction; SQLite's errors as `SqliteLedgerError`, others as thrown. */
  #tx<T>(what: string, fn: () => T): T {
    if (!this.#db.open) throw sqliteError(this.#path, what, Object.assign(new Error('the ledger is closed'), { code: 'NOVA_GUARD_CLOSED' }));
    try {
      return this.#db.transaction(fn).immediate();
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw sqliteError(this.#path, what, error);
    }
  }

  /** A write transaction: drops what expired by `now` (wall ms) and renews the caller's holder entry first. */
  #write<T>(what: string, now: number, caller: Caller, fn: () => T): T {
    return this.#tx(what, () => {
      this.#s.dropClaims!.run(now);
      this.#s.dropPlaces!.run(now);
      this.#s.dropCounted!.run(now - COUNTED_RETENTION_MS);
      this.#s.dropHolders!.run(now);
      this.#s.holder!.run(caller.instance, now + caller.holderTtlMs);
      return fn();
    });
  }

  #holders(now: number): number {
    return Number((this.#s.holders!.get(now) as { n: number }).n);
  }

  /** Live claims plus the claims released as `'counted'` at or after `stamp` (an order number). */
  #inFlight(now: number, stamp: number): ResourceAmounts {
    const live = sum(this.#s.liveClaims!.all(now) as Row[]);
    const late = sum(this.#s.countedSince!.all(stamp, now - COUNTED_RETENTION_MS) as Row[]);
    return { cores: live.cores + late.cores, ramMiB: live.ramMiB + late.ramMiB, instances: live.instances + late.instances };
  }

  /**
   * The admission: subtract live claims, claims released as `'counted'` at or after `stamp`, and the
   * needs of every place ahead of `placeId` (every place when it has none or it is gone); claim when
   * `needs` still fits every resource `room` constrains (`undefined`: unknown or unlimited).
   */
  admit(now: number, caller: Caller, a: { room: readonly (number | undefined)[]; placeId: string; needs: ResourceAmounts; stamp: number; ttlMs: number; holder: string; claimId: string }): AdmitResult {
    return this.#write('admit', now, caller, () => {
      const inFlight = this.#inFlight(now, a.stamp);
      const mine = a.placeId === '' ? undefined : (this.#s.place!.get(a.placeId) as { seq: number } | undefined);
      const ahead = sum((mine === undefined ? this.#s.allPlaces!.all(a.placeId) : this.#s.placesBefore!.all(mine.seq, a.placeId)) as Row[]);
      const need = [a.needs.cores, a.needs.ramMiB, a.needs.instances];
      const used = [inFlight.cores + ahead.cores, inFlight.ramMiB + ahead.ramMiB, inFlight.instances + ahead.instances];
      const fits = a.room.every((room, r) => room === undefined || room - used[r]! - need[r]! >= 0);
      let token = 0;
      if (fits) {
        token = this.#next('token');
        this.#s.addClaim!.run(a.claimId, a.needs.cores, a.needs.ramMiB, a.needs.instances, token, a.holder, now + a.ttlMs);
        if (a.placeId !== '') this.#s.dropPlace!.run(a.placeId);
      }
      return { fits, token, inFlight, ahead, holders: this.#holders(now) };
    });
  }

  /** A claim without a check; returns its fencing token. */
  claimAnyway(now: number, caller: Caller, claimId: string, needs: ResourceAmounts, ttlMs: number, holder: string): number {
    return this.#write('claimAnyway', now, caller, () => {
      const token = this.#next('token');
      this.#s.addClaim!.run(claimId, needs.cores, needs.ramMiB, needs.instances, token, holder, now + ttlMs);
      return token;
    });
  }

  /** A place at the end of the queue; returns its join order. */
  join(now: number, caller: Caller, placeId: string, needs: ResourceAmounts, placeTtlMs: number): number {
    return this.#write('join', now, caller, () => {
      const seq = this.#next('seq');
      this.#s.addPlace!.run(placeId, seq, needs.cores, needs.ramMiB, needs.instances, now + placeTtlMs);
      return seq;
    });
  }

  /** Leave the queue (idempotent). */
  leave(now: number, caller: Caller, placeId: string): void {
    this.#write('leave', now, caller, () => this.#s.dropPlace!.run(placeId));
  }

  /** The lease of a live claim set to `now + ttlMs`; false when the claim is gone (expired or released). */
  renew(now: number, caller: Caller, claimId: string, ttlMs: number): boolean {
    return this.#write('renew', now, caller, () => this.#s.renew!.run(now + ttlMs, claimId).changes === 1);
  }

  /** Note the server a claim's create made. */
  bind(now: number, caller: Caller, claimId: string, serverId: string): void {
    this.#write('bind', now, caller, () => this.#s.bind!.run(serverId, claimId));
  }

  /** End a claim; a `'counted'` end is kept with its order number (idempotent). */
  release(now: number, caller: Caller, claimId: string, counted: boolean, needs: ResourceAmounts): void {
    this.#write('release', now, caller, () => {
      this.#s.dropClaim!.run(claimId);
      if (counted) this.#s.addCounted!.run(claimId, needs.cores, needs.ramMiB, needs.instances, this.#next('ord'), now);
    });
  }

  /** Heartbeat: the caller's holder entry and its places still in the file renewed. */
  heartbeat(now: number, caller: Caller, placeIds: readonly string[], placeTtlMs: number): void {
    this.#write('heartbeat', now, caller, () => {
      for (const id of placeIds) this.#s.renewPlace!.run(now + placeTtlMs, id);
    });
  }

  /**
   * A confirmed deletion: its order number becomes `freed_seq` (older readings are no longer fresh),
   * and `freed_count` (the number of confirmed deletions) goes up by one; returns the new count.
   */
  freed(now: number, caller: Caller): number {
    return this.#write('publishFreed', now, caller, () => {
      this.#s.setMeta!.run('freed_seq', this.#next('ord'));
      return this.#next('freed_count');
    });
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
    return { json: typeof json === 'string' ? json : undefined, seq: this.#num('limits_seq', -1), sentAt: this.#num('limits_sent_at', -1), freedSeq: this.#num('freed_seq', -1) };
  }

  /**
   * The kept reading, and whether it is fresh: sent no later than `now`, at most `maxAgeMs` old,
   * after the last confirmed deletion, and newer than `staleSeq`. When it is not fresh: the refresh
   * lock for `lock` when free (state `lock`, with the order number of the read the caller sends
   * now), else state `wait` (with an order number for a read of the caller's own).
   */
  limitsBegin(now: number, caller: Caller, a: { maxAgeMs: number; staleSeq: number; lock: string; lockMs: number }): { state: 'fresh' | 'lock' | 'wait'; kept: KeptReading; sendSeq: number; holders: number } {
    return this.#write('limits', now, caller, () => {
      const kept = this.#kept();
      const fresh = kept.json !== undefined && kept.sentAt <= now && now - kept.sentAt <= a.maxAgeMs && kept.seq > kept.freedSeq && kept.seq > a.staleSeq;
      if (fresh) return { state: 'fresh' as const, kept, sendSeq: 0, holders: this.#holders(now) };
      const lock = this.#meta('lock');
      const free = lock === undefined || lock === null || lock === '' || this.#num('lock_expires_at') <= now;
      if (free) {
        this.#s.setMeta!.run('lock', a.lock);
        this.#s.setMeta!.run('lock_expires_at', now + a.lockMs);
      }
      return { state: free ? ('lock' as const) : ('wait' as const), kept, sendSeq: this.#next('ord'), holders: this.#holders(now) };
    });
  }

  /** Keep a reading sent at `sentAt` (wall ms) with order number `seq` unless a newer one is kept; free the lock if it is still `lock`. */
  limitsStore(now: number, caller: Caller, a: { json: string; seq: number; sentAt: number; lock: string }): void {
    this.#write('storing a reading', now, caller, () => {
      if (this.#num('limits_seq', -1) < a.seq) {
        this.#s.setMeta!.run('limits_json', a.json);
        this.#s.setMeta!.run('limits_seq', a.seq);
        this.#s.setMeta!.run('limits_sent_at', a.sentAt);
      }
      if (this.#meta('lock') === a.lock) this.#s.setMeta!.run('lock', '');
    });
  }

  /** Free the refresh lock if it is still `lock` (after a failed read). */
  unlock(now: number, caller: Caller, lock: string): void {
    this.#write('unlock', now, caller, () => {
      if (this.#meta('lock') === lock) this.#s.setMeta!.run('lock', '');
    });
  }

  /** What `admit` would subtract for claims for a reading of `stamp` (a read-only transaction). */
  inFlight(now: number, stamp: number): ResourceAmounts {
    try {
      return this.#db.transaction(() => this.#inFlight(now, stamp))();
    } catch (error) {
      throw sqliteError(this.#path, 'inFlight', error);
    }
  }

  /** The ids of the live claims, oldest token first (read-only). */
  liveClaimIds(now: number): string[] {
    try {
      return (this.#s.liveClaimIds!.all(now) as Array<{ id: string }>).map((r) => r.id);
    } catch (error) {
      throw sqliteError(this.#path, 'liveClaimIds', error);
    }
  }

  /** Leave `places`, drop `claims` (not created) and the caller's holder entry, in one transaction. */
  goodbye(now: number, caller: Caller, places: readonly string[], claims: readonly string[]): void {
    this.#tx('close', () => {
      for (const id of places) this.#s.dropPlace!.run(id);
      for (const id of claims) this.#s.dropClaim!.run(id);
      this.#s.goodbye!.run(caller.instance);
      void now;
    });
  }

  /** Close the file (idempotent). */
  close(): void {
    if (this.#db.open) this.#db.close();
  }
}
