/**
 * A {@link FleetStore} in the memory of one process: the fleet watcher's store for clients of one
 * process that run the same election as hosts do (a lease with an epoch), e.g. the conformance
 * tests of the stores, or hosts simulated in one process. Each operation is synchronous under the
 * promise it returns, so it is atomic. Times are on the given clock.
 *
 * (`InProcessFleet` hands over at once by join order and pushes its publications to its members
 * synchronously: it needs no store.)
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { FleetPublication } from './fleet.js';
import type { FleetInterestEntry, FleetInterestRead, FleetLease, FleetStore, KeptProof, PublicationDraft } from './fleetStore.js';

/** Publications kept (the oldest dropped first: a reader that falls this far behind sees a gap). */
const KEEP_PUBLICATIONS = 1000;

/** The fleet watcher's store in memory (see the module). */
export class MemoryFleetStore implements FleetStore {
  readonly carrier = 'the in-memory store';
  readonly #clock: Clock;
  #lease: { token: string; epoch: number; until: number } | undefined;
  #epoch = 0;
  #seq = 0;
  readonly #publications: FleetPublication[] = [];
  readonly #proofs = new Map<string, { epoch: number; evidence: unknown; at: number }>();
  /** `<member>|<server id>` -> the entry and its expiry (clock time). */
  readonly #interest = new Map<string, { entry: FleetInterestEntry; until: number }>();
  #version = 0;

  /** @param clock - The clock of the lease, interest and proof expiries. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  #held(now: number): { token: string; epoch: number; until: number } | undefined {
    return this.#lease !== undefined && this.#lease.until > now ? this.#lease : undefined;
  }

  async elect(token: string, ttlMs: number): Promise<FleetLease> {
    const now = this.#clock.now();
    const cur = this.#held(now);
    if (cur !== undefined && cur.token !== token) return { held: false, epoch: cur.epoch };
    if (cur !== undefined) {
      cur.until = now + ttlMs;
      return { held: true, epoch: cur.epoch };
    }
    this.#lease = { token, epoch: ++this.#epoch, until: now + ttlMs };
    return { held: true, epoch: this.#epoch };
  }

  async resign(token: string): Promise<void> {
    if (this.#lease?.token === token) this.#lease = undefined;
  }

  async publish(token: string, epoch: number, draft: PublicationDraft, retentionMs: number): Promise<number> {
    const now = this.#clock.now();
    const cur = this.#held(now);
    if (cur === undefined || cur.token !== token || cur.epoch !== epoch) return 0;
    const seq = ++this.#seq;
    this.#publications.push({ epoch, seq, novaDateMs: draft.novaDateMs, items: [...draft.items] });
    if (this.#publications.length > KEEP_PUBLICATIONS) this.#publications.splice(0, this.#publications.length - KEEP_PUBLICATIONS);
    for (const it of draft.items) {
      if (!('g' in it)) continue;
      this.#proofs.delete(it.i);
      this.#proofs.set(it.i, { epoch, evidence: it.g, at: now });
    }
    for (const [id, p] of this.#proofs) {
      if (now - p.at <= retentionMs) break;
      this.#proofs.delete(id);
    }
    return seq;
  }

  async newest(): Promise<number | undefined> {
    return this.#publications.at(-1)?.seq;
  }

  async after(seq: number, count: number): Promise<FleetPublication[]> {
    return this.#publications.filter((p) => p.seq > seq).slice(0, count);
  }

  async register(member: string, add: readonly FleetInterestEntry[], remove: readonly string[]): Promise<KeptProof[]> {
    const now = this.#clock.now();
    const kept: KeptProof[] = [];
    for (const e of add) {
      this.#interest.set(`${member}|${e.serverId}`, { entry: { ...e }, until: now + e.remainingMs });
      const p = this.#proofs.get(e.serverId);
      if (p !== undefined) kept.push({ serverId: e.serverId, epoch: p.epoch, evidence: p.evidence });
    }
    if (add.length > 0) this.#version++;
    for (const id of remove) this.#interest.delete(`${member}|${id}`);
    return kept;
  }

  async interest(): Promise<FleetInterestRead> {
    const now = this.#clock.now();
    const entries: FleetInterestEntry[] = [];
    for (const [key, { entry, until }] of this.#interest) {
      if (until <= now) this.#interest.delete(key);
      else entries.push({ ...entry, remainingMs: until - now });
    }
    return { entries, version: String(this.#version) };
  }

  async interestVersion(): Promise<string> {
    return String(this.#version);
  }
}
