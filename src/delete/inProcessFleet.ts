/**
 * `InProcessFleet`: a fleet watcher for the clients of ONE process (several `NovaClient`s of one
 * project, e.g. one per worker or per credential, or the hosts of a simulation on one virtual
 * clock). The same logic as the Redis fleet watcher of `nova-guard/redis`, without the store:
 * the clients' engines join; the first one still joined watches for all (`fleetLooks.ts`: a wait of
 * its own engine per server any other member waits on) and its observations are handed to every
 * other member in order (`fleetConsumer.ts`: sequence numbers, epochs, evidence rule 3, states only
 * while consuming). The other members' waits (delete waits and the guard's ACTIVE waits) then send no
 * looks of their own.
 *
 * What differs from Redis, and why:
 * - **Election** is the order of joining: the watcher is the oldest member; when it leaves, the next
 *   one watches at once (a new epoch). Nothing can pause one member and not the others, so there is
 *   no lease to lapse.
 * - **Interest** reaches the watcher in the same microtask batch as the waits that changed it (Redis:
 *   at the watcher's next round), and a publication reaches every member synchronously, in order:
 *   there are no gaps and no stalls (the consumers' stall limit is infinite). A member that joins
 *   gets a heartbeat so it consumes from then on.
 * - **Proofs** of deletion are kept by server id for `PROOF_RETENTION_MS` (10 minutes), as by the
 *   coordinator of the shared ledgers (`fleetWatcher.ts`), for a wait that starts on a server after
 *   its proof was published.
 *
 * The shared ledgers (`fleetWatcher: true` on `SqliteQuotaLedger.forClient` or
 * `RedisQuotaLedger.forClient`) run the coordinator of `fleetWatcher.ts` over a store instead:
 * a lease with an epoch, polled publications. This class keeps the synchronous hand-over the
 * clients of one process can have (and the simulation of `bench/fleetSim.ts` relies on).
 *
 * Usage: `const fleet = new InProcessFleet(); const member = await fleet.join(client);` ...
 * `member.leave()` (or `fleet.close()`).
 *
 * @module
 */
import { ledgerScope, sameScope, type LedgerScope } from '../core/endpoint.js';
import { ValidationError } from '../errors/index.js';
import { newFleetStats, type FleetEngine, type FleetLink, type FleetStats, type Published } from './fleet.js';
import type { GoneEvidence } from './types.js';
import { FleetConsumer } from './fleetConsumer.js';
import { FleetLooks, wantServer, type WantedServer } from './fleetLooks.js';
import { PROOF_RETENTION_MS } from './fleetWatcher.js';


/** What {@link InProcessFleet.join} needs of a client (a `NovaClient` has it). */
export interface FleetClient {
  readonly deleteEngine: FleetEngine;
  /** The client's project id. */
  readonly projectId: string | undefined;
  /** The client's Nova endpoint (from its options or its service catalog). */
  endpoint(): Promise<string>;
}

/** One member of an {@link InProcessFleet} (what `join` resolves): {@link InProcessFleet.Member}. */
export type InProcessFleetMember = InProcessFleet.Member;

/** A fleet watcher for the clients of one process (see the module). */
export class InProcessFleet {
  readonly #members: Member[] = [];
  /** The endpoint and project the first member bound the fleet to. */
  #scope: LedgerScope | undefined;
  #looks: FleetLooks | undefined;
  #epoch = 0;
  #seq = 0;
  #pending: Published[] = [];
  #flushQueued = false;
  #syncQueued = false;
  /**
   * What each member (but the watcher) waits on, as the last sync read it: its interest with the
   * kept proofs handed, each deadline as clock time. A sync reads again only the members whose
   * interest changed since ({@link InProcessFleet.#dirty}): reading every member's on each change
   * made a fleet of N hosts cost N reads a change (quadratic in the fleet over a day).
   */
  readonly #interest = new Map<Member, ReadonlyArray<{ readonly serverId: string; readonly deadlineAt: number; readonly want: WantedServer }>>();
  /** Members whose interest changed since the last sync. */
  readonly #dirty = new Set<Member>();
  /** Proofs published lately, by server id: the evidence, the epoch that published it and the watcher's clock time. */
  readonly #proofs = new Map<string, { evidence: GoneEvidence; epoch: number; at: number }>();

  /** The member that watches now, if any. */
  get watcher(): InProcessFleetMember | undefined {
    return this.#members[0];
  }

  /** Members joined. */
  get size(): number {
    return this.#members.length;
  }

