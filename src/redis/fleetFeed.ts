/**
 * The Redis carrier of the fleet watcher's publications, consuming side: one host reads the
 * `fleet:stream` of its ledger scope (see `fleetScripts.ts`) and hands each entry, in order, to its
 * {@link FleetConsumer} (`src/delete/fleetConsumer.ts`: sequence numbers and gaps, stalls, fencing
 * by epoch, proofs always and states while consuming, evidence rule 3).
 *
 * - A read every round (`XREAD` from the last entry id read). While not consuming and nothing came
 *   for `stallMs`, it starts again from the newest entry (a Redis restarted empty starts a new
 *   stream); while consuming, no publication for `stallMs` falls back.
 * - A stream entry's fields: `e` epoch, `s` sequence number, `d` Nova's `Date` (epoch ms, or empty),
 *   `o` the items as JSON ({@link Published}).
 *
 * @module
 */
import { FleetConsumer, type FleetConsumerInit, type Published } from '../delete/index.js';
import type { RedisConnection } from './connection.js';

export type { FleetStats, Published } from '../delete/index.js';

/** What the feed needs of its watcher: its consumer's needs (the carrier is Redis), the connection and the stream. */
export interface FeedInit extends Omit<FleetConsumerInit, 'carrier'> {
  readonly conn: RedisConnection;
  readonly stream: string;
}

/** How many entries one read takes at most. */
const READ_COUNT = 500;

/** The reader of one host. */
export class FleetFeed {
  readonly #d: FeedInit;
  readonly #consumer: FleetConsumer;
  #lastId: string | undefined;

  constructor(init: FeedInit) {
    this.#d = init;
    this.#consumer = new FleetConsumer({ ...init, carrier: 'Redis' });
  }

  /** True while publications arrive in sequence and in time. */
  get consuming(): boolean {
    return this.#consumer.consuming;
  }

  /** The highest epoch seen (from the lease or a publication). */
  get maxEpoch(): number {
    return this.#consumer.maxEpoch;
  }

  /** An epoch seen elsewhere (the lease): publications of older ones are ignored. */
  sawEpoch(epoch: number): void {
    this.#consumer.sawEpoch(epoch);
  }

  /** Stop consuming now (this host became the watcher, or closes): no warning. */
  stop(): void {
    this.#consumer.stop();
  }

  /** Fall back to own looks, with one warning and one count per episode. */
  fallBack(reason: string): void {
    this.#consumer.fallBack(reason);
  }

  /** A proof kept by the store for a server registered late: see `FleetConsumer.proof`. */
  proof(serverId: string, evidence: unknown, epoch: number): boolean {
    return this.#consumer.proof(serverId, evidence, epoch);
  }

  /** This host's own GET found `serverId` alive: see `FleetConsumer.ownLookAlive`. */
  ownLookAlive(serverId: string, sentAt: number): void {
    this.#consumer.ownLookAlive(serverId, sentAt);
  }

  /**
   * One read round (see the module).
   * @throws what Redis throws (`RedisLedgerError`); the caller's next round tries again.
   */
  async read(): Promise<void> {
    const now = this.#d.clock.now();
    this.#consumer.beginRead();
    if (this.#lastId === undefined || (!this.#consumer.consuming && now - this.#consumer.lastAt > this.#d.stallMs)) await this.#sync();
    const answer = (await this.#d.conn.command('XREAD fleet', (c) => c.xread('COUNT', READ_COUNT, 'STREAMS', this.#d.stream, this.#lastId!))) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [id, fields] of answer?.[0]?.[1] ?? []) this.#take(id, fields);
    this.#consumer.checkStall();
  }

  /** Take the newest publication as the start (its contents are not used: only what follows it). */
  async #sync(): Promise<void> {
    const last = (await this.#d.conn.command('XREVRANGE fleet', (c) => c.xrevrange(this.#d.stream, '+', '-', 'COUNT', 1))) as Array<[string, string[]]>;
    const newest = last[0];
    if (newest === undefined) {
      this.#lastId ??= '0-0';
      return;
    }
    this.#lastId = newest[0];
    this.#consumer.restartAt(Number(fieldsOf(newest[1]).s));
  }

  #take(id: string, raw: string[]): void {
    this.#lastId = id;
    const f = fieldsOf(raw);
    let items: Published[] = [];
    try {
      items = JSON.parse(f.o ?? '[]') as Published[];
    } catch {
      this.#d.logger.warn({ id }, 'fleet watcher: a publication could not be read: ignored');
    }
    const novaDateMs = f.d !== '' && f.d !== undefined ? Number(f.d) : undefined;
    this.#consumer.take({ epoch: Number(f.e), seq: Number(f.s), novaDateMs, items });
  }
}

/** A stream entry's flat `[name, value, ...]` as an object. */
function fieldsOf(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) out[raw[i]!] = raw[i + 1]!;
  return out;
}
