/**
 * The ledger file's tables, how a connection sets them up without waiting for another process's
 * write lock when they exist already, and how stored times follow the host's monotonic clock
 * across a reboot (see `hostClock.ts`).
 *
 * Schema 2 stores every time (leases, places, holder entries, `'counted'` records, the refresh
 * lock, the kept reading's send time) in ms of the host's monotonic clock; schema 1 stored them in
 * ms of the wall clock. A schema-1 file is moved to schema 2 in one transaction: each stored time
 * is shifted by (monotonic now - wall now), so each lease keeps what was left of it. Processes of
 * an older nova-guard refuse a schema-2 file when they open it.
 *
 * The fleet watcher's tables (`fleet_lease`, `fleet_pubs`, `fleet_interest`, `fleet_proofs`, see
 * `fleetStore.ts`) came after schema 2 without a new schema number: they are only added (`CREATE
 * TABLE IF NOT EXISTS`, once per file), a process of a nova-guard that does not know them never
 * reads them, and a new number would make such a process refuse the file: on one host, processes
 * of the two versions keep sharing their claims. Their times move with the others' across a reboot.
 * So did `claim_admitted` (claim id -> the `ord` order number at its admission, kept while the claim
 * lives or its `'counted'` record is kept; see `store.ts`): a process that does not know it admits
 * claims without a row there, and a claim without a row is taken as admitted before every reading.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import type { Database } from './native.js';
import { SqliteScopeError } from './errors.js';
import { REBOOT_SLACK_MS } from './hostClock.js';

/** The schema version written into `meta`. */
export const SCHEMA = 2;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (id TEXT PRIMARY KEY, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, token INTEGER NOT NULL, holder TEXT NOT NULL, server_id TEXT, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS counted (id TEXT PRIMARY KEY, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, ord INTEGER NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS places (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, cores REAL NOT NULL, ram REAL NOT NULL, inst REAL NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS holders (instance TEXT PRIMARY KEY, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS places_seq ON places (seq);
CREATE TABLE IF NOT EXISTS fleet_lease (id INTEGER PRIMARY KEY CHECK (id = 1), token TEXT NOT NULL, epoch INTEGER NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS fleet_pubs (seq INTEGER PRIMARY KEY, epoch INTEGER NOT NULL, nova_date REAL, items TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fleet_interest (member TEXT NOT NULL, server_id TEXT NOT NULL, expires_at REAL NOT NULL, interval_ms REAL NOT NULL, confirm_ms REAL NOT NULL, whole INTEGER NOT NULL, PRIMARY KEY (member, server_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fleet_proofs (server_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, evidence TEXT NOT NULL, at REAL NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fleet_proofs_at ON fleet_proofs (at);
CREATE TABLE IF NOT EXISTS claim_admitted (id TEXT PRIMARY KEY, ord INTEGER NOT NULL) WITHOUT ROWID;
`;
/** The statements of the ledger, prepared once the tables exist. */
export const STATEMENTS = {
  meta: 'SELECT value FROM meta WHERE key = ?',
  setMeta: 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  dropClaims: 'DELETE FROM claims WHERE expires_at <= ?',
  dropPlaces: 'DELETE FROM places WHERE expires_at <= ?',
  dropCounted: 'DELETE FROM counted WHERE at <= ?',
  dropHolders: 'DELETE FROM holders WHERE expires_at <= ?',
  holder: 'INSERT INTO holders (instance, expires_at) VALUES (?, ?) ON CONFLICT (instance) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)',
  holders: 'SELECT count(*) AS n FROM holders WHERE expires_at > ?',
  holderEntries: 'SELECT instance FROM holders WHERE expires_at > ? ORDER BY instance',
  goodbye: 'DELETE FROM holders WHERE instance = ?',
  liveClaims: 'SELECT cores, ram, inst FROM claims WHERE expires_at > ?',
  liveClaimIds: 'SELECT id FROM claims WHERE expires_at > ? ORDER BY token',
  countedSince: 'SELECT cores, ram, inst FROM counted WHERE ord >= ? AND at > ?',
  countedOne: 'SELECT cores, ram, inst, ord FROM counted WHERE id = ? AND at > ?',
  countedSinceAdmittedFrom: 'SELECT c.cores, c.ram, c.inst FROM counted c JOIN claim_admitted a ON a.id = c.id WHERE c.ord >= ? AND c.at > ? AND a.ord >= ?',
  addAdmitted: 'INSERT OR REPLACE INTO claim_admitted (id, ord) VALUES (?, ?)',
  dropAdmitted: 'DELETE FROM claim_admitted WHERE id = ?',
  dropAdmittedGone: 'DELETE FROM claim_admitted WHERE id NOT IN (SELECT id FROM claims) AND id NOT IN (SELECT id FROM counted)',
  place: 'SELECT seq FROM places WHERE id = ?',
  placesBefore: 'SELECT cores, ram, inst FROM places WHERE seq < ? AND id <> ?',
  allPlaces: 'SELECT cores, ram, inst FROM places WHERE id <> ?',
  addClaim: 'INSERT INTO claims (id, cores, ram, inst, token, holder, server_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)',
  addPlace: 'INSERT INTO places (id, seq, cores, ram, inst, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  dropPlace: 'DELETE FROM places WHERE id = ?',
  renewPlace: 'UPDATE places SET expires_at = max(expires_at, ?) WHERE id = ?',
  renew: 'UPDATE claims SET expires_at = ? WHERE id = ?',
  bind: 'UPDATE claims SET server_id = ? WHERE id = ?',
  dropClaim: 'DELETE FROM claims WHERE id = ?',
  addCounted: 'INSERT OR IGNORE INTO counted (id, cores, ram, inst, ord, at) VALUES (?, ?, ?, ?, ?, ?)',
} as const;

/** The name of one of {@link STATEMENTS}. */
export type StatementName = keyof typeof STATEMENTS;

const OBJECTS = ['meta', 'claims', 'counted', 'places', 'holders', 'places_seq', 'fleet_lease', 'fleet_pubs', 'fleet_interest', 'fleet_proofs', 'fleet_proofs_at', 'claim_admitted'];

/**
 * WAL mode, `synchronous = NORMAL`, and the tables. On a file that has them (every open but the
 * first), nothing here needs the write lock: WAL readers never wait for a writer.
 * @throws better-sqlite3's error (`SQLITE_BUSY` while another process creates the file).
 */
export function setUp(db: Database): void {
  if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') {
    const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
    if (mode.toLowerCase() !== 'wal') throw new Error(`journal_mode is ${mode}, not wal`);
  }
  db.pragma('synchronous = NORMAL');
  const have = (db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name IN (${OBJECTS.map(() => '?').join(', ')})`).get(...OBJECTS) as { n: number }).n;
  if (Number(have) < OBJECTS.length) db.exec(DDL);
}

const metaOf = (db: Database, key: string): unknown => (db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: unknown } | undefined)?.value;
const setMeta = (db: Database, key: string, value: unknown): void => void db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);

/** Every stored time moved by `shiftMs`; the kept reading stops being fresh. Inside a write transaction. */
function shiftTimes(db: Database, shiftMs: number): void {
  const times = [['claims', 'expires_at'], ['places', 'expires_at'], ['holders', 'expires_at'], ['counted', 'at'], ['fleet_lease', 'expires_at'], ['fleet_interest', 'expires_at'], ['fleet_proofs', 'at']] as const;
  for (const [table, column] of times) {
    db.prepare(`UPDATE ${table} SET ${column} = ${column} + ?`).run(shiftMs);
  }
  const lock = metaOf(db, 'lock_expires_at');
  if (lock !== undefined && lock !== null) setMeta(db, 'lock_expires_at', Number(lock) + shiftMs);
  setMeta(db, 'limits_json', null);
}

/**
 * Whose file it is: `scope` (`<endpoint>\n<project>`) is written into a new file, compared on an
 * existing one (a read: no write lock unless the file is new or of schema 1). `write(fn)` runs
 * `fn` in a write transaction; `shiftFromWall()` is (monotonic now - wall now), for schema 1.
 * @throws `SqliteScopeError` (a `ValidationError`) when the file belongs to another scope; `ValidationError` for an unknown schema.
 */
export function checkOwner(db: Database, path: string, scope: string, write: (fn: () => void) => void, shiftFromWall: () => number): void {
  const show = (s: string): string => JSON.stringify(s.replace('\n', ' project '));
  const judge = (owner: unknown): void => {
    if (owner !== scope) {
      throw new SqliteScopeError(path, show(String(owner)), show(scope));
    }
  };
  const owner = metaOf(db, 'scope');
  if (owner !== undefined) judge(owner);
  if (owner !== undefined && Number(metaOf(db, 'schema')) === SCHEMA) return;
  write(() => {
    const now = metaOf(db, 'scope');
    if (now === undefined) {
      setMeta(db, 'scope', scope);
      setMeta(db, 'schema', SCHEMA);
      return;
    }
    judge(now);
    const schema = Number(metaOf(db, 'schema'));
    if (schema === 1) {
      shiftTimes(db, shiftFromWall());
      setMeta(db, 'schema', SCHEMA);
    } else if (schema !== SCHEMA) {
      throw new ValidationError(`the SQLite ledger file ${path} has schema ${schema}, this nova-guard writes ${SCHEMA}: stop the processes of the other nova-guard version, then delete the file (it holds only leases and queue places)`);
    }
  });
}

/** The file's highest reading and boot id, and whether `now` (of `boot`) is of a new boot. */
function clockState(db: Database, now: number, boot: string): { high: number; fileBoot: string; rebooted: boolean } {
  const high = Number(metaOf(db, 'mono_high') ?? Number.NaN);
  const fileBoot = String(metaOf(db, 'boot') ?? '');
  const rebooted = Number.isFinite(high) && ((boot !== '' && fileBoot !== '' && boot !== fileBoot) || now < high - REBOOT_SLACK_MS);
  return { high, fileBoot, rebooted };
}

/**
 * The time a read-only transaction compares the file's times with, without moving them: as
 * {@link timeOfWrite} would make it, in the file's own frame (after a reboot no write has moved the
 * times yet: the file's highest reading, so each lease still has what was left of it).
 */
export function timeOfRead(db: Database, now: number, boot: string): number {
  const { high, rebooted } = clockState(db, now, boot);
  if (!Number.isFinite(high)) return now;
  return rebooted ? high : Math.max(now, high);
}

/**
 * The time of a write transaction, in ms of the host's monotonic clock: `now` (this process's
 * reading), never below the highest any process wrote (a reading taken just before another
 * process's transaction committed). A new boot (another `boot` id than the file's, or `now` below
 * the highest by more than {@link REBOOT_SLACK_MS}) moves every stored time by `now - highest`
 * first, so each lease keeps what was left of it. Inside a write transaction.
 */
export function timeOfWrite(db: Database, now: number, boot: string): number {
  const { high, fileBoot, rebooted } = clockState(db, now, boot);
  if (rebooted) shiftTimes(db, now - high);
  if (boot !== fileBoot) setMeta(db, 'boot', boot);
  const at = rebooted || !Number.isFinite(high) ? now : Math.max(now, high);
  setMeta(db, 'mono_high', at);
  return at;
}
