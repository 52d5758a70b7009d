/**
 * Quota headroom from `GET /limits`: plain data in, plain data out.
 *
 * Rules (Nova API reference, "Limits"; `nova/quota.py` `DbQuotaDriver`; docs/field-cases.md,
 * "Unlimited, zero, and usage above the limit" and "Stale or wrong usage in /limits"):
 * - headroom = max - used - inFlight per resource, where inFlight is what this process has claimed
 *   but Nova may not count yet;
 * - `-1` (parsed to `Infinity` by the client) means unlimited: headroom `Infinity`;
 * - used above max (a lowered quota) means headroom 0, never negative or `NaN`;
 * - a missing max or used means unknown (`undefined`): the guard then lets Nova decide;
 * - a request fits iff `needed <= headroom` (Nova: `used + requested <= limit`), and can never fit
 *   iff `needed > max` (nodepool's `hasProviderQuota`).
 *
 * Vocabulary: amounts are {@link ResourceAmounts} (`cores`, `ramMiB`, `instances`); records per
 * resource ({@link Headroom}, {@link Shortfall}) are keyed or named by Nova's quota resource names
 * (`cores`, `ram`, `instances`), as `GET /os-quota-sets/{project_id}/detail` keys them.
 *
 * @module
 */
import type { AbsoluteLimits, QuotaResourceName, ResourceAmounts } from '../core/types.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';

export type { QuotaResourceName } from '../core/types.js';

/**
 * What one create needs: vCPUs (`cores`: flavor `vcpus` × server count), RAM in MiB (`ramMiB`:
 * flavor `ram` × server count) and servers (`instances`). The guard's name for {@link ResourceAmounts}.
 */
export type QuotaNeeds = ResourceAmounts;

/** The three resources Nova checks on create, in Nova's (alphabetical) order. */
export const QUOTA_RESOURCES: readonly QuotaResourceName[] = ['cores', 'instances', 'ram'];

/** The {@link ResourceAmounts} field of each of Nova's quota resources (`ram` is `ramMiB`). */
export const AMOUNT_FIELD: Readonly<Record<QuotaResourceName, keyof ResourceAmounts>> = Object.freeze({ cores: 'cores', instances: 'instances', ram: 'ramMiB' });

/** One resource's numbers. */
export interface ResourceHeadroom {
  /** The limit (`maxTotalCores`, ...): `Infinity` for -1, `undefined` when `/limits` did not say. */
  max: number | undefined;
  /** What Nova reports as used (`totalCoresUsed`, ...), `undefined` when `/limits` did not say. */
  used: number | undefined;
  /** Claimed by this guard's creates that Nova may not count yet. */
  inFlight: number;
  /**
   * `max - used - inFlight`, clamped at 0; `Infinity` when unlimited; `undefined` when max or used is
   * unknown.
   */
  headroom: number | undefined;
}

/**
 * Headroom of `cores`, `ramMiB` and `instances`, with where the numbers came from. RAM is spelt
 * `ramMiB`, as in the guard's needs, claims and the audit; `ram` is the same object under its old name.
 */
export interface Headroom {
  cores: ResourceHeadroom;
  /** RAM, in MiB. */
  ramMiB: ResourceHeadroom;
  /**
   * RAM, in MiB: the same object as `ramMiB`, under Nova's quota resource name.
   * @deprecated Use `ramMiB`; `ram` will be removed in a future major version.
   */
  ram: ResourceHeadroom;
  instances: ResourceHeadroom;
  /** Always `'limits'`: Nova's `GET /limits` absolute block. */
  source: 'limits';
  /** `x-openstack-request-id` of the `/limits` response. */
  requestId: string | undefined;
  /** When the `/limits` response arrived (epoch ms, local clock). */
  readAtMs: number;
}

/** `/limits` keys of each resource (Nova's `views/limits.py`). */
export const LIMIT_KEYS: Record<QuotaResourceName, { max: string; used: string }> = {
  cores: { max: 'maxTotalCores', used: 'totalCoresUsed' },
  instances: { max: 'maxTotalInstances', used: 'totalInstancesUsed' },
  ram: { max: 'maxTotalRAMSize', used: 'totalRAMUsed' },
};