  /**
   * Link `client`'s delete engine to the fleet. The first member watches; the others consume from
   * the next publication on. A fleet answers for one Nova endpoint and one project: the first client
   * to join binds it, and a client of another endpoint or project is refused (the watcher's look at
   * another project's server, or another region's, would answer 404 for a server that lives).
   * @param client - a `NovaClient` with a `projectId` (given, or from a noauth token).
   * @throws {@link ValidationError} when `client` is not a client (null, a plain object), has no `projectId`, names another endpoint or
   * project than the fleet's (endpoints compared as the ledgers compare them: scheme and host case,
   * default port, trailing slash), has joined already, or its engine has a fleet link already.
   */
  async join(client: FleetClient): Promise<InProcessFleetMember> {
    const c = client as Partial<FleetClient> | null | undefined;
    if (!c || typeof c !== 'object' || typeof c.endpoint !== 'function' || !c.deleteEngine) {
      throw new ValidationError(`InProcessFleet.join needs a NovaClient (got ${c === null ? 'null' : typeof c})`);
    }
    const projectId = client.projectId;
    if (projectId === undefined || projectId === '') throw new ValidationError('InProcessFleet.join: the client has no projectId; a fleet answers for one project (set projectId on the NovaClient)');
    const scope = ledgerScope(await client.endpoint(), projectId);
    this.#scope ??= scope;
    if (!sameScope(this.#scope, scope)) {
      throw new ValidationError(`InProcessFleet.join: this fleet answers for project ${this.#scope.projectId} at ${this.#scope.endpoint}; the client is of project ${scope.projectId} at ${scope.endpoint}`);
    }
    const engine = client.deleteEngine;
    if (this.#members.some((m) => m.engine === engine)) throw new ValidationError('this client has joined this fleet already');
    const member = new Member(engine, this.#hub);
    this.#members.push(member);
    if (this.#members.length === 1) this.#elect();
    else this.#heartbeat();
    return member;
  }

  /** Every member leaves. Idempotent. */
  close(): void {
    for (const m of [...this.#members].reverse()) m.leave();
  }

  /** What the members ask of their fleet (not part of the class's surface). */
  readonly #hub: Hub = {
    changed: (m) => this.#changed(m),
    isWatcher: (m) => this.#members[0] === m,
    epoch: () => this.#epoch,
    left: (m) => this.#left(m),
  };

  /** A member's interest changed: follow it in a microtask (the watcher's own interest is not the fleet's). */
  #changed(member: Member | undefined): void {
    if (member !== undefined) {
      if (member === this.#members[0]) return;
      this.#dirty.add(member);
    }
    if (this.#syncQueued) return;
    this.#syncQueued = true;
    queueMicrotask(() => {
      this.#syncQueued = false;
      this.#sync();
    });
  }

  /** `member` leaves. */
  #left(member: Member): void {
    const i = this.#members.indexOf(member);
    if (i < 0) return;
    if (i === 0) this.#flush(false);
    this.#members.splice(i, 1);
    if (i === 0) {
      this.#looks?.stop('the watching member left');
      this.#looks = undefined;
      if (this.#members.length > 0) this.#elect();
    } else {
      this.#interest.delete(member);
      this.#dirty.delete(member);
      this.#changed(undefined);
    }
  }

  /** The oldest member watches, with a new epoch; its own waits look by themselves. */
  #elect(): void {
    const watcher = this.#members[0]!;
    this.#epoch++;
    watcher.stats.elections++;
    watcher.consumer.sawEpoch(this.#epoch);
    watcher.consumer.stop();
    watcher.engine.fleetChanged();
    this.#looks = new FleetLooks(watcher.engine, (item) => this.#queue(item));
    // Every member's interest is read again: the old watcher's is gone, the new one's is not the fleet's.
    this.#interest.clear();
    for (const m of this.#members) if (m !== watcher) this.#dirty.add(m);
    this.#sync();
    this.#heartbeat();
  }

  /** Follow the interest of every member but the watcher (read again for those whose interest changed, each handed its kept proofs). */
  #sync(): void {
    const looks = this.#looks;
    const watcher = this.#members[0];
    if (!looks || !watcher) return;
    const now = watcher.engine.clock.now();
    for (const [id, p] of this.#proofs) if (now - p.at > PROOF_RETENTION_MS) this.#proofs.delete(id);
    for (const m of this.#dirty) {
      if (m === watcher || !this.#members.includes(m)) continue;
      const items = [];
      for (const i of m.engine.interest()) {
        const kept = this.#proofs.get(i.serverId);
        if (kept && m.consumer.proof(i.serverId, kept.evidence, kept.epoch)) continue;
        items.push({ serverId: i.serverId, deadlineAt: now + i.remainingMs, want: i });
      }
      this.#interest.set(m, items);
    }
    this.#dirty.clear();
    const wanted = new Map<string, WantedServer>();
    for (const [m, items] of this.#interest) {
      if (m === watcher) continue;
      for (const i of items) wantServer(wanted, i.serverId, { ...i.want, remainingMs: Math.max(0, i.deadlineAt - now) });
    }
    looks.follow(wanted);
  }

  #queue(item: Published): void {
    this.#pending.push(item);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    queueMicrotask(() => this.#flush(false));
  }

  #heartbeat(): void {
    queueMicrotask(() => this.#flush(true));
  }

  /** Hand what is pending (with `heartbeat`, also when nothing is) to every member but the watcher, in order. */
  #flush(heartbeat: boolean): void {
    if (!heartbeat) this.#flushQueued = false;
    const watcher = this.#members[0];
    if (!watcher || (!heartbeat && this.#pending.length === 0)) return;
    const items = this.#pending;
    this.#pending = [];
    const now = watcher.engine.clock.now();
    for (const it of items) if ('g' in it) this.#proofs.set(it.i, { evidence: it.g, epoch: this.#epoch, at: now });
    const offset = watcher.engine.novaOffsetMs;
    const pub = { epoch: this.#epoch, seq: ++this.#seq, novaDateMs: offset === undefined ? undefined : watcher.engine.clock.wallNow() + offset, items };
    watcher.stats.published++;
    for (const m of [...this.#members]) if (m !== watcher) m.consumer.take(pub);
  }
}

/**
 * The types of an {@link InProcessFleet}, named as `InProcessFleet.Member` and `InProcessFleet.Stats`
 * (`import { InProcessFleet } from 'nova-guard'`: `const m: InProcessFleet.Member = await fleet.join(client)`).
 */
// A namespace of types only, merged with the class: the names come with the class, not as more names on the main entry (test/index.test.ts caps them).
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace InProcessFleet {
  /** One member of an {@link InProcessFleet}: a client's engine linked to the fleet (what {@link InProcessFleet.join} resolves). */
  interface Member {
    /** True while this member watches for the fleet (its own waits look by themselves). */
    readonly watching: boolean;
    /** True while this member's waits take their answers from the watcher's publications. */
    readonly consuming: boolean;
    /** The epoch of the watcher whose publications this member takes (one more for each watcher). */
    readonly epoch: number;
    /** This member's counters. */
    readonly stats: Stats;
    /** Leave the fleet: the member's waits look by themselves again; if it watched, the next member watches. Idempotent. */
    leave(): void;
  }
  /**
   * A member's counters since it joined (counts): `elections` (times it became the watcher),
   * `published` (publications it handed out as the watcher), `consumed` (publications it used),
   * `proofs` (proofs of deletion that ended its waits), `staleEpoch`, `gaps`, `fallbacks` (times it
   * fell back to its own looks), `distrusted` (times it dropped a watcher's proofs Nova contradicted).
   * The same shape as `FleetStats` of `nova-guard/redis`.
   */
  type Stats = FleetStats;
}

/** What a member asks of its fleet. */
interface Hub {
  changed(member: Member): void;
  isWatcher(member: Member): boolean;
  epoch(): number;
  left(member: Member): void;
}

/** One client's engine in an {@link InProcessFleet}. */
class Member implements FleetLink, InProcessFleetMember {
  readonly stats = newFleetStats();
  readonly consumer: FleetConsumer;
  readonly #detach: () => void;
  #left = false;

  constructor(
    readonly engine: FleetEngine,
    private readonly fleet: Hub,
  ) {
    this.#detach = engine.attachFleet(this);
    // Publications in one process come in order and at once: no gap, no stall.
    this.consumer = new FleetConsumer({ engine, clock: engine.clock, logger: engine.api.logger, stats: this.stats, stallMs: Number.POSITIVE_INFINITY, catchUp: () => fleet.changed(this) });
  }

  get watching(): boolean {
    return !this.#left && this.fleet.isWatcher(this);
  }

  get consuming(): boolean {
    return !this.#left && !this.fleet.isWatcher(this) && this.consumer.consuming;
  }

  get epoch(): number {
    return this.fleet.epoch();
  }

  interestChanged(): void {
    if (!this.#left) this.fleet.changed(this);
  }

  ownLookAlive(serverId: string, sentAt: number): void {
    if (!this.#left) this.consumer.ownLookAlive(serverId, sentAt);
  }

  leave(): void {
    if (this.#left) return;
    this.#left = true;
    this.consumer.stop();
    this.#detach();
    this.fleet.left(this);
  }
}

