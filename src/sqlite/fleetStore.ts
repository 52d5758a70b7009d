/**
 * The fleet watcher's store in the SQLite ledger file (`FleetStore` of `src/delete/fleetStore.ts`):
 * the processes of one host that share the file elect one watcher through it, and the others read
 * its publications from it. Each write is one `BEGIN IMMEDIATE` transaction (atomic across the
 * processes of the host, tried again while the file is locked: `busy.ts`); reads take no write lock
 * (WAL readers never wait for the writer). Times are ms of the host's monotonic clock, as every
 * time in the file (`hostClock.ts`, `schema.ts` `timeOfWrite`: never stepped, moved across a reboot).
 *
 * Tables (`schema.ts`):
 * - `fleet_lease(id = 1, token, epoch, expires_at)`: who watches, until when;
 * - `fleet_pubs(seq, epoch, nova_date, items)`: the publications, by sequence number, trimmed to
 *   the newest {@link KEEP_PUBLICATIONS} (a reader further behind sees a gap);
 * - `fleet_interest(member, server_id, expires_at, interval_ms, confirm_ms, whole)`;
 * - `fleet_proofs(server_id, epoch, evidence, at)`: the proofs of deletion published lately;
 * - in `meta`: the counters `fleet_epoch`, `fleet_seq` and `fleet_interest_v` (the interest's
 *   version). The epoch and sequence counters start, when missing (a new file, one deleted while
 *   processes ran), at the file's time in ms, as Redis's start at Redis's time: numbers after a new
 *   file stay above the ones before it, so it reads as a gap, never as an older epoch.
 *
 * A reader learns of news by reading the file: `SELECT ... WHERE seq > ?` on the primary key, at
 * each read round of the watcher (`fleetWatcher.ts`: every read interval, at most 250 ms).
 *
 * @module
 */
import type { FleetInterestEntry, FleetInterestRead, FleetLease, FleetPublication, FleetStore, KeptProof, PublicationDraft, Published } from '../delete/index.js';
import type { Database, Statement } from './native.js';
import type { LedgerStore } from './store.js';

/** Publications kept in the file. */
export const KEEP_PUBLICATIONS = 1000;

const SQL = {
  meta: 'SELECT value FROM meta WHERE key = ?',
  setMeta: 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  lease: 'SELECT token, epoch, expires_at FROM fleet_lease WHERE id = 1',
  setLease: 'INSERT INTO fleet_lease (id, token, epoch, expires_at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET token = excluded.token, epoch = excluded.epoch, expires_at = excluded.expires_at',
  renewLease: 'UPDATE fleet_lease SET expires_at = ? WHERE id = 1',
  resign: 'DELETE FROM fleet_lease WHERE id = 1 AND token = ?',
  addPub: 'INSERT INTO fleet_pubs (seq, epoch, nova_date, items) VALUES (?, ?, ?, ?)',
  trimPubs: 'DELETE FROM fleet_pubs WHERE seq <= ?',
  newest: 'SELECT max(seq) AS seq FROM fleet_pubs',
  after: 'SELECT seq, epoch, nova_date, items FROM fleet_pubs WHERE seq > ? ORDER BY seq LIMIT ?',
  addProof: 'INSERT INTO fleet_proofs (server_id, epoch, evidence, at) VALUES (?, ?, ?, ?) ON CONFLICT (server_id) DO UPDATE SET epoch = excluded.epoch, evidence = excluded.evidence, at = excluded.at',
  dropProofs: 'DELETE FROM fleet_proofs WHERE at <= ?',
  proof: 'SELECT epoch, evidence FROM fleet_proofs WHERE server_id = ?',
  addInterest:
    'INSERT INTO fleet_interest (member, server_id, expires_at, interval_ms, confirm_ms, whole) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (member, server_id) DO UPDATE SET expires_at = excluded.expires_at, interval_ms = excluded.interval_ms, confirm_ms = excluded.confirm_ms, whole = excluded.whole',
  dropInterest: 'DELETE FROM fleet_interest WHERE member = ? AND server_id = ?',
  dropOldInterest: 'DELETE FROM fleet_interest WHERE expires_at <= ?',
  interest: 'SELECT server_id, expires_at, interval_ms, confirm_ms, whole FROM fleet_interest WHERE expires_at > ?',
} as const;

/** What the store needs of its ledger. */
export interface SqliteFleetStoreInit {
  /** The ledger file. */
  readonly file: LedgerStore;
  /** `fn` (one transaction, given the host's monotonic now at each attempt), tried again while the file is locked (the ledger's `busyTimeoutMs`). */
  readonly attempts: <T>(fn: (now: number) => T) => Promise<T>;
}

/** The fleet watcher's store in one SQLite ledger file (see the module). */
export class SqliteFleetStore implements FleetStore {
  readonly carrier = 'the SQLite file';
  readonly #d: SqliteFleetStoreInit;
  readonly #stmts = new Map<string, Statement>();

  constructor(init: SqliteFleetStoreInit) {
    this.#d = init;
  }

