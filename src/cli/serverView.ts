/**
 * A server as `openstack server show` and `openstack server create` print it (python-openstackclient
 * `compute/v2/server.py` `_prep_server_detail`), and as a row of `openstack server list`:
 *
 * - the fields of `GET /servers/{id}` (never an `adminPass`: a secret), sorted by name,
 *   without `links`; `tenant_id` as `project_id`, `metadata` as `properties` (`k='v', ...`),
 *   `os-extended-volumes:volumes_attached` as `volumes_attached`, `security_groups` as `name='x'`;
 * - `flavor` as `NAME (ID)` (before microversion 2.47; from 2.47 Nova embeds the flavor: its
 *   `original_name` and sizes), `image` as `NAME (ID)`, or `N/A (booted from volume)` without one;
 * - `addresses` as `net=ip, ip; net2=ip` (osc's `AddressesColumn`).
 *
 * @module
 */
import type { Server } from '../core/types.js';
import type { Cell } from './format.js';

/** Names of flavors and images by id, where the CLI could read them. */
export interface Names {
  flavors?: ReadonlyMap<string, string>;
  images?: ReadonlyMap<string, string>;
}

/** osc's `format_dict`: `a='1', b='2'`, keys sorted. */
export function formatDict(d: Record<string, unknown>): string {
  return Object.keys(d)
    .sort()
    .map((k) => `${k}='${typeof d[k] === 'object' && d[k] !== null ? JSON.stringify(d[k]) : String(d[k])}'`)
    .join(', ');
}

/** osc's `AddressesColumn`: `net=10.0.0.3, fd00::3; other=192.0.2.9`. */
export function formatAddresses(addresses: unknown): string {
  if (!addresses || typeof addresses !== 'object') return '';
  return Object.entries(addresses as Record<string, unknown>)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([net, list]) => `${net}=${Array.isArray(list) ? list.map((x) => (x && typeof x === 'object' ? String((x as Record<string, unknown>)['addr'] ?? '') : String(x))).join(', ') : ''}`)
    .join('; ');
}

/** The flavor column: `NAME (ID)`, or from 2.47 the embedded flavor's `original_name`. */
export function flavorText(server: Server, names: Names): string {
  const f = server.flavor;
  if (!f || typeof f !== 'object') return '';
  if (typeof f.original_name === 'string') return f.original_name;
  const id = f.id === undefined ? '' : String(f.id);
  const name = names.flavors?.get(id);
  return name ? `${name} (${id})` : id;
}

/** The image column: `NAME (ID)`, `N/A (booted from volume)` when the server has none. */
export function imageText(server: Server, names: Names): string {
  const img = server['image'];
  if (!img || typeof img !== 'object') return 'N/A (booted from volume)';
  const id = String((img as Record<string, unknown>)['id'] ?? '');
  const name = names.images?.get(id);
  return name ? `${name} (${id})` : id;
}

const cell = (v: unknown): Cell => {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.map((x) => (x && typeof x === 'object' ? formatDict(x as Record<string, unknown>) : String(x))).join('\n');
  return formatDict(v as Record<string, unknown>);
};

/** The Field/Value pairs of `openstack server show` for `server`, sorted by field. */
export function serverFields(server: Server, names: Names = {}): Array<[string, Cell]> {
  const out = new Map<string, Cell>();
  for (const [k, v] of Object.entries(server)) {
    if (k === 'links') continue;
    if (k === 'tenant_id') out.set('project_id', cell(v));
    else if (k === 'metadata') out.set('properties', formatDict((v ?? {}) as Record<string, unknown>));
    else if (k === 'os-extended-volumes:volumes_attached') out.set('volumes_attached', cell(v));
    else if (k === 'addresses') out.set('addresses', formatAddresses(v));
    else if (k === 'flavor') out.set('flavor', flavorText(server, names));
    else if (k === 'image') out.set('image', imageText(server, names));
    else out.set(k, cell(v));
  }
  if (!out.has('image') && 'id' in server && server.status !== undefined) out.set('image', imageText(server, names));
  return [...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The columns of `openstack server list`. */
export const LIST_COLUMNS = ['ID', 'Name', 'Status', 'Networks', 'Image', 'Flavor'] as const;

/** One row of `openstack server list`: image and flavor by name where known (as osc prints them). */
export function serverRow(server: Server, names: Names = {}): Cell[] {
  const img = server['image'];
  const imageId = img && typeof img === 'object' ? String((img as Record<string, unknown>)['id'] ?? '') : '';
  const image = imageId === '' ? 'N/A (booted from volume)' : (names.images?.get(imageId) ?? imageId);
  const f = server.flavor;
  const flavorId = f?.id === undefined ? '' : String(f.id);
  const flavor = typeof f?.original_name === 'string' ? f.original_name : (names.flavors?.get(flavorId) ?? flavorId);
  return [server.id, server.name ?? '', server.status ?? '', formatAddresses(server['addresses']), image, flavor];
}

/**
 * The columns of `openstack server list --long` (python-openstackclient `ListServer`): the short
 * list's, with `Task State`, `Power State`, the image and flavor by name and id, `Availability
 * Zone`, `Host` (`OS-EXT-SRV-ATTR:host`: Nova shows it to admins only, else empty) and `Properties`
 * (the metadata, `k='v', ...`).
 */
export const LONG_COLUMNS = [
  'ID',
  'Name',
  'Status',
  'Task State',
  'Power State',
  'Networks',
  'Image Name',
  'Image ID',
  'Flavor Name',
  'Flavor ID',
  'Availability Zone',
  'Host',
  'Properties',
] as const;

/** osc's `PowerStateColumn`: Nova's `OS-EXT-STS:power_state` number in words. */
const POWER_STATES = ['NOSTATE', 'Running', '', 'Paused', '', 'Shutdown', '', 'Crashed', 'Suspended'] as const;

/** `OS-EXT-STS:power_state` in words (`Running`, `Shutdown`, ...); empty when Nova gave none, the number itself when unknown. */
export function powerStateText(value: unknown): string {
  if (typeof value !== 'number') return '';
  return POWER_STATES[value] ?? String(value);
}

/**
 * One row of `openstack server list --long` ({@link LONG_COLUMNS}). A field Nova did not give is
 * null (empty in table, value and csv; null in json and yaml). From microversion 2.47 Nova embeds
 * the flavor without its id: `Flavor Name` is its `original_name` and `Flavor ID` is null.
 */
export function serverLongRow(server: Server, names: Names = {}): Cell[] {
  const str = (v: unknown): Cell => (typeof v === 'string' ? v : null);
  const img = server['image'];
  const imageId = img && typeof img === 'object' ? String((img as Record<string, unknown>)['id'] ?? '') : '';
  const f = server.flavor;
  const flavorId = f?.id === undefined ? null : String(f.id);
  const flavorName = typeof f?.original_name === 'string' ? f.original_name : flavorId === null ? null : (names.flavors?.get(flavorId) ?? null);
  const metadata = server['metadata'];
  return [
    server.id,
    server.name ?? '',
    server.status ?? '',
    str(server['OS-EXT-STS:task_state']),
    powerStateText(server['OS-EXT-STS:power_state']),
    formatAddresses(server['addresses']),
    imageId === '' ? null : (names.images?.get(imageId) ?? null),
    imageId === '' ? null : imageId,
    flavorName,
    flavorId,
    str(server['OS-EXT-AZ:availability_zone']),
    str(server['OS-EXT-SRV-ATTR:host']),
    metadata && typeof metadata === 'object' ? formatDict(metadata as Record<string, unknown>) : '',
  ];
}
