/**
 * The keys Nova's `POST /servers` schema accepts in the `server` object, by microversion (Nova's
 * `nova/api/openstack/compute/schemas/servers.py`, `create` to `create_v294`, and the
 * `@validation.schema` ranges on `ServersController.create`): a key outside them is refused with a 400
 * (`additionalProperties: false`). FakeNova answers from this table; the client refuses, before any
 * request, a key that no microversion accepts (a typo such as `network`, or `count`).
 *
 * @module
 */

/** Keys of `server` in every microversion from 2.1 (`personality` until 2.56: {@link PERSONALITY_REMOVED_MINOR}). */
export const SERVER_KEYS_2_1: readonly string[] = [
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

/** Keys of `server` added later, with the 2.x minor that added each. */
export const SERVER_KEYS_ADDED: ReadonlyArray<readonly [string, number]> = [
  ['description', 19],
  ['tags', 52],
  ['trusted_image_certificates', 63],
  ['host', 74],
  ['hypervisor_hostname', 74],
  ['hostname', 90],
];

/** The 2.x minor from which `personality` (file injection) is refused. */
export const PERSONALITY_REMOVED_MINOR = 57;

/** Keys beside `server` at the top of the body (the scheduler hints). */
export const TOP_KEYS: ReadonlySet<string> = new Set(['server', 'os:scheduler_hints', 'OS-SCH-HNT:scheduler_hints']);

/** Every key some microversion from 2.1 accepts in `server`. */
export const EVER_SERVER_KEYS: readonly string[] = [...SERVER_KEYS_2_1, 'personality', ...SERVER_KEYS_ADDED.map(([key]) => key)];
