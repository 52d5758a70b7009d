/**
 * The keys Nova's `POST /servers` schema accepts, per microversion, and its refusal of any other
 * (`additionalProperties: false` at both levels of the body). Source: `nova/api/openstack/compute/schemas/servers.py`
 * (`create`, `create_v219` ... `create_v294`) and the `@validation.schema` ranges on `ServersController.create`;
 * the message is jsonschema's (`Additional properties are not allowed ('x' was unexpected)`, the keys sorted).
 *
 * The legacy v2.0 API (`create_v20`) strips unknown keys instead of refusing them; the fake does the same
 * below 2.1.
 *
 * @module
 */
import type { Microversion } from './microversion.js';
import { pyRepr } from './pyjson.js';
import { atLeast } from './views.js';

/** Keys of `server` in every microversion from 2.1 (`personality` until 2.56). */
const SERVER_KEYS_2_1 = [
  'name',
  'imageRef',
  'flavorRef',
  'adminPass',
  'metadata',
  'networks',
  'OS-DCF:diskConfig',
  'accessIPv4',
  'accessIPv6',
  'availability_zone',
  'block_device_mapping',
  'block_device_mapping_v2',
  'config_drive',
  'key_name',
  'min_count',
  'max_count',
  'return_reservation_id',
  'security_groups',
  'user_data',
];

/** Keys of `server` added later, with the microversion (minor of 2.x) that added them. */
const SERVER_KEYS_ADDED: ReadonlyArray<[string, number]> = [
  ['description', 19],
  ['tags', 52],
  ['trusted_image_certificates', 63],
  ['host', 74],
  ['hypervisor_hostname', 74],
  ['hostname', 90],
];

/** Keys beside `server` at the top of the body. */
const TOP_KEYS = new Set(['server', 'os:scheduler_hints', 'OS-SCH-HNT:scheduler_hints']);

/** The keys `server` may have at `version`. */
export function serverKeysAt(version: Microversion): Set<string> {
  const keys = new Set(SERVER_KEYS_2_1);
  // `personality` (file injection) was removed at 2.57.
  if (!atLeast(version, 57)) keys.add('personality');
  for (const [key, minor] of SERVER_KEYS_ADDED) if (atLeast(version, minor)) keys.add(key);
  return keys;
}

function refusal(extras: string[]): string | undefined {
  if (extras.length === 0) return undefined;
  // jsonschema sorts the extras (by str) and quotes each with repr().
  const sorted = [...extras].sort();
  return `Additional properties are not allowed (${sorted.map((k) => pyRepr(k)).join(', ')} ${sorted.length === 1 ? 'was' : 'were'} unexpected)`;
}

/**
 * jsonschema's message for the keys of the `server` object the schema of `version` does not allow;
 * undefined when there are none (or below 2.1, where Nova strips them).
 */
export function unexpectedServerKeys(server: Record<string, unknown>, version: Microversion): string | undefined {
  if (!atLeast(version, 1)) return undefined;
  const allowed = serverKeysAt(version);
  return refusal(Object.keys(server).filter((k) => !allowed.has(k)));
}

/** The same for the top level of the body (`server` and the two scheduler-hint keys only). */
export function unexpectedTopKeys(body: Record<string, unknown>, version: Microversion): string | undefined {
  if (!atLeast(version, 1)) return undefined;
  return refusal(Object.keys(body).filter((k) => !TOP_KEYS.has(k)));
}
