/**
 * Flavor, limits, quota-set and version-document routes of the fake. Sources:
 * `nova/api/openstack/compute/{flavors,limits,quota_sets,versionsV21}.py` and the bodies a real
 * Nova 26.2 (Zed) answered an admin.
 *
 * @module
 */
import { RESOURCES, type Resource } from '../quota.js';
import { limitsBody, quotaDetailBody, quotaSetBody } from '../quotaViews.js';
import { fault, type Reply } from '../respond.js';
import { flavorBrief, flavorDetail } from '../views.js';
import type { Ctx, Engine } from './context.js';

/**
 * `GET /flavors`, `/flavors/detail`. An admin's listing is filtered by `is_public` (absent: public
 * only; `None`, any case: all; else a boolean, `Invalid is_public filter [x]` otherwise), a member's
 * shows the public flavors only (a private flavor of the fake is shared with no project; Nova adds
 * those shared with the caller's project). Source: `nova/api/openstack/compute/flavors.py`
 * `_get_flavors`, `_parse_is_public`; `nova/objects/flavor.py` `_flavor_get_all_from_db`.
 */
export function listFlavors(e: Engine, ctx: Ctx, detail: boolean): Reply {
  let publicOnly: boolean | undefined;
  if (ctx.admin) {
    const given = ctx.query['is_public'];
    if (given === undefined) publicOnly = true;
    else if (given.toLowerCase() === 'none') publicOnly = undefined;
    else if (/^(1|t|true|on|y|yes)$/i.test(given)) publicOnly = true;
    else if (/^(0|f|false|off|n|no)$/i.test(given)) publicOnly = false;
    else return fault(400, `Invalid is_public filter [${given}]`);
  }
  else publicOnly = true;
  const flavors = [...e.flavors.values()]
    .filter((f) => publicOnly === undefined || (f.isPublic !== false) === publicOnly)
    .map((f) => (detail ? flavorDetail(f, ctx.view) : flavorBrief(f, ctx.view)));
  return { status: 200, body: { flavors } };
}

/** `GET /flavors/{id}` (a private flavor: for an admin only, see {@link listFlavors}). */
export function showFlavor(e: Engine, ctx: Ctx, id: string): Reply {
  const f = e.flavors.get(id);
  if (!f || (f.isPublic === false && !ctx.admin)) return fault(404, `Flavor ${id} could not be found.`);
  return { status: 200, body: { flavor: flavorDetail(f, ctx.view) } };
}

/** `GET /limits`: limits plus REPORTED usage. */
export function getLimits(e: Engine, ctx: Ctx): Reply {
  return { status: 200, body: limitsBody(e.quota.limits, e.reportedUsage(), ctx.version) };
}

function checkProject(e: Engine, ctx: Ctx, projectId: string, policy: string): Reply | undefined {
  if (projectId === e.projectId) return undefined;
  if (!ctx.admin) return fault(403, `Policy doesn't allow os_compute_api:os-quota-sets:${policy} to be performed.`);
  return fault(400, `Project ID ${projectId} is not a valid project.`);
}

/** `GET /os-quota-sets/{p}` and `/os-quota-sets/{p}/detail`. */
export function showQuotaSet(e: Engine, ctx: Ctx, projectId: string, detail: boolean): Reply {
  const denied = checkProject(e, ctx, projectId, detail ? 'detail' : 'show');
  if (denied) return denied;
  return {
    status: 200,
    body: detail
      ? quotaDetailBody(projectId, e.quota.limits, e.reportedUsage(), ctx.version)
      : quotaSetBody(projectId, e.quota.limits, ctx.version),
  };
}

const SETTABLE = new Set([
  'cores',
  'instances',
  'ram',
  'key_pairs',
  'metadata_items',
  'server_groups',
  'server_group_members',
  'injected_files',
  'injected_file_content_bytes',
  'injected_file_path_bytes',
  'fixed_ips',
  'floating_ips',
  'security_groups',
  'security_group_rules',
  'networks',
]);

