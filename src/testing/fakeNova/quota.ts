/**
 * Quota of the fake: limits, reported usage (truth + drift + lag) and the create-time check, ported
 * from Nova's legacy `DbQuotaDriver` path: `nova/compute/utils.py` `check_num_instances_quota`,
 * `get_headroom`, `get_over_quota_detail` and `nova/exception.py` `TooManyInstances`.
 *
 * @module
 */
import type { FakeFlavor, UsageCounts } from './types.js';

/** The three resources checked on create, in Nova's (alphabetical) order. */
export const RESOURCES = ['cores', 'instances', 'ram'] as const;
/** One of {@link RESOURCES}. */
export type Resource = (typeof RESOURCES)[number];

/** Result of {@link checkCreateQuota}: how many servers to create, or Nova's 403 message. */
export type QuotaVerdict = { ok: true; count: number } | { ok: false; message: string };

/**
 * Nova's `TooManyInstances` text: `Quota exceeded for <overs>: Requested <req>, but already used
 * <used> of <allowed> <overs>`, each list joined with `', '`.
 */
export function tooManyInstancesMessage(
  overs: readonly string[],
  requested: readonly (string | number)[],
  used: readonly number[],
  allowed: readonly number[],
): string {
  const o = overs.join(', ');
  return `Quota exceeded for ${o}: Requested ${requested.join(', ')}, but already used ${used.join(', ')} of ${allowed.join(', ')} ${o}`;
}

/**
 * The create-time check of `check_num_instances_quota`: a request of `maxCount` servers fits iff
 * `used + requested <= limit` for cores, instances and ram (`-1` = unlimited). If it does not fit but
 * at least `minCount` would, Nova silently creates fewer; otherwise the 403 message.
 *
 * @param used - What Nova counts as used (the fake's truth plus drift).
 */
export function checkCreateQuota(
  flavor: FakeFlavor,
  minCount: number,
  maxCount: number,
  used: UsageCounts,
  limits: UsageCounts,
): QuotaVerdict {
  const deltas: UsageCounts = { instances: maxCount, cores: maxCount * flavor.vcpus, ram: maxCount * flavor.ram };
  const overs = RESOURCES.filter((r) => limits[r] >= 0 && limits[r] < used[r] + deltas[r]);
  if (overs.length === 0) return { ok: true, count: maxCount };

  // get_headroom
  const headroom: UsageCounts = {
    cores: limits.cores - used.cores,
    instances: limits.instances - used.instances,
    ram: limits.ram - used.ram,
  };
  if (limits.cores === -1) {
    headroom.cores = deltas.cores ? (headroom.instances * deltas.cores) / (deltas.instances || 1) : headroom.instances;
  }
  if (limits.ram === -1) {
    headroom.ram = deltas.ram ? (headroom.instances * deltas.ram) / (deltas.instances || 1) : headroom.instances;
  }
  let allowed = headroom.instances;
  if (flavor.vcpus) allowed = Math.min(allowed, Math.floor(headroom.cores / flavor.vcpus));
  if (flavor.ram) allowed = Math.min(allowed, Math.floor(headroom.ram / flavor.ram));
  if (allowed > 0 && minCount <= allowed && allowed <= maxCount) {
    return checkCreateQuota(flavor, minCount, allowed, used, limits);
  }
  const numInstances = minCount === maxCount ? String(minCount) : `${minCount}-${maxCount}`;
  const requested: Record<Resource, string | number> = {
    instances: numInstances,
    cores: deltas.cores,
    ram: deltas.ram,
  };
  return {
    ok: false,
    message: tooManyInstancesMessage(
      overs,
      overs.map((r) => requested[r]),
      overs.map((r) => limits[r] - headroom[r]),
      overs.map((r) => limits[r]),
    ),
  };
}

/**
 * The message conductor's quota recheck writes into the fault of the servers it sets to ERROR
 * (`check_num_instances_quota` with deltas 0 and `orig_num_req`): "used" is the limit itself.
 */
export function recheckMessage(flavor: FakeFlavor, count: number, limits: UsageCounts): string {
  const requested: UsageCounts = { cores: count * flavor.vcpus, instances: count, ram: count * flavor.ram };
  let overs = RESOURCES.filter((r) => r === 'cores' && limits.cores >= 0);
  if (overs.length === 0) overs = RESOURCES.filter((r) => limits[r] >= 0).slice(0, 1);
  if (overs.length === 0) overs = ['instances'];
  return tooManyInstancesMessage(
    overs,
    overs.map((r) => requested[r]),
    overs.map((r) => limits[r]),
    overs.map((r) => limits[r]),
  );
}

interface LagEntry {
  untilMs: number;
  usage: UsageCounts;
}

/** Limits, drift and quota lag of the fake's one project. */
export class QuotaBook {
  /** Current limits (`-1` = unlimited). */
  limits: UsageCounts;
  /** Phantom usage added to what Nova counts (may be negative). */
  drift: UsageCounts = { cores: 0, instances: 0, ram: 0 };
  private readonly lag: LagEntry[] = [];
  private lagHead = 0;

  constructor(
    readonly defaults: UsageCounts,
    private readonly lagMs: number,
  ) {
    this.limits = { ...defaults };
  }

  /** Record that `usage` was released at `nowMs` (a destroy): reported usage keeps it for `lagMs`. */
  released(usage: UsageCounts, nowMs: number): void {
    if (this.lagMs <= 0) return;
    this.lag.push({ untilMs: nowMs + this.lagMs, usage });
  }

  /** What Nova counts at check time: truth plus drift. */
  counted(truth: UsageCounts): UsageCounts {
    return {
      cores: truth.cores + this.drift.cores,
      instances: truth.instances + this.drift.instances,
      ram: truth.ram + this.drift.ram,
    };
  }

  /** What `/limits` and the quota detail report: truth plus drift plus not-yet-expired lag. */
  reported(truth: UsageCounts, nowMs: number): UsageCounts {
    const u = this.counted(truth);
    while (this.lagHead < this.lag.length && this.lag[this.lagHead]!.untilMs <= nowMs) this.lagHead++;
    if (this.lagHead > 1024 && this.lagHead * 2 > this.lag.length) {
      this.lag.splice(0, this.lagHead);
      this.lagHead = 0;
    }
    for (let i = this.lagHead; i < this.lag.length; i++) {
      const e = this.lag[i]!;
      if (e.untilMs <= nowMs) continue;
      u.cores += e.usage.cores;
      u.instances += e.usage.instances;
      u.ram += e.usage.ram;
    }
    return u;
  }
}
