/**
 * The fleet watcher's store on Redis (`FleetStore` of `src/delete/fleetStore.ts`): each operation
 * is one Lua script of `fleetScripts.ts` (the keys of one ledger scope), or one read; its times are
 * Redis's. Publications go to a Redis stream (`XADD MAXLEN ~`): ordered, numbered, kept for a while,
 * so a host that missed a few reads them on its next read; one trimmed away shows as a gap.
 * (Pub/sub would lose messages while a subscriber reconnects, silently.)
 *
 * A stream entry's fields: `e` epoch, `s` sequence number, `d` Nova's `Date` (epoch ms, or empty),
 * `o` the items as JSON ({@link Published}). Entries are read by stream id: this store remembers
 * the id of the last entry it handed out, so {@link RedisFleetStore.after} of that entry's
 * sequence number is one `XREAD`.
 *
 * @module
 */
import type { Logger } from '../core/index.js';
import type { FleetInterestEntry, FleetInterestRead, FleetLease, FleetPublication, FleetStore, KeptProof, PublicationDraft, Published } from '../delete/index.js';
import type { RedisConnection } from './connection.js';
import { FLEET_COMMANDS, FLEET_KEYS, fleetKeys, type FleetCommand } from './fleetScripts.js';

/** Entries the stream keeps (approximately, `MAXLEN ~`). */
const STREAM_MAX_LEN = 1000;

type Entry = [string, string[]];

/** The fleet watcher's store on one Redis, for one ledger scope (see the module). */
export class RedisFleetStore implements FleetStore {
  readonly carrier = 'Redis';
  readonly #conn: RedisConnection;
  readonly #keys: string[];
  readonly #logger: Logger;
  /** The last entry handed out: its sequence number and stream id. */
  #last: { seq: number; id: string } | undefined;

  /**
   * @param conn - The ledger's connection (the scripts are defined on it).
   * @param base - The ledger scope's key prefix, ending with `:`.
   * @param logger - Where a publication that cannot be read is reported.
   */
  constructor(conn: RedisConnection, base: string, logger: Logger) {
    this.#conn = conn;
    this.#keys = fleetKeys(base);
    this.#logger = logger;
    for (const [name, lua] of Object.entries(FLEET_COMMANDS)) conn.define(name, lua, FLEET_KEYS);
  }

  #run(name: FleetCommand, args: ReadonlyArray<string | number>): Promise<unknown> {
    return this.#conn.command(name, (c) => (c as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name]!.apply(c, [...this.#keys, ...args]));
  }

  async elect(token: string, ttlMs: number): Promise<FleetLease> {
    const [held, epoch] = (await this.#run('novaGuardFleetElect', [token, ttlMs])) as [number, number];
    return { held: held === 1, epoch: Number(epoch) };
  }

  async resign(token: string): Promise<void> {
    await this.#run('novaGuardFleetResign', [token]);
  }

  async publish(token: string, epoch: number, draft: PublicationDraft, retentionMs: number): Promise<number> {
    const proofs = draft.items.filter((x): x is Extract<Published, { g: unknown }> => 'g' in x);
    const args = [token, epoch, STREAM_MAX_LEN, draft.novaDateMs ?? '', JSON.stringify(draft.items), retentionMs, proofs.length, ...proofs.map((p) => p.i), ...proofs.map((p) => p.g)];
    return Number(await this.#run('novaGuardFleetPublish', args));
  }

  async newest(): Promise<number | undefined> {
    const last = (await this.#conn.command('XREVRANGE fleet', (c) => c.xrevrange(this.#keys[3]!, '+', '-', 'COUNT', 1))) as Entry[];
    const newest = last[0];
    if (newest === undefined) return undefined;
    const seq = Number(fieldsOf(newest[1]).s);
    this.#last = { seq, id: newest[0] };
    return seq;
  }

  async after(seq: number, count: number): Promise<FleetPublication[]> {
    let entries: Entry[];
    if (this.#last !== undefined && Object.is(this.#last.seq, seq)) {
      const answer = (await this.#conn.command('XREAD fleet', (c) => c.xread('COUNT', count, 'STREAMS', this.#keys[3]!, this.#last!.id))) as Array<[string, Entry[]]> | null;
      entries = answer?.[0]?.[1] ?? [];
    } else {
      // Not the last one handed out (the first read of an empty stream): by sequence number.
      const all = (await this.#conn.command('XRANGE fleet', (c) => c.xrange(this.#keys[3]!, '-', '+'))) as Entry[];
      entries = all.filter(([, f]) => !(Number(fieldsOf(f).s) <= seq)).slice(0, count);
    }
    const out: FleetPublication[] = [];
    for (const [id, raw] of entries) {
      const f = fieldsOf(raw);
      let items: Published[] = [];
      try {
        items = JSON.parse(f.o ?? '[]') as Published[];
      } catch {
        this.#logger.warn({ id }, 'fleet watcher: a publication could not be read: ignored');
      }
      const novaDateMs = f.d !== '' && f.d !== undefined ? Number(f.d) : undefined;
      const pub = { epoch: Number(f.e), seq: Number(f.s), novaDateMs, items };
      this.#last = { seq: pub.seq, id };
      out.push(pub);
    }
    return out;
  }

  async register(member: string, add: readonly FleetInterestEntry[], remove: readonly string[]): Promise<KeptProof[]> {
    const args: Array<string | number> = [member, add.length];
    for (const e of add) args.push(e.serverId, e.remainingMs, e.intervalMs, e.confirmIntervalMs, e.whole ? 1 : 0);
    args.push(remove.length, ...remove);
    const flat = (await this.#run('novaGuardFleetRegister', args)) as string[];
    const kept: KeptProof[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      // `<epoch>,<evidence>`
      const [epoch, evidence] = String(flat[i + 1]).split(',');
      kept.push({ serverId: String(flat[i]), epoch: Number(epoch), evidence });
    }
    return kept;
  }

  async interest(): Promise<FleetInterestRead> {
    const flat = (await this.#run('novaGuardFleetInterest', [])) as Array<string | number>;
    const entries: FleetInterestEntry[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const serverId = String(flat[i]).split('|')[1] ?? '';
      const [interval, confirm, whole] = String(flat[i + 2]).split(',').map(Number);
      entries.push({ serverId, remainingMs: Number(flat[i + 1]), intervalMs: interval || 5000, confirmIntervalMs: confirm || 1000, whole: whole === 1 });
    }
    return { entries, version: String(flat[flat.length - 1] ?? '0') };
  }

  async interestVersion(): Promise<string> {
    const v = await this.#conn.command('HGET fleet', (c) => c.hget(this.#keys[7]!, '#v'));
    return String(v ?? '0');
  }
}

/** A stream entry's flat `[name, value, ...]` as an object. */
function fieldsOf(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) out[raw[i]!] = raw[i + 1]!;
  return out;
}
