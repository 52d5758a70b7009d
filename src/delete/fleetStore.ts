/**
 * The store of a fleet watcher: what a backend (memory, a SQLite file, Redis) must do atomically
 * for the hosts of one project to elect one watcher and hand its publications to the others. The
 * policy above it (the election loop, batching, heartbeats, proof retention, the consumers' rules)
 * is written once in `fleetWatcher.ts`; a store holds state and atomicity, nothing else.
 *
 * Times: every expiry a store keeps (the lease, interest, proofs) is on the store's own clock
 * (Redis's `TIME`, the host's monotonic clock for a SQLite file, the engine's clock in memory);
 * callers give durations in ms, never instants.
 *
 * Implementations: {@link MemoryFleetStore} (`memoryFleetStore.ts`), `RedisFleetStore`
 * (`src/redis/fleetStore.ts`: one Lua script per operation), `SqliteFleetStore`
 * (`src/sqlite/fleetStore.ts`: one `BEGIN IMMEDIATE` transaction per write).
 *
 * @module
 */
import type { FleetPublication, Published } from './fleet.js';

/** What {@link FleetStore.elect} answers. */
export interface FleetLease {
  /** True when the caller holds the lease now (renewed, or just taken). */
  readonly held: boolean;
  /** The fencing epoch of the lease as it is now (the holder's; 0 when nobody ever held it). */
  readonly epoch: number;
}

/** One server a member waits on, as it registers it (durations in ms). */
export interface FleetInterestEntry {
  readonly serverId: string;
  /** Time until the interest expires (the latest deadline of the member's waits on it). */
  readonly remainingMs: number;
  readonly intervalMs: number;
  readonly confirmIntervalMs: number;
  /** A wait on it reads the whole body (see `FleetInterest.whole`). */
  readonly whole: boolean;
}

/** A proof of deletion the store keeps by server id, with the epoch that published it. */
export interface KeptProof {
  readonly serverId: string;
  readonly epoch: number;
  readonly evidence: unknown;
}

/** What one publication carries into {@link FleetStore.publish}. */
export interface PublicationDraft {
  /** Nova's `Date` as the watcher knows it (epoch ms), if it does. */
  readonly novaDateMs: number | undefined;
  readonly items: readonly Published[];
}

/** The live interest of every member, and the interest's version. */
export interface FleetInterestRead {
  /** One entry per member and server (the same server may come once per member). */
  readonly entries: readonly FleetInterestEntry[];
  /** Moves whenever a member registers a server (see {@link FleetStore.interestVersion}). */
  readonly version: string;
}

/** The atomic operations of a fleet watcher's store (see the module). Every member is required. */
export interface FleetStore {
  /** What carries the publications, as a stall's warning names it (`'Redis'`, `'the SQLite file'`, ...). */
  readonly carrier: string;
  /**
   * Renew the lease for `ttlMs` when `token` holds it; take it with a new fencing epoch (one more
   * than any before, never reused) when nobody holds it or it expired; else answer the holder's epoch.
   * @throws what the backend throws; the caller's next round tries again.
   */
  elect(token: string, ttlMs: number): Promise<FleetLease>;
  /** Give the lease up when `token` holds it (another member takes it at its next election). */
  resign(token: string): Promise<void>;
  /**
   * Append one publication, atomically with the check that `token` still holds the lease of `epoch`
   * (a deposed watcher publishes nothing), and keep its proofs of deletion (`g` items) by server id,
   * dropping those kept longer than `retentionMs`.
   * @returns the publication's sequence number (one counter for every epoch, never reused, above
   * every earlier one); 0 when the lease is not `token`'s of `epoch`.
   */
  publish(token: string, epoch: number, draft: PublicationDraft, retentionMs: number): Promise<number>;
  /** The newest publication's sequence number; `undefined` when none is kept. */
  newest(): Promise<number | undefined>;
  /**
   * The publications after sequence number `seq`, oldest first, at most `count`. Those trimmed away
   * are simply missing: a reader sees the numbers it skipped (a gap).
   */
  after(seq: number, count: number): Promise<FleetPublication[]>;
  /**
   * Register (or update) `member`'s interest in the servers of `add`, each until the store's now
   * plus its `remainingMs`, and remove its interest in the servers of `remove`. When `add` is not
   * empty, the interest's version moves.
   * @returns the proofs kept for the servers of `add`.
   */
  register(member: string, add: readonly FleetInterestEntry[], remove: readonly string[]): Promise<KeptProof[]>;
  /** Every member's live interest (expired entries dropped), with its `remainingMs` as of now, and the version. */
  interest(): Promise<FleetInterestRead>;
  /** The interest's version alone (a cheap read the watcher makes between its rounds). */
  interestVersion(): Promise<string>;
}
