/**
 * The consuming side of the fleet watcher: one host reads the watcher's publications (the
 * `fleet:stream` of its ledger scope, see `fleetScripts.ts`) and hands them to its delete engine.
 *
 * - **In sequence and in time, or not at all.** Every publication carries a sequence number (one
 *   counter for every epoch of the watcher). A number skipped (the stream trimmed past this host, a
 *   Redis restarted empty) is a gap; no publication for `stallMs` (the watcher stalled or died, Redis
 *   slow or down) is a stall. Either way the host falls back to its own looks at once, with one
 *   warning and one count in {@link FleetStats.fallbacks}, and consumes again at the next publication
 *   in sequence (after a gap: in a later read, so the waits look by themselves at least once), after
 *   catching up on the proofs it may have missed (`FleetWatcher.catchUp`).
 * - **Fencing.** A publication of an older epoch than one already seen (a deposed watcher) is
 *   ignored and counted ({@link FleetStats.staleEpoch}).
 * - **Proofs always, states while consuming.** A proof of deletion (`'not-found'` or `'absent'`,
 *   rule 3 of `src/delete/evidence.ts`) ends the waits of its server whenever it arrives: deletion
 *   is monotonic. A server's status is a look only while the host consumes.
 *
 * @module
 */
import type { Clock, Logger, Server } from '../core/index.js';
import type { DeleteEngine, GoneEvidence } from '../delete/index.js';
import type { RedisConnection } from './connection.js';

/** Counters of one host's fleet watcher. */
export interface FleetStats {
  /** Times this host took the lease (became the fleet's watcher). */
  elections: number;
  /** Publications this host wrote as the watcher. */
  published: number;
  /** Publications this host read and used. */
  consumed: number;
  /** Proofs of deletion from publications that ended waits of this host. */
  proofs: number;
  /** Publications ignored because an older epoch published them than one already seen. */
  staleEpoch: number;
  /** Gaps seen in the sequence numbers. */
  gaps: number;
  /** Times this host fell back to its own looks (a gap, no publication in time, Redis failing). */
  fallbacks: number;
}

/**
 * One observation in a publication: a proof (`g`), a status (`s`, the fields the waits read), or
 * that the watcher cannot answer for the server (`x`, the error's name: its looks kept failing, or
 * found an orphan), so the hosts waiting on it look by themselves.
 */
export type Published = { i: string; g: GoneEvidence } | { i: string; s: Partial<Server> } | { i: string; x: string };

/** What the feed needs of its watcher. */
export interface FeedInit {
  readonly conn: RedisConnection;
  readonly stream: string;
  readonly engine: DeleteEngine;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats: FleetStats;
  /** No publication for this long (ms) while consuming is a stall. */
  readonly stallMs: number;
  /** Catch up on the proofs of the servers waited on (after a gap or a stall). */
  readonly catchUp: () => void;
}

/** How many entries one read takes at most. */
const READ_COUNT = 500;

/** The reader of one host. */
export class FleetFeed {
  readonly #d: FeedInit;
  #lastId: string | undefined;
  #lastSeq: number | undefined;
  #maxEpoch = 0;
  #lastAt: number;
  #consuming = false;
  /** A gap in this read: no resuming before the next read (the waits look by themselves meanwhile). */
  #gapSeen = false;

  constructor(init: FeedInit) {
    this.#d = init;
    this.#lastAt = init.clock.now();
  }

  /** True while publications arrive in sequence and in time. */
  get consuming(): boolean {
    return this.#consuming;
  }

  /** The highest epoch seen (from the lease or a publication). */
  get maxEpoch(): number {
    return this.#maxEpoch;
  }

  /** An epoch seen elsewhere (the lease): publications of older ones are ignored. */
  sawEpoch(epoch: number): void {
    this.#maxEpoch = Math.max(this.#maxEpoch, epoch);
  }

  /** Stop consuming now (this host became the watcher, or closes): no warning. */
  stop(): void {
    this.#consuming = false;
    this.#lastAt = this.#d.clock.now();
  }

