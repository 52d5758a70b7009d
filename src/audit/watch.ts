/**
 * `watchQuota(client, options)`: the audit sampled over time ("quota, count, quota", again and again),
 * separating drift that settles (builds, deletes under way) from drift that stays.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { throwIfAborted } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import { is } from '../core/validate.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { AUDIT_QUOTA_SPEC } from './options.js';
import { auditQuota } from './audit.js';
import { AUDIT_RESOURCES, type AuditResource } from './count.js';
import type { ResourceAmounts } from '../core/types.js';
import type { FindingKind } from './findings.js';
import type { AuditQuotaOptions, AuditVerdict, QuotaAudit } from './types.js';

/** Options of {@link watchQuota}: those of {@link auditQuota} (per sample) and the sampling. */
export interface WatchQuotaOptions extends AuditQuotaOptions {
  /** Pause between the end of one sample and the start of the next, in ms. @default 30000 */
  intervalMs?: number | undefined;
  /** Number of samples. @default 20 */
  samples?: number | undefined;
  /** Called with each sample as it is taken (e.g. to print a JSON line). */
  onSample?: ((sample: WatchSample, audit: QuotaAudit) => void) | undefined;
}

/** What {@link watchQuota} takes: {@link auditQuota}'s options and the sampling. */
const WATCH_QUOTA_SPEC: OptionsSpec<WatchQuotaOptions> = {
  ...AUDIT_QUOTA_SPEC,
  intervalMs: is.durationMs({ timer: true }),
  samples: is.integer({ min: 1 }),
  onSample: is.function,
};

/** One sample of a watch. */
export interface WatchSample {
  /** 0-based. */
  index: number;
  /** When the sample's audit started (the audit's `now` clock), epoch ms. */
  atMs: number;
  verdict: AuditVerdict;
  stable: boolean;
  /** Usage Nova reported (first reading of the sample). */
  reported: Partial<ResourceAmounts>;
  /** Usage of the listed servers. */
  counted: ResourceAmounts;
  /** `reported − counted` per resource; null when it could not be judged. */
  drift: Record<keyof ResourceAmounts, number | null>;
  /** The findings, by kind and servers. */
  findings: Array<{ kind: FindingKind; serverIds: string[] }>;
}

/** How one resource's drift behaved over the watch. */
export type DriftTrend = 'none' | 'settled' | 'persistent' | 'fluctuating' | 'unknown';

/** What {@link watchQuota} resolves. */
export interface QuotaWatch {
  samples: WatchSample[];
  /** Per resource: no drift, drift gone by the last sample, drift in every sample of the second half, drift that came back, or unknown (last sample not judged). */
  trend: Record<keyof ResourceAmounts, DriftTrend>;
  /** Findings (kind and server) present in every sample of the second half, the last included: they stay until someone acts. */
  persistent: Array<{ kind: FindingKind; serverId: string | undefined }>;
  /** Findings seen in some sample but gone by the last one. */
  settled: Array<{ kind: FindingKind; serverId: string | undefined }>;
  /** The last sample's audit. */
  last: QuotaAudit;
}

function sampleOf(index: number, a: QuotaAudit): WatchSample {
  const reported: Partial<ResourceAmounts> = {};
  const counted = { cores: 0, ramMiB: 0, instances: 0 };
  const drift = {} as Record<AuditResource, number | null>;
  for (const r of AUDIT_RESOURCES) {
    const v = a.resources[r].reportedBefore;
    if (v !== undefined) reported[r] = v;
    counted[r] = a.resources[r].counted;
    drift[r] = a.resources[r].drift;
  }
  return { index, atMs: a.startedAtMs, verdict: a.verdict, stable: a.stable, reported, counted, drift, findings: a.findings.map((f) => ({ kind: f.kind, serverIds: [...f.serverIds] })) };
}

/** Drift per resource over the samples: see {@link QuotaWatch.trend}. */
export function driftTrend(drifts: ReadonlyArray<number | null>): DriftTrend {
  const last = drifts[drifts.length - 1];
  if (last === null || last === undefined) return 'unknown';
  const secondHalf = drifts.slice(Math.floor(drifts.length / 2));
  if (last !== 0 && secondHalf.every((d) => d !== null && d !== 0)) return 'persistent';
  if (last !== 0) return 'fluctuating';
  return drifts.some((d) => d !== null && d !== 0) ? 'settled' : 'none';
}

function keys(s: WatchSample): string[] {
  return s.findings.flatMap((f) => (f.serverIds.length ? f.serverIds.map((id) => `${f.kind}\u0000${id}`) : [`${f.kind}\u0000`]));
}

function unkey(k: string): { kind: FindingKind; serverId: string | undefined } {
  const [kind, id] = k.split('\u0000') as [FindingKind, string];
  return { kind, serverId: id || undefined };
}

/**
 * Audit `samples` times, `intervalMs` apart, and say which drift settles and which stays. Read-only.
 *
 * @throws {@link ValidationError} for bad options (before any request); whatever a sample's
 *   {@link auditQuota} throws (an {@link OperationTimeoutError} when a sample's `timeoutMs` runs out);
 *   {@link AbortError} when `signal` aborts (also between samples).
 */
export async function watchQuota(client: NovaClient, options: WatchQuotaOptions = {}): Promise<QuotaWatch> {
  checkOptions('watchQuota options', options, WATCH_QUOTA_SPEC);
  const { intervalMs = 30_000, samples: count = 20, onSample, ...auditOptions } = options;
  const samples: WatchSample[] = [];
  let last: QuotaAudit | undefined;
  for (let i = 0; i < count; i++) {
    if (i > 0) await sleep(client.clock, intervalMs, options.signal);
    throwIfAborted(options.signal);
    last = await auditQuota(client, auditOptions);
    const s = sampleOf(i, last);
    samples.push(s);
    onSample?.(s, last);
  }
  const trend = {} as Record<AuditResource, DriftTrend>;
  for (const r of AUDIT_RESOURCES) trend[r] = driftTrend(samples.map((s) => s.drift[r]));
  const sets = samples.map((s) => new Set(keys(s)));
  const seen = new Set(sets.flatMap((s) => [...s]));
  const finalSet = sets[sets.length - 1]!;
  return {
    samples,
    trend,
    // As for the drift: a finding in every sample of the second half (the last included) stays.
    persistent: [...seen].filter((k) => sets.slice(Math.floor(sets.length / 2)).every((s) => s.has(k))).map(unkey),
    settled: [...seen].filter((k) => !finalSet.has(k)).map(unkey),
    last: last!,
  };
}
