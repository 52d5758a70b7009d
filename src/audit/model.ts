/**
 * How Nova counts the `cores`, `ram` (MiB: `ramMiB`) and `instances` usage of a project, per counting model, and
 * which model fits the usage Nova reports. Plain functions on plain data, used by {@link auditQuota}.
 *
 * Ported behaviour (not code) of `nova/quota.py`:
 * - `legacy` (`_instances_cores_ram_count_legacy` → `InstanceList.get_counts` in
 *   `nova/objects/instance.py`): every instance row of every cell that answers (cell0 included) that
 *   is not destroyed and not soft-deleted, summing its flavor's vCPUs and RAM. A DELETED record still
 *   counts until its row is destroyed; a server in BUILD counts once conductor wrote its row in a cell
 *   (surely once it is past scheduling: `isPastScheduling`, a `task_state` beyond `scheduling` or a
 *   host; while `scheduling`, anywhere from nothing to its flavor).
 * - `placement` (`[quota] count_usage_from_placement`, `_cores_ram_count_placement`): instances from
 *   the instance mappings not queued for delete (queued when the DELETE is accepted), cores and RAM
 *   from placement allocations: none for a server never scheduled or shelved-offloaded, the old and
 *   the new flavor for a server in VERIFY_RESIZE, kept until the compute host finishes a delete.
 * - `unified-limits` (limits in Keystone): usage is counted as from placement.
 *
 * @module
 */
import { AUDIT_RESOURCES, statusOf, taskStateOf, zeroUsage, type AuditResource, type FlavorSize, type Usage } from './count.js';
import type { Server } from '../core/types.js';
import { isPastScheduling } from '../guard/waitForActive.js';

/** How Nova counts usage. */
export type CountingModel = 'legacy' | 'placement' | 'unified-limits';

/** What one server holds under one model: at least `min`, at most `max` (`Infinity` when unbounded). */
export interface Holding {
  min: Usage;
  max: Usage;
  /** Why it holds that, in words. */
  why: string;
}

const NO_VALID_HOST = /no valid host was found/i;

/** True for an ERROR server never scheduled (its fault is NoValidHost: it lives in cell0). */
export function neverScheduled(s: Server): boolean {
  if (statusOf(s) !== 'ERROR') return false;
  const fault = (s as { fault?: { message?: unknown } }).fault;
  return typeof fault?.message === 'string' && NO_VALID_HOST.test(fault.message);
}

/** True while Nova deletes the server: status DELETED (row not yet destroyed) or task_state `deleting`. */
export function deleting(s: Server): boolean {
  return statusOf(s) === 'DELETED' || taskStateOf(s) === 'deleting';
}

function softDeleted(s: Server): boolean {
  const vm = String(s['OS-EXT-STS:vm_state'] ?? '').toLowerCase();
  return statusOf(s) === 'SOFT_DELETED' || vm === 'soft-delete' || vm === 'soft_deleted';
}

function of(cores: number, ramMiB: number, instances: number): Usage {
  return { cores, ramMiB, instances };
}

function fixed(u: Usage, why: string): Holding {
  return { min: u, max: { ...u }, why };
}

/**
 * What `server` (of flavor `size`, undefined when unknown) holds under `model`. A server of unknown
 * size holds at least no cores or RAM and at most any (`Infinity`) where its flavor would count: its
 * share is unknown, never 0, so it can make no usage look unexplained.
 */
export function holdingOf(s: Server, size: FlavorSize | undefined, model: CountingModel): Holding {
  if (size) return holdingOfSized(s, size, model);
  const held = holdingOfSized(s, { vcpus: 0, ram: 0 }, model);
  const probe = holdingOfSized(s, { vcpus: 1, ram: 1 }, model);
  if (probe.max.cores > 0) held.max.cores = Number.POSITIVE_INFINITY;
  if (probe.max.ramMiB > 0) held.max.ramMiB = Number.POSITIVE_INFINITY;
  return held;
}

