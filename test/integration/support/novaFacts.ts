/**
 * What a real Nova 26.2 (Zed) answers, as literal values shared by the integration and fidelity suites.
 * Each was observed on the real-Nova test stack (scripts/real-nova/) and is asserted there again.
 */

/** `GET /limits` absolute keys from microversion 2.57 on. */
export const LIMITS_2_57 = [
  'maxServerGroupMembers',
  'maxServerGroups',
  'maxServerMeta',
  'maxTotalCores',
  'maxTotalInstances',
  'maxTotalKeypairs',
  'maxTotalRAMSize',
  'totalCoresUsed',
  'totalInstancesUsed',
  'totalRAMUsed',
  'totalServerGroupsUsed',
];
/** Dropped from `/limits` at 2.36. */
export const NETWORK_LIMITS = ['maxSecurityGroupRules', 'maxSecurityGroups', 'maxTotalFloatingIps', 'totalFloatingIpsUsed', 'totalSecurityGroupsUsed'];
/** Dropped from `/limits` at 2.57. */
export const PERSONALITY_LIMITS = ['maxPersonality', 'maxPersonalitySize'];
/** `/limits` keys at 2.1 (no microversion header). */
export const LIMITS_2_1 = [...LIMITS_2_57, ...NETWORK_LIMITS, ...PERSONALITY_LIMITS, 'maxImageMeta'];

/** `os-quota-sets/{project}/detail` keys from 2.57 on. */
export const QUOTA_2_57 = ['cores', 'id', 'instances', 'key_pairs', 'metadata_items', 'ram', 'server_group_members', 'server_groups'];
/** Dropped from quota sets at 2.36. */
export const NETWORK_QUOTAS = ['fixed_ips', 'floating_ips', 'security_group_rules', 'security_groups'];
/** Dropped from quota sets at 2.57. */
export const PERSONALITY_QUOTAS = ['injected_file_content_bytes', 'injected_file_path_bytes', 'injected_files'];
/** Quota-set keys at 2.1. */
export const QUOTA_2_1 = [...QUOTA_2_57, ...NETWORK_QUOTAS, ...PERSONALITY_QUOTAS];

/** Nova's 404 body for an unknown server, byte for byte (Python json.dumps spacing). */
export const notFoundBody = (id: string): string => `{"itemNotFound": {"code": 404, "message": "Instance ${id} could not be found."}}`;

/** A 403 body, byte for byte. */
export const forbiddenBody = (message: string): string => `{"forbidden": {"code": 403, "message": "${message}"}}`;

/** A 400 body, byte for byte. */
export const badRequestBody = (message: string): string => `{"badRequest": {"code": 400, "message": "${message}"}}`;

/** `Content-Type` of Nova's error responses (its successful JSON responses say `application/json`). */
export const ERROR_CONTENT_TYPE = 'application/json; charset=UTF-8';
