/**
 * Nova's counting rules for the `cores`, `ram` (MiB: `ramMiB`) and `instances` quota, applied to listed servers:
 * plain functions on plain data, used by {@link auditQuota}.
 *
 * Sources: `nova/quota.py` `_instances_cores_ram_count_legacy` → `InstanceList.get_counts`
 * (`nova/objects/instance.py`): rows not deleted and `vm_state != SOFT_DELETED` count, summing the
 * flavor's `vcpus` and `memory_mb`; ERROR servers count. A BUILD server counts once the conductor has
 * created its instance row in a cell (legacy counting), or at once for instances under placement
 * counting. See `docs/nova-behaviour.md#how-usage-is-counted`. The flavor is embedded in the server from
 * microversion 2.47 (Nova API reference, "Show Server Details", `flavor`), else read with
 * `GET /flavors/{id}` (cached by the client).
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { AuthError, isAbortError } from '../errors/index.js';
import type { ResourceAmounts, Server } from '../core/types.js';
import { countsTowardUsage, embeddedFlavor, flavorSize, statusOf, taskStateOf, type FlavorSize } from '../core/counting.js';

export { countsTowardUsage, statusOf, taskStateOf, type FlavorSize } from '../core/counting.js';

/**
 * The three resources an audit compares, spelt as every amount of nova-guard is
 * ({@link ResourceAmounts}): `cores` (vCPUs), `ramMiB` (RAM in MiB, Nova's `ram` quota), `instances`.
 */
export type AuditResource = keyof ResourceAmounts;

/** The audited resources, in display order. */
export const AUDIT_RESOURCES: readonly AuditResource[] = ['cores', 'ramMiB', 'instances'];

/** Usage of one resource set: cores (vCPUs), RAM (MiB), instances. The audit's name for {@link ResourceAmounts}. */
export type Usage = ResourceAmounts;

/** A zero {@link Usage}. */
export function zeroUsage(): Usage {
  return { cores: 0, ramMiB: 0, instances: 0 };
}

/**
 * Why a server is suspect (worth a look when usage drifts): its status is neither ACTIVE nor ERROR,
 * or a task is in progress (`task_state` set). Returns the reasons, empty when not suspect.
 */
export function suspectReasons(server: Server): string[] {
  const reasons: string[] = [];
  const status = statusOf(server);
  if (status !== 'ACTIVE' && status !== 'ERROR') reasons.push(`status ${status || 'unknown'}`);
  const task = taskStateOf(server);
  if (task) reasons.push(`task_state ${task}`);
  return reasons;
}

/** Result of {@link resolveFlavorSizes}: each server id's flavor size, or why it is unknown. */
export interface FlavorResolution {
  sizes: Map<string, FlavorSize>;
  /** Servers whose flavor could not be read, with the reason. */
  unknown: Array<{ serverId: string; reason: string }>;
}

/**
 * The flavor size of every server: embedded (2.47+) or from `GET /flavors/{id}` (client-cached, each
 * distinct flavor read once). A flavor that cannot be read (deleted flavor, 403) leaves its servers in
 * `unknown`; aborts and authentication failures are rethrown.
 */
export async function resolveFlavorSizes(client: NovaClient, servers: readonly Server[], signal?: AbortSignal): Promise<FlavorResolution> {
  const sizes = new Map<string, FlavorSize>();
  const unknown: FlavorResolution['unknown'] = [];
  const byFlavor = new Map<string, string[]>();
  for (const s of servers) {
    const embedded = embeddedFlavor(s);
    if (embedded) {
      sizes.set(s.id, embedded);
      continue;
    }
    const flavorId = s.flavor?.id;
    if (flavorId === undefined || String(flavorId) === '') {
      const embeddedWithout = s.flavor && ('vcpus' in s.flavor || 'ram' in s.flavor || 'original_name' in s.flavor);
      unknown.push({ serverId: s.id, reason: embeddedWithout ? 'its embedded flavor has no usable vcpus or ram' : 'the server has no flavor id' });
      continue;
    }
    const ids = byFlavor.get(String(flavorId)) ?? [];
    ids.push(s.id);
    byFlavor.set(String(flavorId), ids);
  }
  await Promise.all(
    [...byFlavor.entries()].map(async ([flavorId, serverIds]) => {
      try {
        const flavor = await client.getFlavor(flavorId, { signal });
        // A flavor without a usable vcpus or ram is unknown, as the guard takes it: never counted as 0.
        const size = flavorSize(flavor as { vcpus?: unknown; ram?: unknown });
        if (size) for (const id of serverIds) sizes.set(id, size);
        else {
          const reason = `flavor ${flavorId} has no usable vcpus or ram (vcpus ${JSON.stringify(flavor.vcpus ?? null)}, ram ${JSON.stringify(flavor.ram ?? null)})`;
          for (const id of serverIds) unknown.push({ serverId: id, reason });
        }
      } catch (e) {
        if (isAbortError(e) || e instanceof AuthError) throw e;
        const reason = `flavor ${flavorId} could not be read: ${(e as Error).message}`;
        for (const id of serverIds) unknown.push({ serverId: id, reason });
      }
    }),
  );
  return { sizes, unknown };
}

/** One server's share of usage, or zero when Nova does not count it. */
export function usageOf(server: Server, size: FlavorSize | undefined): Usage {
  if (!countsTowardUsage(server)) return zeroUsage();
  return { cores: size?.vcpus ?? 0, ramMiB: size?.ram ?? 0, instances: 1 };
}

/** Add `b` into `a` (mutates and returns `a`). */
export function addUsage(a: Usage, b: Usage): Usage {
  for (const r of AUDIT_RESOURCES) a[r] += b[r];
  return a;
}
