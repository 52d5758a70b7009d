/**
 * JSON views of servers and flavors, shaped like Nova's (`nova/api/openstack/compute/views/servers.py`,
 * `views/flavors.py`) and the bodies recorded from a real Nova 26.2 (Zed).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { compareMicroversion, type Microversion } from './microversion.js';
import { PyFloat } from './pyjson.js';
import type { ServerRecord } from './state.js';
import type { FakeFlavor } from './types.js';

/** Where and for whom a view is rendered. */
export interface ViewContext {
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  version: Microversion;
  /** Admin sees the `OS-EXT-SRV-ATTR:*` fields and `host_status`. */
  admin: boolean;
  projectId: string;
}

/** The fake's one compute host. */
export const FAKE_HOST = 'fake-compute-1';

const PROGRESS_STATUSES = new Set(['ACTIVE', 'BUILD', 'REBUILD', 'RESIZE', 'VERIFY_RESIZE', 'MIGRATING']);

/** True when `v >= major.minor`. */
export function atLeast(v: Microversion, minor: number): boolean {
  return compareMicroversion(v, { major: 2, minor }) >= 0;
}

/** Nova's `utils.isotime`: `2026-11-30T14:03:09Z`. */
export function isoZ(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A datetime as Nova prints `launched_at` (the DB keeps whole seconds): `2026-11-30T14:03:10.000000`. */
export function isoMicro(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, '.000000');
}

function links(ctx: ViewContext, collection: string, id: string): Array<Record<string, string>> {
  return [
    { href: `${ctx.baseUrl}/v2.1/${collection}/${id}`, rel: 'self' },
    { href: `${ctx.baseUrl}/${collection}/${id}`, rel: 'bookmark' },
  ];
}

function hostId(projectId: string, host: string | null): string {
  if (!host) return '';
  return createHash('sha224')
    .update(projectId + host)
    .digest('hex');
}

/** The `GET /servers` item: id, links, name. */
export function serverBrief(r: ServerRecord, ctx: ViewContext): Record<string, unknown> {
  return { id: r.id, links: links(ctx, 'servers', r.id), name: r.name };
}

/** The `POST /servers` 202 body's `server`. */
export function serverCreated(r: ServerRecord, ctx: ViewContext, adminPass: string): Record<string, unknown> {
  return {
    id: r.id,
    links: links(ctx, 'servers', r.id),
    'OS-DCF:diskConfig': 'MANUAL',
    security_groups: [{ name: 'default' }],
    adminPass,
  };
}

