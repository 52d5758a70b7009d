/**
 * Nova's legacy counting of the `cores`, `ram` and `instances` quota, applied to listed servers, and
 * the remedies of the findings more than one capability names: plain functions on plain data, shared
 * by the quota audit and the guard's check of a shortfall.
 *
 * Sources: `nova/quota.py` `_instances_cores_ram_count_legacy` → `InstanceList.get_counts`
 * (`nova/objects/instance.py`): rows not deleted and `vm_state != SOFT_DELETED` count, summing the
 * flavor's `vcpus` and `memory_mb`. The flavor is embedded in the server from microversion 2.47 (Nova
 * API reference, "Show Server Details", `flavor`).
 *
 * @module
 */
import type { ResourceAmounts, Server } from './types.js';

/** The vCPUs and RAM (MiB) of one server's flavor. */
export interface FlavorSize {
  vcpus: number;
  ram: number;
}

/** Nova status of a server, upper-cased (`''` when absent). */
export function statusOf(server: Server): string {
  return String(server.status ?? '').toUpperCase();
}

/** `OS-EXT-STS:task_state` as a string, or undefined when null, empty or absent. */
export function taskStateOf(server: Server): string | undefined {
  const t = server['OS-EXT-STS:task_state'];
  return typeof t === 'string' && t !== '' ? t : undefined;
}

/**
 * True when Nova's legacy counting counts a server of a plain listing: every server except a
 * soft-deleted one (status `SOFT_DELETED`, vm_state `soft-delete`). A plain listing shows a DELETED
 * server only while its row is not destroyed, and legacy counting counts that row until then
 * (`InstanceList.get_counts` filters on the row's `deleted` column, not on vm_state `deleted`).
 * ERROR, SHUTOFF, BUILD and the rest count.
 */
export function countsTowardUsage(server: Server): boolean {
  const status = statusOf(server);
  const vmState = String(server['OS-EXT-STS:vm_state'] ?? '').toLowerCase();
  if (status === 'SOFT_DELETED') return false;
  if (vmState === 'soft-delete' || vmState === 'soft_deleted') return false;
  return true;
}

/** True while Nova deletes the server: status DELETED (row not yet destroyed) or task_state `deleting`. */
export function isDeleting(server: Server): boolean {
  return statusOf(server) === 'DELETED' || taskStateOf(server) === 'deleting';
}

/**
 * A flavor's number (`vcpus`, `ram`): a finite non-negative number, or a numeric string as its
 * number; else (missing, `null`, `'n/a'`, negative) undefined: unknown, never 0. The guard and the
 * audit read flavors with it alike.
 */
export function flavorNumber(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** The size of a flavor (a `GET /flavors/{id}` answer or an embedded one), or undefined when its `vcpus` or `ram` is unknown ({@link flavorNumber}). */
export function flavorSize(flavor: { vcpus?: unknown; ram?: unknown } | undefined): FlavorSize | undefined {
  const vcpus = flavorNumber(flavor?.vcpus);
  const ram = flavorNumber(flavor?.ram);
  return vcpus === undefined || ram === undefined ? undefined : { vcpus, ram };
}

/** The flavor embedded in the server (microversion 2.47 or later), if it carries vcpus and ram. */
export function embeddedFlavor(server: Server): FlavorSize | undefined {
  return server.flavor ? flavorSize(server.flavor) : undefined;
}

/** What the listed servers hold under legacy counting, from their embedded flavors; `unsized`: counted servers without one. */
export function heldByServers(servers: readonly Server[]): { held: ResourceAmounts; unsized: number } {
  const held = { cores: 0, ramMiB: 0, instances: 0 };
  let unsized = 0;
  for (const s of servers) {
    if (!countsTowardUsage(s)) continue;
    held.instances++;
    const f = embeddedFlavor(s);
    if (f) {
      held.cores += f.vcpus;
      held.ramMiB += f.ram;
    } else unsized++;
  }
  return { held, unsized };
}

/** What the project and an operator can do, for the findings named outside the audit too. */
export const REMEDIES = {
  'stuck-deleting': {
    projectCan: 'delete again, then force-delete (`openstack server delete --force`, admin by default)',
    operatorCan: 'find why the compute host did not finish (nova-compute log of the request id), then `nova-manage db archive_deleted_rows` once destroyed',
  },
  'stale-usage': {
    projectCan: 'nothing: no server of the project holds it; ask an operator, quoting this audit',
    operatorCan:
      '`nova-manage db archive_deleted_rows` and check the cells for rows of this project the API cannot list; on releases before Pike, `nova-manage project quota_usage_refresh`',
  },
  'down-cell': {
    projectCan: 'wait; never delete or reap these servers on this evidence',
    operatorCan: "restore the cell's database and message queue; `nova-manage cell_v2 list_cells` shows its connection",
  },
} as const;