/** The amount of one of Nova's quota resources in `amounts`. */
export function neededOf(amounts: ResourceAmounts, resource: QuotaResourceName): number {
  return amounts[AMOUNT_FIELD[resource]];
}

function resourceHeadroom(max: number | undefined, used: number | undefined, inFlight: number): ResourceHeadroom {
  // A limit of 0 with usage above it is what unified limits show for a resource with no limit
  // registered in Keystone: unknown (Nova decides), not "no room" and not "never fits".
  if (max === 0 && used !== undefined && used > 0) return { max: undefined, used, inFlight, headroom: undefined };
  let headroom: number | undefined;
  if (max === undefined || used === undefined) headroom = undefined;
  else if (max === Number.POSITIVE_INFINITY) headroom = Number.POSITIVE_INFINITY;
  else headroom = Math.max(0, max - used - inFlight);
  return { max, used, inFlight, headroom };
}

/**
 * Compute headroom from the parsed `absolute` block of `GET /limits` and this process's in-flight
 * claims.
 *
 * @param absolute - `NovaClient.getLimits().absolute` (-1 already `Infinity`, missing `undefined`).
 * @param inFlight - Claimed but possibly not yet counted by Nova; zeros when none.
 */
export function computeHeadroom(
  absolute: AbsoluteLimits,
  inFlight: ResourceAmounts,
  meta: { requestId?: string | undefined; readAtMs: number },
): Headroom {
  const ramMiB = resourceHeadroom(absolute.maxTotalRAMSize, absolute.totalRAMUsed, inFlight.ramMiB);
  return {
    cores: resourceHeadroom(absolute.maxTotalCores, absolute.totalCoresUsed, inFlight.cores),
    instances: resourceHeadroom(absolute.maxTotalInstances, absolute.totalInstancesUsed, inFlight.instances),
    ramMiB,
    ram: ramMiB,
    source: 'limits',
    requestId: meta.requestId,
    readAtMs: meta.readAtMs,
  };
}

/** One resource that does not fit, with its numbers. */
export interface Shortfall extends ResourceHeadroom {
  resource: QuotaResourceName;
  /** What the request needs of it. */
  needed: number;
}

/** Verdict of {@link checkFit}. */
export interface FitVerdict {
  /** `'fits'`, `'short'` (wait: others may free it) or `'never'` (needed above the limit itself). */
  verdict: 'fits' | 'short' | 'never';
  /** Resources where needed > headroom (with `'never'`: where needed > max). */
  shortfalls: Shortfall[];
}

/** The names of a {@link QuotaNeeds}: `{ ram }` is refused (did you mean ramMiB?), not read as 0. */
const NEEDS_NAMES: OptionsSpec<ResourceAmounts> = { cores: null, ramMiB: null, instances: null };

/**
 * Does `needs` fit in `headroom`? A resource with unknown headroom, or needed 0, never blocks.
 * `'never'` wins over `'short'`: when some resource needs more than its limit, waiting cannot help.
 */
export function checkFit(needs: QuotaNeeds, headroom: Headroom): FitVerdict {
  checkOptions('checkFit needs', needs, NEEDS_NAMES);
  const never: Shortfall[] = [];
  const short: Shortfall[] = [];
  for (const resource of QUOTA_RESOURCES) {
    const needed = neededOf(needs, resource);
    const h = headroom[resource];
    if (needed <= 0) continue;
    if (h.max !== undefined && needed > h.max) never.push({ resource, needed, ...h });
    else if (h.headroom !== undefined && needed > h.headroom) short.push({ resource, needed, ...h });
  }
  if (never.length > 0) return { verdict: 'never', shortfalls: never };
  if (short.length > 0) return { verdict: 'short', shortfalls: short };
  return { verdict: 'fits', shortfalls: [] };
}

function num(n: number | undefined): string {
  if (n === undefined) return 'unknown';
  return n === Number.POSITIVE_INFINITY ? '-1' : String(n);
}

/**
 * Shortfalls in Nova's `/limits` terms, e.g. `cores: maxTotalCores=10 totalCoresUsed=8 requested=4
 * inFlight=0`; several resources are joined with `'; '`.
 */
