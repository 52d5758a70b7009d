/**
 * Bodies of `GET /limits` and `/os-quota-sets`, per microversion (`nova/api/openstack/compute/limits.py`,
 * `views/limits.py`, `quota_sets.py`): network keys are dropped from 2.36, `maxImageMeta` from 2.39,
 * personality (injected file) keys from 2.57. Fixed limits are Nova's `[quota]` defaults.
 *
 * @module
 */
import type { Microversion } from './microversion.js';
import type { UsageCounts } from './types.js';
import { atLeast } from './views.js';

/**
 * Nova's defaults for the quotas the fake does not model (`nova/conf/quota.py`). The network quotas
 * are -1 on Nova 26 (Zed): nova-network is gone and Neutron owns them (observed on a real Nova 26.2).
 */
const FIXED = {
  metadata_items: 128,
  injected_files: 5,
  injected_file_content_bytes: 10240,
  injected_file_path_bytes: 255,
  key_pairs: 100,
  server_groups: 10,
  server_group_members: 10,
  fixed_ips: -1,
  floating_ips: -1,
  security_groups: -1,
  security_group_rules: -1,
} as const;

const NETWORK_KEYS = new Set(['fixed_ips', 'floating_ips', 'security_groups', 'security_group_rules', 'networks']);
const PERSONALITY_KEYS = new Set(['injected_files', 'injected_file_content_bytes', 'injected_file_path_bytes']);

function filtered(version: Microversion): Set<string> {
  const out = new Set<string>();
  if (atLeast(version, 36)) for (const k of NETWORK_KEYS) out.add(k);
  if (atLeast(version, 57)) for (const k of PERSONALITY_KEYS) out.add(k);
  return out;
}

/**
 * The `absolute` keys of `GET /limits` in the order of Nova's sample, as `quota resource:key`; keys
 * starting `total` are usage, the others limits.
 */
const LIMIT_KEYS = (
  'metadata_items:maxImageMeta injected_files:maxPersonality injected_file_content_bytes:maxPersonalitySize ' +
  'security_group_rules:maxSecurityGroupRules security_groups:maxSecurityGroups server_group_members:maxServerGroupMembers ' +
  'server_groups:maxServerGroups metadata_items:maxServerMeta cores:maxTotalCores floating_ips:maxTotalFloatingIps ' +
  'instances:maxTotalInstances key_pairs:maxTotalKeypairs ram:maxTotalRAMSize cores:totalCoresUsed ' +
  'floating_ips:totalFloatingIpsUsed instances:totalInstancesUsed ram:totalRAMUsed security_groups:totalSecurityGroupsUsed ' +
  'server_groups:totalServerGroupsUsed'
)
  .split(' ')
  .map((pair) => pair.split(':') as [string, string]);

function isModelled(resource: string): resource is keyof UsageCounts {
  return resource === 'cores' || resource === 'instances' || resource === 'ram';
}

/** The `GET /limits` body: `{"limits": {"rate": [], "absolute": {...}}}`, keys sorted as Nova's sample. */
export function limitsBody(limits: UsageCounts, used: UsageCounts, version: Microversion): Record<string, unknown> {
  const skip = filtered(version);
  if (atLeast(version, 39)) skip.add('maxImageMeta');
  const abs: Record<string, number> = {};
  for (const [resource, key] of LIMIT_KEYS) {
    if (skip.has(resource) || skip.has(key)) continue;
    const usage = key.startsWith('total');
    if (isModelled(resource)) abs[key] = usage ? used[resource] : limits[resource];
    else abs[key] = usage ? 0 : FIXED[resource as keyof typeof FIXED];
  }
  return { limits: { absolute: abs, rate: [] } };
}

function quotaEntries(limits: UsageCounts, version: Microversion): Array<[string, number]> {
  const skip = filtered(version);
  const all: Array<[string, number]> = [
    ['cores', limits.cores],
    ['fixed_ips', FIXED.fixed_ips],
    ['floating_ips', FIXED.floating_ips],
    ['injected_file_content_bytes', FIXED.injected_file_content_bytes],
    ['injected_file_path_bytes', FIXED.injected_file_path_bytes],
    ['injected_files', FIXED.injected_files],
    ['instances', limits.instances],
    ['key_pairs', FIXED.key_pairs],
    ['metadata_items', FIXED.metadata_items],
    ['ram', limits.ram],
    ['security_group_rules', FIXED.security_group_rules],
    ['security_groups', FIXED.security_groups],
    ['server_group_members', FIXED.server_group_members],
    ['server_groups', FIXED.server_groups],
  ];
  return all.filter(([k]) => !skip.has(k));
}

/** `GET /os-quota-sets/{p}` body (`withId`) or the `PUT` answer (without id). */
export function quotaSetBody(projectId: string | undefined, limits: UsageCounts, version: Microversion): Record<string, unknown> {
  const qs: Record<string, unknown> = {};
  if (projectId !== undefined) qs.id = projectId;
  for (const [k, v] of quotaEntries(limits, version)) qs[k] = v;
  return { quota_set: qs };
}

/** `GET /os-quota-sets/{p}/detail` body: `{limit, in_use, reserved: 0}` per resource. */
export function quotaDetailBody(
  projectId: string,
  limits: UsageCounts,
  used: UsageCounts,
  version: Microversion,
): Record<string, unknown> {
  const inUse: Record<string, number> = { cores: used.cores, instances: used.instances, ram: used.ram };
  const qs: Record<string, unknown> = { id: projectId };
  for (const [k, v] of quotaEntries(limits, version)) qs[k] = { in_use: inUse[k] ?? 0, limit: v, reserved: 0 };
  return { quota_set: qs };
}