function holdingOfSized(s: Server, size: FlavorSize, model: CountingModel): Holding {
  const c = size.vcpus;
  const r = size.ram;
  const status = statusOf(s);
  if (softDeleted(s)) return fixed(zeroUsage(), 'soft-deleted: counted by neither model');
  if (model === 'legacy') {
    if (status === 'UNKNOWN') return fixed(zeroUsage(), 'its cell does not answer: legacy counting cannot count it');
    // Past scheduling (task_state networking/spawning/..., or a host), conductor has written its row in a cell.
    if (status === 'BUILD' && isPastScheduling(s)) return fixed(of(c, r, 1), 'in BUILD past scheduling: its instance row in a cell counts with its flavor');
    if (status === 'BUILD') return { min: zeroUsage(), max: of(c, r, 1), why: 'in BUILD: counted once its instance row exists in a cell' };
    if (deleting(s)) return fixed(of(c, r, 1), 'being deleted: counted until its row is destroyed');
    if (neverScheduled(s)) return fixed(of(c, r, 1), 'never scheduled: its cell0 row counts with its flavor');
    return fixed(of(c, r, 1), `${status || 'listed'}: its row counts with its flavor`);
  }
  if (status === 'UNKNOWN') return fixed(of(0, 0, 1), 'its cell does not answer: its mapping counts; its size is unknown');
  if (deleting(s)) return fixed(of(c, r, 0), 'being deleted: its mapping is queued for delete; its allocation stays until the host finishes');
  // Past scheduling, the scheduler has claimed its allocations.
  if (status === 'BUILD' && isPastScheduling(s)) return fixed(of(c, r, 1), 'in BUILD past scheduling: its mapping and its allocation count');
  if (status === 'BUILD') return { min: of(0, 0, 1), max: of(c, r, 1), why: 'in BUILD: its mapping counts; cores and RAM once the scheduler claims them' };
  if (neverScheduled(s)) return fixed(of(0, 0, 1), 'never scheduled: its mapping counts; no allocation');
  if (status === 'SHELVED_OFFLOADED') return fixed(of(0, 0, 1), 'shelved-offloaded: its mapping counts; no allocation');
  if (status === 'VERIFY_RESIZE') {
    return { min: of(c, r, 1), max: of(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 1), why: 'in VERIFY_RESIZE: allocations of the new flavor and of the old one (whose size the API does not show)' };
  }
  return fixed(of(c, r, 1), `${status || 'listed'}: its mapping and its allocation count`);
}

/** The sum of holdings: the range Nova's number may take under one model. */
export function sumHoldings(hs: readonly Holding[]): { min: Usage; max: Usage } {
  const min = zeroUsage();
  const max = zeroUsage();
  for (const h of hs) {
    for (const res of AUDIT_RESOURCES) {
      min[res] += h.min[res];
      max[res] += h.max[res];
    }
  }
  return { min, max };
}

/** How far `reported` is outside `[min, max]` per resource (0 inside; positive above; negative below). */
export function outside(reported: Partial<Usage>, range: { min: Usage; max: Usage }): Partial<Record<AuditResource, number>> {
  const out: Partial<Record<AuditResource, number>> = {};
  for (const res of AUDIT_RESOURCES) {
    const v = reported[res];
    if (v === undefined || !Number.isFinite(v)) continue;
    out[res] = v > range.max[res] ? v - range.max[res] : v < range.min[res] ? v - range.min[res] : 0;
  }
  return out;
}

/** Which counting model the audit used, and how well each fits the readings. */
export interface ModelFit {
  /** The model the audit explains the usage with. */
  model: CountingModel;
  /** `given` when the caller named it (`countingModel`), `inferred` when it fits best, `ambiguous` when several fit alike. */
  basis: 'given' | 'inferred' | 'ambiguous';
  /** Per inferable model: how many resources Nova reports outside the range its servers hold under it. */
  misfits: Partial<Record<CountingModel, number>>;
}

/**
 * Pick the model that fits `reported` best: fewest resources outside their range, then the smallest
 * distance; ties go to `legacy` (Nova's default) with basis `ambiguous`.
 */
export function inferModel(reported: Partial<Usage>, ranges: Record<'legacy' | 'placement', { min: Usage; max: Usage }>, given?: CountingModel): ModelFit {
  const misfits: Partial<Record<CountingModel, number>> = {};
  const score: Record<string, [number, number]> = {};
  for (const m of ['legacy', 'placement'] as const) {
    const o = Object.values(outside(reported, ranges[m]));
    misfits[m] = o.filter((d) => d !== 0).length;
    score[m] = [misfits[m], o.reduce((a, d) => a + Math.abs(d), 0)];
  }
  if (given) return { model: given, basis: 'given', misfits };
  const [l, p] = [score['legacy']!, score['placement']!];
  if (p[0] < l[0] || (p[0] === l[0] && p[1] < l[1])) return { model: 'placement', basis: 'inferred', misfits };
  if (l[0] < p[0] || l[1] < p[1]) return { model: 'legacy', basis: 'inferred', misfits };
  return { model: 'legacy', basis: 'ambiguous', misfits };
}
