/**
 * What the fake records for over-commit proofs: the most cores, instances and RAM held at once by
 * servers that exist (accepted creates not yet destroyed, counted by Nova or not), the quota 403s it
 * sent and the servers conductor's quota recheck put in ERROR.
 *
 * @module
 */
import type { FakeUsage, UsageCounts } from './types.js';
import { usageReading } from './usage.js';

/** A snapshot of `QuotaRecorder`, as `FakeNova.quotaRecord()` answers it. */
export interface FakeQuotaRecord {
  /**
   * The most vCPUs held at once by servers that exist: every server not yet destroyed (GET does not
   * answer 404 yet) and not soft-deleted, whether Nova counts it yet or not (a build request in
   * `scheduling` is held here although Nova's legacy counting leaves it out). Above `limits.cores`
   * means the project was over-committed.
   */
  peakCores: number;
  /** The most such servers at once. */
  peakInstances: number;
  /** The most RAM (MiB) held at once by such servers. */
  peakRamMiB: number;
  /** Quota 403s sent (`POST /servers` and `restore` refused by the quota check; injected faults are not counted). */
  quota403s: number;
  /** Servers conductor's quota recheck set to ERROR (those of `failCreatesWithQuotaRecheck` included). */
  recheckErrors: number;
  /** The quota limits when the record was read (`-1` = unlimited). */
  limits: FakeUsage;
}

/** Running totals behind {@link FakeQuotaRecord}. */
export class QuotaRecorder {
  private readonly held: UsageCounts = { cores: 0, instances: 0, ram: 0 };
  private readonly peak: UsageCounts = { cores: 0, instances: 0, ram: 0 };
  /** Quota 403s sent. */
  quota403s = 0;
  /** Servers put in ERROR by the recheck. */
  recheckErrors = 0;

  /** A server starts (`sign` 1) or stops (-1) being held. */
  hold(u: UsageCounts, sign: 1 | -1): void {
    this.held.cores += sign * u.cores;
    this.held.instances += sign * u.instances;
    this.held.ram += sign * u.ram;
    if (sign > 0) {
      this.peak.cores = Math.max(this.peak.cores, this.held.cores);
      this.peak.instances = Math.max(this.peak.instances, this.held.instances);
      this.peak.ram = Math.max(this.peak.ram, this.held.ram);
    }
  }

  /** Start over: peaks from what is held now, counters at 0. */
  reset(): void {
    Object.assign(this.peak, this.held);
    this.quota403s = 0;
    this.recheckErrors = 0;
  }

  /** A snapshot with the current `limits`. */
  snapshot(limits: UsageCounts): FakeQuotaRecord {
    return {
      peakCores: this.peak.cores,
      peakInstances: this.peak.instances,
      peakRamMiB: this.peak.ram,
      quota403s: this.quota403s,
      recheckErrors: this.recheckErrors,
      limits: usageReading(limits),
    };
  }
}
