/**
 * Bodies of `GET /limits` and `/os-quota-sets`, per microversion (`nova/api/openstack/compute/limits.py`,
 * `views/limits.py`, `quota_sets.py`): network keys are dropped from 2.36, `maxImageMeta` from 2.39,
 * personality (injected file) keys from 2.57. Fixed limits are Nova's `[quota]` defaults.
 *
 * @module
 */
import type { Microversion } from './microversion.js';
import type { FakeUsage } from './types.js';
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

/** The `GET /limits` body: `{"limits": {"rate": [], "absolute": {...}}}`, keys sorted as Nova's sample. */
export function limitsBody(limits: FakeUsage, used: FakeUsage, version: Microversion): Record<string, unknown> {
  const skip = filtered(version);
  const abs: Record<string, number> = {};
  const put = (resource: string, key: string, value: number): void => {
    if (!skip.has(resource)) abs[key] = value;
  };
  put('metadata_items', 'maxImageMeta', FIXED.metadata_items);
  if (atLeast(version, 39)) delete abs.maxImageMeta;
  put('injected_files', 'maxPersonality', FIXED.injected_files);
  put('injected_file_content_bytes', 'maxPersonalitySize', FIXED.injected_file_content_bytes);
  put('security_group_rules', 'maxSecurityGroupRules', FIXED.security_group_rules);
  put('security_groups', 'maxSecurityGroups', FIXED.security_groups);
  put('server_group_members', 'maxServerGroupMembers', FIXED.server_group_members);
  put('server_groups', 'maxServerGroups', FIXED.server_groups);
  put('metadata_items', 'maxServerMeta', FIXED.metadata_items);
  put('cores', 'maxTotalCores', limits.cores);
  put('floating_ips', 'maxTotalFloatingIps', FIXED.floating_ips);
  put('instances', 'maxTotalInstances', limits.instances);
  put('key_pairs', 'maxTotalKeypairs', FIXED.key_pairs);
  put('ram', 'maxTotalRAMSize', limits.ram);
  put('cores', 'totalCoresUsed', used.cores);
  put('floating_ips', 'totalFloatingIpsUsed', 0);
  put('instances', 'totalInstancesUsed', used.instances);
  put('ram', 'totalRAMUsed', used.ram);
  put('security_groups', 'totalSecurityGroupsUsed', 0);
  put('server_groups', 'totalServerGroupsUsed', 0);
  return { limits: { absolute: abs, rate: [] } };
}

function quotaEntries(limits: FakeUsage, version: Microversion): Array<[string, number]> {
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
export function quotaSetBody(projectId: string | undefined, limits: FakeUsage, version: Microversion): Record<string, unknown> {
  const qs: Record<string, unknown> = {};
  if (projectId !== undefined) qs.id = projectId;
  for (const [k, v] of quotaEntries(limits, version)) qs[k] = v;
  return { quota_set: qs };
}

/** `GET /os-quota-sets/{p}/detail` body: `{limit, in_use, reserved: 0}` per resource. */
export function quotaDetailBody(
  projectId: string,
  limits: FakeUsage,
  used: FakeUsage,
  version: Microversion,
): Record<string, unknown> {
  const inUse: Record<string, number> = { cores: used.cores, instances: used.instances, ram: used.ram };
  const qs: Record<string, unknown> = { id: projectId };
  for (const [k, v] of quotaEntries(limits, version)) qs[k] = { in_use: inUse[k] ?? 0, limit: v, reserved: 0 };
  return { quota_set: qs };
}
