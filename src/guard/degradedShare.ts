/**
 * The share rule of degraded mode: what one process may hold of the quota while its ledger has been
 * out of reach for longer than any claim of it can live there (`degradedLedger.ts` decides when).
 *
 * - The fleet, as last seen: the holder names of the live holders as the ledger object last saw
 *   them (`QuotaLedger.members()`: its store's last answers, heartbeats included). A holder name `<hostname>:<pid>` (the
 *   default) belongs to host `<hostname>`; any other name counts as a host of its own.
 * - A host's share of a resource is its quota (`maxTotalCores`, `maxTotalRAMSize`,
 *   `maxTotalInstances` of a fresh `GET /limits`) divided by the number of hosts; this process's part
 *   of it is the host's share divided by the processes of its host among the live holders (so the
 *   processes of one host, which cannot see each other's claims without the ledger either, stay
 *   within the host's share together): `quota / hosts / processesOnThisHost`.
 * - What this process holds: every server it created and has not seen deleted (from the 202 to the
 *   404 its client confirms) and every claim it holds without a server yet.
 * - It admits `needs` when (1) the fresh reading, minus this process's own claims in flight, leaves
 *   room for them, and (2) for every resource with a quota, `held + needs <= its part`, or it holds
 *   nothing at all: a part smaller than one create still lets the process run one create at a time
 *   (degraded mode costs speed, never jobs). Nova's quota check (the 403 path) and the guard's
 *   recheck stay the last line: another host's share is only assumed, not seen.
 *
 * @module
 */
import type { AbsoluteLimits, ResourceAmounts } from '../core/types.js';
import { AMOUNT_FIELD, LIMIT_KEYS, NO_NEEDS, QUOTA_RESOURCES, addNeeds, type QuotaLedger, type Shortfall } from '../ledger/index.js';

/** Most servers of this process remembered for the share (the oldest are forgotten past it). */
export const MAX_HELD_SERVERS = 10_000;

/** The host a holder name belongs to: `<hostname>` of `<hostname>:<pid>`, else the name itself. */
export function hostOf(holder: string): string {
  const m = /^(.*):\d+$/.exec(holder);
  return m && m[1] !== '' ? m[1]! : holder;
}

/** The fleet as one process sees it: hosts among the live holders, and the processes of its own host. */
export interface Fleet {
  /** Distinct hosts among the live holders (this process's included), at least 1. */
  readonly hosts: number;
  /** Live holders of this process's host (itself included), at least 1. */
  readonly processesOnHost: number;
}

/** The fleet of `members` (holder names, one per live ledger object) as seen by `holder`. */
export function fleetOf(members: readonly string[], holder: string): Fleet {
  const all = members.includes(holder) ? members : [...members, holder];
  const mine = hostOf(holder);
  return { hosts: new Set(all.map(hostOf)).size, processesOnHost: all.filter((m) => hostOf(m) === mine).length };
}

/**
 * This process's part of the quota per resource (see the module description): `max / hosts /
 * processesOnHost`; `undefined` for a resource without a quota in the reading (unlimited or unknown).
 */
export function partOf(absolute: AbsoluteLimits, fleet: Fleet): Partial<ResourceAmounts> {
  const part: Partial<ResourceAmounts> = {};
  for (const r of QUOTA_RESOURCES) {
    const max = absolute[LIMIT_KEYS[r].max];
    if (typeof max !== 'number' || !Number.isFinite(max) || max < 0) continue;
    part[AMOUNT_FIELD[r]] = max / fleet.hosts / fleet.processesOnHost;
  }
  return part;
}

/** The verdict of the share rule: admitted, or the shortfalls that keep the call waiting. */
export type ShareVerdict = { readonly admits: true } | { readonly admits: false; readonly shortfalls: Shortfall[] };

/**
 * The rule (see the module description). `inFlight`: this process's claims Nova may not count yet;
 * `held`: what it holds (servers and claims without one); `nothingHeld`: it holds no server and no claim.
 */
export function shareVerdict(absolute: AbsoluteLimits, fleet: Fleet, needs: ResourceAmounts, inFlight: ResourceAmounts, held: ResourceAmounts, nothingHeld: boolean): ShareVerdict {
  const part = partOf(absolute, fleet);
  const shortfalls: Shortfall[] = [];
  for (const r of QUOTA_RESOURCES) {
    const f = AMOUNT_FIELD[r];
    const needed = needs[f];
    if (needed <= 0) continue;
    const max = absolute[LIMIT_KEYS[r].max];
    const used = absolute[LIMIT_KEYS[r].used];
    if (typeof max !== 'number' || !Number.isFinite(max) || max < 0) continue;
    const usedNow = typeof used === 'number' && Number.isFinite(used) ? used : 0;
    const room = max - usedNow - inFlight[f];
    const share = part[f]!;
    const shareRoom = nothingHeld ? Math.max(share, needed) - held[f] : share - held[f];
    const headroom = Math.max(0, Math.floor(Math.min(room, shareRoom)));
    if (needed > room || needed > shareRoom) shortfalls.push({ resource: r, needed, max, used: usedNow, inFlight: inFlight[f], headroom });
  }
  return shortfalls.length === 0 ? { admits: true } : { admits: false, shortfalls };
}

/**
 * What the share rule remembers: the fleet as last seen, and the servers this process created and
 * has not seen deleted. One per {@link DegradedLedger}.
 */
export class ShareRule {
  readonly #ledger: Pick<QuotaLedger, 'holder' | 'members'>;
  readonly #servers = new Map<string, ResourceAmounts>();

  constructor(ledger: Pick<QuotaLedger, 'holder' | 'members'>) {
    this.#ledger = ledger;
  }

  /** The fleet as last seen by the ledger (`QuotaLedger.members`), or `undefined` before its store said who is in it. */
  get fleet(): Fleet | undefined {
    let members: readonly string[];
    try {
      members = this.#ledger.members();
    } catch {
      return undefined;
    }
    return Array.isArray(members) && members.length > 0 ? fleetOf(members, this.#ledger.holder) : undefined;
  }

  /** This process created `serverId` (the POST answered 202) holding `needs`. */
  hold(serverId: string, needs: ResourceAmounts): void {
    this.#servers.set(serverId, { ...needs });
    if (this.#servers.size > MAX_HELD_SERVERS) this.#servers.delete(this.#servers.keys().next().value!);
  }

  /** `serverId` is gone (a deletion confirmed, or a create that made nothing). */
  freed(serverId: string): void {
    this.#servers.delete(serverId);
  }

  /** What this process holds: its servers, and `unbound` (the needs of its claims without a server yet). */
  held(unbound: readonly ResourceAmounts[]): { held: ResourceAmounts; nothing: boolean } {
    let held: ResourceAmounts = { ...NO_NEEDS };
    for (const n of this.#servers.values()) held = addNeeds(held, n);
    for (const n of unbound) held = addNeeds(held, n);
    return { held, nothing: this.#servers.size === 0 && unbound.length === 0 };
  }
}