/**
 * `PUT /os-quota-sets/{p}`: cores, instances and ram are stored; other keys are accepted and
 * ignored. A limit below what is used is 400 unless `force` (`quota_sets.py` `_validate_quota_limit`).
 */
export function updateQuotaSet(e: Engine, ctx: Ctx, projectId: string): Reply {
  // os_compute_api:os-quota-sets:update is admin-only, even for the caller's own project.
  if (!ctx.admin) return fault(403, "Policy doesn't allow os_compute_api:os-quota-sets:update to be performed.");
  const denied = checkProject(e, ctx, projectId, 'update');
  if (denied) return denied;
  if (ctx.bodyMalformed) return fault(400, 'Malformed request body');
  const qs = (ctx.body as { quota_set?: unknown } | undefined)?.quota_set;
  if (qs === null || typeof qs !== 'object' || Array.isArray(qs)) return fault(400, "'quota_set' is a required property");
  const entries = Object.entries(qs as Record<string, unknown>);
  const force = entries.some(([k, v]) => k === 'force' && (v === true || v === 'true' || v === 'True'));
  const used = e.countedUsage();
  const next = { ...e.quota.limits };
  for (const [key, raw] of entries) {
    if (key === 'force') continue;
    if (!SETTABLE.has(key)) {
      return fault(400, `Invalid input for field/attribute quota_set. Additional properties are not allowed ('${key}' was unexpected)`);
    }
    const value = typeof raw === 'string' && /^-?[0-9]+$/.test(raw) ? Number(raw) : raw;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < -1) {
      return fault(400, `Invalid input for field/attribute ${key}. Value: ${String(raw)}. ${String(raw)} is less than the minimum of -1`);
    }
    if ((RESOURCES as readonly string[]).includes(key)) {
      const r = key as Resource;
      if (!force && value !== -1 && value < used[r]) {
        return fault(400, `Quota limit ${value} for ${key} must be greater than or equal to already used and reserved ${used[r]}.`);
      }
      next[r] = value;
    }
  }
  e.quota.limits = next;
  return { status: 200, body: quotaSetBody(undefined, next, ctx.version) };
}

/** `DELETE /os-quota-sets/{p}`: back to the defaults, 202 with no body. */
export function revertQuotaSet(e: Engine, ctx: Ctx, projectId: string): Reply {
  // os_compute_api:os-quota-sets:delete is admin-only, even for the caller's own project.
  if (!ctx.admin) return fault(403, "Policy doesn't allow os_compute_api:os-quota-sets:delete to be performed.");
  const denied = checkProject(e, ctx, projectId, 'delete');
  if (denied) return denied;
  e.quota.limits = { ...e.quota.defaults };
  return { status: 202 };
}

/** The `v2.1` version entry, as observed (`GET /v2.1/`). */
export function versionEntry(baseUrl: string, min: string, max: string): Record<string, unknown> {
  return {
    id: 'v2.1',
    links: [
      { href: `${baseUrl}/v2.1/`, rel: 'self' },
      { href: 'http://docs.openstack.org/', rel: 'describedby', type: 'text/html' },
    ],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.compute+json;version=2.1' }],
    min_version: min,
    status: 'CURRENT',
    updated: '2013-07-23T11:33:21Z',
    version: max,
  };
}

/** `GET /` : the versions list (v2.0 SUPPORTED, v2.1 CURRENT). */
export function versionList(baseUrl: string, min: string, max: string): Record<string, unknown> {
  return {
    versions: [
      {
        id: 'v2.0',
        links: [{ href: `${baseUrl}/v2/`, rel: 'self' }],
        min_version: '',
        status: 'SUPPORTED',
        updated: '2011-01-21T11:33:21Z',
        version: '',
      },
      {
        id: 'v2.1',
        links: [{ href: `${baseUrl}/v2.1/`, rel: 'self' }],
        min_version: min,
        status: 'CURRENT',
        updated: '2013-07-23T11:33:21Z',
        version: max,
      },
    ],
  };
}