  #s(db: Database, name: keyof typeof SQL): Statement {
    let s = this.#stmts.get(name);
    if (s === undefined) {
      s = db.prepare(SQL[name]);
      this.#stmts.set(name, s);
    }
    return s;
  }

  #write<T>(what: string, fn: (db: Database, at: number) => T): Promise<T> {
    return this.#d.attempts((now) => this.#d.file.writeAt(`fleet watcher: ${what}`, now, fn));
  }

  #read<T>(what: string, fn: (db: Database, at: number) => T): Promise<T> {
    return this.#d.attempts((now) => this.#d.file.readAt(`fleet watcher: ${what}`, now, fn));
  }

  /** One more on counter `key` of `meta`, starting at the file's time `at` when missing (see the module). */
  #bump(db: Database, key: string, at: number): number {
    const v = (this.#s(db, 'meta').get(key) as { value: unknown } | undefined)?.value;
    const n = (v === undefined || v === null ? Math.floor(at) : Number(v)) + 1;
    this.#s(db, 'setMeta').run(key, n);
    return n;
  }

  #lease(db: Database, at: number): { token: string; epoch: number } | undefined {
    const row = this.#s(db, 'lease').get() as { token: string; epoch: number; expires_at: number } | undefined;
    return row !== undefined && row.expires_at > at ? { token: row.token, epoch: Number(row.epoch) } : undefined;
  }

  elect(token: string, ttlMs: number): Promise<FleetLease> {
    return this.#write('elect', (db, at) => {
      const cur = this.#lease(db, at);
      if (cur !== undefined && cur.token !== token) return { held: false, epoch: cur.epoch };
      if (cur !== undefined) {
        this.#s(db, 'renewLease').run(at + ttlMs);
        return { held: true, epoch: cur.epoch };
      }
      const epoch = this.#bump(db, 'fleet_epoch', at);
      this.#s(db, 'setLease').run(token, epoch, at + ttlMs);
      return { held: true, epoch };
    });
  }

  async resign(token: string): Promise<void> {
    await this.#write('resign', (db) => this.#s(db, 'resign').run(token));
  }

  publish(token: string, epoch: number, draft: PublicationDraft, retentionMs: number): Promise<number> {
    const items = JSON.stringify(draft.items);
    return this.#write('publish', (db, at) => {
      const cur = this.#lease(db, at);
      if (cur === undefined || cur.token !== token || cur.epoch !== epoch) return 0;
      const seq = this.#bump(db, 'fleet_seq', at);
      this.#s(db, 'addPub').run(seq, epoch, draft.novaDateMs ?? null, items);
      this.#s(db, 'trimPubs').run(seq - KEEP_PUBLICATIONS);
      for (const it of draft.items) if ('g' in it) this.#s(db, 'addProof').run(it.i, epoch, JSON.stringify(it.g), at);
      this.#s(db, 'dropProofs').run(at - retentionMs);
      return seq;
    });
  }

  newest(): Promise<number | undefined> {
    return this.#read('newest', (db) => {
      const seq = (this.#s(db, 'newest').get() as { seq: number | null }).seq;
      return seq === null ? undefined : Number(seq);
    });
  }

  after(seq: number, count: number): Promise<FleetPublication[]> {
    return this.#read('read', (db) =>
      (this.#s(db, 'after').all(seq, count) as Array<{ seq: number; epoch: number; nova_date: number | null; items: string }>).map((r) => {
        let items: Published[] = [];
        try {
          items = JSON.parse(r.items) as Published[];
        } catch {
          // a row this store did not write: its items are not used (its number still counts)
        }
        return { seq: Number(r.seq), epoch: Number(r.epoch), novaDateMs: r.nova_date === null ? undefined : Number(r.nova_date), items };
      }),
    );
  }

  register(member: string, add: readonly FleetInterestEntry[], remove: readonly string[]): Promise<KeptProof[]> {
    return this.#write('register', (db, at) => {
      const kept: KeptProof[] = [];
      this.#s(db, 'dropOldInterest').run(at);
      for (const e of add) {
        this.#s(db, 'addInterest').run(member, e.serverId, at + e.remainingMs, e.intervalMs, e.confirmIntervalMs, e.whole ? 1 : 0);
        const p = this.#s(db, 'proof').get(e.serverId) as { epoch: number; evidence: string } | undefined;
        if (p !== undefined) kept.push({ serverId: e.serverId, epoch: Number(p.epoch), evidence: parseEvidence(p.evidence) });
      }
      if (add.length > 0) this.#bump(db, 'fleet_interest_v', 0);
      for (const id of remove) this.#s(db, 'dropInterest').run(member, id);
      return kept;
    });
  }

  interest(): Promise<FleetInterestRead> {
    return this.#read('interest', (db, at) => {
      const rows = this.#s(db, 'interest').all(at) as Array<{ server_id: string; expires_at: number; interval_ms: number; confirm_ms: number; whole: number }>;
      const entries = rows.map((r) => ({ serverId: r.server_id, remainingMs: r.expires_at - at, intervalMs: Number(r.interval_ms), confirmIntervalMs: Number(r.confirm_ms), whole: Number(r.whole) === 1 }));
      return { entries, version: this.#version(db) };
    });
  }

  interestVersion(): Promise<string> {
    return this.#read('interest version', (db) => this.#version(db));
  }

  #version(db: Database): string {
    return String((this.#s(db, 'meta').get('fleet_interest_v') as { value: unknown } | undefined)?.value ?? '0');
  }
}

/** A kept proof's evidence as stored (JSON); what cannot be read is no proof (`'unreadable'`). */
function parseEvidence(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return 'unreadable';
  }
}