  /** Fall back to own looks, with one warning and one count per episode. */
  fallBack(reason: string): void {
    if (!this.#consuming) return;
    this.#consuming = false;
    this.#d.stats.fallbacks++;
    this.#d.logger.warn({ reason }, `fleet watcher: ${reason}: this host looks by itself until the publications resume`);
    this.#d.engine.fleetChanged();
  }

  /**
   * One read round: take the new publications; while not consuming and nothing came for `stallMs`,
   * start again from the newest one (a Redis restarted empty starts a new stream); while consuming,
   * a stall falls back.
   * @throws what Redis throws (`RedisLedgerError`); the caller's next round tries again.
   */
  async read(): Promise<void> {
    const now = this.#d.clock.now();
    this.#gapSeen = false;
    if (this.#lastId === undefined || (!this.#consuming && now - this.#lastAt > this.#d.stallMs)) await this.#sync();
    const answer = (await this.#d.conn.command('XREAD fleet', (c) => c.xread('COUNT', READ_COUNT, 'STREAMS', this.#d.stream, this.#lastId!))) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [id, fields] of answer?.[0]?.[1] ?? []) this.#take(id, fields);
    if (this.#consuming && this.#d.clock.now() - this.#lastAt > this.#d.stallMs) this.fallBack(`no publication within ${this.#d.stallMs} ms (watcher stalled, or Redis slow or down)`);
  }

  /** Take the newest publication as the start (its contents are not used: only what follows it). */
  async #sync(): Promise<void> {
    const last = (await this.#d.conn.command('XREVRANGE fleet', (c) => c.xrevrange(this.#d.stream, '+', '-', 'COUNT', 1))) as Array<[string, string[]]>;
    const newest = last[0];
    if (newest === undefined) {
      this.#lastId ??= '0-0';
      return;
    }
    const f = fieldsOf(newest[1]);
    this.#lastId = newest[0];
    this.#lastSeq = Number(f.s);
    this.#lastAt = this.#d.clock.now();
  }

  #take(id: string, raw: string[]): void {
    this.#lastId = id;
    const f = fieldsOf(raw);
    const seq = Number(f.s);
    const epoch = Number(f.e);
    const prev = this.#lastSeq;
    const gap = prev !== undefined && seq > prev + 1;
    if (this.#lastSeq === undefined || seq > this.#lastSeq) this.#lastSeq = seq;
    if (epoch < this.#maxEpoch) {
      this.#d.stats.staleEpoch++;
      return;
    }
    this.#maxEpoch = epoch;
    this.#lastAt = this.#d.clock.now();
    if (gap) {
      this.#d.stats.gaps++;
      this.#gapSeen = true;
      this.fallBack(`a gap in the publications' sequence numbers (${seq - prev! - 1} missed before ${seq})`);
    }
    let items: Published[] = [];
    try {
      items = JSON.parse(f.o ?? '[]') as Published[];
    } catch {
      this.#d.logger.warn({ id }, 'fleet watcher: a publication could not be read: ignored');
    }
    const engine = this.#d.engine;
    const novaDate = Number(f.d);
    if (f.d !== '' && Number.isFinite(novaDate)) engine.noteNovaDate(novaDate);
    this.#d.stats.consumed++;
    for (const it of items) {
      if ('g' in it) {
        if (engine.fleetObserved(it.i, { gone: true, evidence: it.g })) this.#d.stats.proofs++;
      } else if ('x' in it) {
        engine.fleetObserved(it.i, undefined);
      } else if (this.#consuming && typeof it.s === 'object' && it.s !== null) {
        engine.fleetObserved(it.i, { gone: false, server: { ...it.s, id: it.i } as Server });
      }
    }
    if (!this.#gapSeen && !this.#consuming) this.#resume();
  }

  #resume(): void {
    this.#consuming = true;
    this.#d.logger.info('fleet watcher: consuming the publications');
    this.#d.catchUp();
    this.#d.engine.fleetChanged();
  }
}

/** A stream entry's flat `[name, value, ...]` as an object. */
function fieldsOf(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) out[raw[i]!] = raw[i + 1]!;
  return out;
}