export function describeShortfalls(shortfalls: readonly Shortfall[]): string {
  return shortfalls
    .map((s) => {
      const keys = LIMIT_KEYS[s.resource];
      return `${s.resource}: ${keys.max}=${num(s.max)} ${keys.used}=${num(s.used)} requested=${s.needed} inFlight=${s.inFlight}`;
    })
    .join('; ');
}

/** Shortfalls as `QuotaExceededError` resources (`allowed` is the limit, `used` Nova's count). */
export function shortfallResources(shortfalls: readonly Shortfall[]): Array<{ name: string; requested: number; used: number; allowed: number }> {
  return shortfalls.map((s) => ({
    name: s.resource,
    requested: s.needed,
    used: s.used ?? 0,
    allowed: s.max === Number.POSITIVE_INFINITY ? -1 : (s.max ?? -1),
  }));
}

/** Sum of two amounts. */
export function addNeeds(a: ResourceAmounts, b: ResourceAmounts): ResourceAmounts {
  return { cores: a.cores + b.cores, ramMiB: a.ramMiB + b.ramMiB, instances: a.instances + b.instances };
}

/** Amounts of nothing. */
export const NO_NEEDS: Readonly<ResourceAmounts> = Object.freeze({ cores: 0, ramMiB: 0, instances: 0 });

/** True when any amount is above 0. */
export function isAnything(a: ResourceAmounts): boolean {
  return a.cores > 0 || a.ramMiB > 0 || a.instances > 0;
}

/**
 * The fit check of a ledger's `admit`, from raw headroom (before claims): `needs` fits when, for
 * every resource it needs, raw headroom minus `inFlight` (at least 0) covers it, and, when anything
 * is queued ahead, covers `needs + ahead` too (the same verdicts as {@link checkFit} on
 * {@link computeHeadroom} with `inFlight`). Unknown (`undefined`) or unlimited headroom never blocks.
 */
export function fitsRawHeadroom(raw: Readonly<Partial<ResourceAmounts>>, inFlight: ResourceAmounts, needs: ResourceAmounts, ahead: ResourceAmounts): boolean {
  const fits = (want: ResourceAmounts): boolean =>
    (['cores', 'ramMiB', 'instances'] as const).every((k) => {
      const h = raw[k];
      return want[k] <= 0 || h === undefined || h === Number.POSITIVE_INFINITY || want[k] <= Math.max(0, h - inFlight[k]);
    });
  return fits(needs) && (!isAnything(ahead) || fits(addNeeds(needs, ahead)));
}

/** Raw headroom (before any claim) of a `/limits` reading, as a ledger's `admit` takes it. */
export function rawHeadroomOf(absolute: AbsoluteLimits): { cores: number | undefined; ramMiB: number | undefined; instances: number | undefined } {
  const h = computeHeadroom(absolute, NO_NEEDS, { readAtMs: 0 });
  return { cores: h.cores.headroom, ramMiB: h.ramMiB.headroom, instances: h.instances.headroom };
}

/**
 * A kept reading credited with a deletion it counted (`FreedCredit`, `src/ledger/port.ts`): the used
 * totals (`totalCoresUsed`, `totalRAMUsed`, `totalInstancesUsed`) less `freed`; a total the reading
 * does not give stays absent. `undefined` (no credit: the ledger then makes the reading stale as for
 * any deletion) when the reading gives none of the three, or when a total it gives is below what
 * `freed` takes from it (such a reading did not count the server). The Redis ledger's FREED script
 * does the same in Lua (`CREDIT`, `src/redis/luaChunks.ts`).
 */
export function creditedLimits(absolute: AbsoluteLimits, freed: ResourceAmounts): AbsoluteLimits | undefined {
  const out: Record<string, unknown> = { ...absolute };
  let any = false;
  for (const r of QUOTA_RESOURCES) {
    const key = LIMIT_KEYS[r].used;
    const used = (absolute as Record<string, unknown>)[key];
    if (typeof used !== 'number' || !Number.isFinite(used)) continue;
    const less = used - freed[AMOUNT_FIELD[r]];
    if (less < 0) return undefined;
    out[key] = less;
    any = true;
  }
  return any ? (out as AbsoluteLimits) : undefined;
}