/** The `GET /servers/{id}` body, per microversion and role; `listed`: as an item of `/servers/detail`. */
export function serverDetail(r: ServerRecord, ctx: ViewContext, listed = false): Record<string, unknown> {
  const v = ctx.version;
  // On a host once spawning; never for a server in cell0 (no valid host) or shelved-offloaded (Nova
  // clears its host, node and availability zone: hostId '', AZ '', as Nova 26.2 shows).
  const scheduled = (r.vmState !== 'building' || r.taskState === 'spawning') && !r.cell0 && r.vmState !== 'shelved_offloaded';
  const host = scheduled ? FAKE_HOST : null;
  const s: Record<string, unknown> = {
    id: r.id,
    name: r.name,
    status: r.status,
    tenant_id: ctx.projectId,
    user_id: r.userId,
    metadata: { ...r.metadata },
    hostId: hostId(ctx.projectId, host),
    image: r.imageRef
      ? { id: r.imageRef, links: [{ href: `${ctx.baseUrl}/images/${r.imageRef}`, rel: 'bookmark' }] }
      : '',
    flavor: atLeast(v, 47)
      ? {
          disk: r.flavor.disk,
          ephemeral: 0,
          extra_specs: {},
          original_name: r.flavor.name,
          ram: r.flavor.ram,
          swap: 0,
          vcpus: r.flavor.vcpus,
        }
      : { id: r.flavor.id, links: [{ href: `${ctx.baseUrl}/flavors/${r.flavor.id}`, rel: 'bookmark' }] },
    created: isoZ(r.createdMs),
    updated: isoZ(r.updatedMs),
    addresses: {},
    accessIPv4: '',
    accessIPv6: '',
    links: links(ctx, 'servers', r.id),
    'OS-DCF:diskConfig': 'MANUAL',
    'OS-EXT-AZ:availability_zone': host ? 'nova' : '',
    config_drive: '',
    key_name: r.keyName,
    'OS-SRV-USG:launched_at': r.launchedMs === null ? null : isoMicro(r.launchedMs),
    'OS-SRV-USG:terminated_at': r.terminatedMs === null ? null : isoMicro(r.terminatedMs),
    'OS-EXT-STS:task_state': r.taskState,
    'OS-EXT-STS:vm_state': r.vmState,
    'OS-EXT-STS:power_state': r.powerState,
    'os-extended-volumes:volumes_attached': [],
  };
  if (PROGRESS_STATUSES.has(r.status)) s.progress = 0;
  if (ctx.admin) {
    s['OS-EXT-SRV-ATTR:host'] = host;
    s['OS-EXT-SRV-ATTR:hypervisor_hostname'] = host;
    s['OS-EXT-SRV-ATTR:instance_name'] = 'instance-' + r.seq.toString(16).padStart(8, '0');
    if (atLeast(v, 3)) {
      s['OS-EXT-SRV-ATTR:hostname'] = r.name.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
      s['OS-EXT-SRV-ATTR:kernel_id'] = '';
      s['OS-EXT-SRV-ATTR:launch_index'] = r.launchIndex;
      s['OS-EXT-SRV-ATTR:ramdisk_id'] = '';
      s['OS-EXT-SRV-ATTR:reservation_id'] = r.reservationId;
      s['OS-EXT-SRV-ATTR:root_device_name'] = '/dev/sda';
      s['OS-EXT-SRV-ATTR:user_data'] = r.userData ?? null;
    }
    if (atLeast(v, 16)) s.host_status = host ? 'UP' : '';
  }
  if (atLeast(v, 9)) s.locked = r.locked;
  if (atLeast(v, 73)) s.locked_reason = r.lockedReason;
  if (atLeast(v, 19)) s.description = r.description;
  if (atLeast(v, 26)) s.tags = [];
  if (atLeast(v, 63)) s.trusted_image_certificates = null;
  if (atLeast(v, 71)) s.server_groups = [];
  // A detail listing reads faults from the API's own database (Nova's `InstanceList.fill_faults`, not
  // targeted at a cell): a server in cell0 is listed without its fault, which its own GET shows.
  if (r.fault && (r.status === 'ERROR' || r.status === 'DELETED') && !(listed && r.cell0)) {
    s.fault = { code: r.fault.code, created: isoZ(r.fault.createdMs), message: r.fault.message };
  }
  return s;
}

/** `GET /flavors/{id}` body's `flavor` (and `/flavors/detail` item). */
export function flavorDetail(f: FakeFlavor, ctx: ViewContext): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: f.id,
    name: f.name,
    ram: f.ram,
    disk: f.disk,
    swap: atLeast(ctx.version, 75) ? 0 : '',
    'OS-FLV-EXT-DATA:ephemeral': 0,
    'OS-FLV-DISABLED:disabled': false,
    vcpus: f.vcpus,
    'os-flavor-access:is_public': f.isPublic !== false,
    rxtx_factor: new PyFloat(1),
    links: links(ctx, 'flavors', f.id),
  };
  if (atLeast(ctx.version, 55)) out.description = null;
  if (atLeast(ctx.version, 61)) out.extra_specs = {};
  return out;
}

/** `GET /flavors` item. */
export function flavorBrief(f: FakeFlavor, ctx: ViewContext): Record<string, unknown> {
  const out: Record<string, unknown> = { id: f.id, links: links(ctx, 'flavors', f.id), name: f.name };
  if (atLeast(ctx.version, 55)) out.description = null;
  return out;
}
