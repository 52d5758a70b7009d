/**
 * `/servers` routes of the fake: list (with filters, `changes-since` and pagination), show, create
 * (with Nova's body validation and quota check) and delete. Source: `nova/api/openstack/compute/servers.py`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { unexpectedServerKeys, unexpectedTopKeys } from '../createKeys.js';
import { checkCreateQuota } from '../quota.js';
import { pyRepr } from '../pyjson.js';
import { fault, type Reply } from '../respond.js';
import type { ServerRecord } from '../state.js';
import { atLeast, serverBrief, serverCreated, serverDetail } from '../views.js';
import type { Ctx, Engine } from './context.js';

/** `Instance <id> could not be found.` (404 itemNotFound). */
export function notFound(id: string): Reply {
  return fault(404, `Instance ${id} could not be found.`, id);
}

/** The server a request may act on: live and not a ghost; else undefined (404). */
export function findServer(e: Engine, id: string): ServerRecord | undefined {
  const r = e.store.live(id);
  return r && !r.ghost ? r : undefined;
}

function queryError(name: string, value: string, message: string): Reply {
  return fault(400, `Invalid input for query parameters ${name}. Value: ${value}. ${message}`);
}

function parseIsoMs(text: string): number | undefined {
  // ISO 8601; no timezone means UTC (Nova normalises with timeutils.normalize_time).
  const t = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(t)) return undefined;
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(t) && t.length > 10;
  const ms = Date.parse(hasZone ? t.replace(' ', 'T') : t.replace(' ', 'T') + (t.length > 10 ? 'Z' : 'T00:00:00Z'));
  return Number.isNaN(ms) ? undefined : ms;
}

function nameMatcher(pattern: string): (name: string) => boolean {
  try {
    const re = new RegExp(pattern);
    return (name) => re.test(name);
  } catch {
    return (name) => name.includes(pattern);
  }
}

/** Newest first, then highest internal id first (Nova's default `created_at desc, id desc`). */
function newerFirst(a: ServerRecord, b: ServerRecord): number {
  return b.createdMs - a.createdMs || b.seq - a.seq;
}

/**
 * The stub Nova lists for a server of a cell that does not answer (2.69+; Nova API guide, "Down
 * cells"): id, status UNKNOWN and links in `GET /servers`; also tenant_id and created in the detailed
 * listing; never name, metadata or flavor. (Its own GET answers 500 here, as Nova does when the cell
 * lookup fails; the stub Nova may give there from 2.69 is not modelled.)
 */
function downCellStub(r: ServerRecord, e: Engine, ctx: Ctx, detail: boolean): Record<string, unknown> {
  const brief = { id: r.id, status: 'UNKNOWN', links: serverBrief(r, ctx.view)['links'] };
  return detail ? { ...brief, tenant_id: e.projectId, created: new Date(r.createdMs).toISOString().replace(/\.\d{3}Z$/, 'Z') } : brief;
}

/** `GET /servers` and `GET /servers/detail`. */
export function listServers(e: Engine, ctx: Ctx, detail: boolean): Reply {
  const q = ctx.query;
  let limit = e.pageSize;
  if (q.limit !== undefined) {
    if (!/^[0-9]+$/.test(q.limit)) return queryError('limit', q.limit, `'${q.limit}' does not match '^[0-9]*$'`);
    limit = Math.min(Number(q.limit), e.pageSize);
  }
  let sinceMs: number | undefined;
  let beforeMs: number | undefined;
  if (q['changes-since'] !== undefined) {
    sinceMs = parseIsoMs(q['changes-since']);
    if (sinceMs === undefined) {
      return queryError('changes-since', q['changes-since'], `'${q['changes-since']}' is not a 'date-time'`);
    }
  }
  if (q['changes-before'] !== undefined && atLeast(ctx.version, 66)) {
    beforeMs = parseIsoMs(q['changes-before']);
    if (beforeMs === undefined) {
      return queryError('changes-before', q['changes-before'], `'${q['changes-before']}' is not a 'date-time'`);
    }
    if (sinceMs !== undefined && sinceMs > beforeMs) {
      return fault(400, 'The value of changes-since must be less than or equal to changes-before.');
    }
  }
  const includeDeleted = sinceMs !== undefined || beforeMs !== undefined;
  let statusFilter: string | undefined;
  if (q.status !== undefined) {
    statusFilter = q.status.toUpperCase();
    if (statusFilter === 'DELETED' && !ctx.admin) return fault(403, 'Only administrators may list deleted instances');
  }
  const matchName = q.name !== undefined ? nameMatcher(q.name) : undefined;

  const picked: ServerRecord[] = [];
  for (const r of e.store.all()) {
    if (statusFilter === 'DELETED') {
      if (r.status !== 'DELETED') continue;
    } else if (statusFilter === 'SOFT_DELETED') {
      if (r.destroyed || r.status !== 'SOFT_DELETED') continue;
    } else if (!includeDeleted) {
      if (r.destroyed || r.status === 'SOFT_DELETED') continue;
    }
    if (statusFilter !== undefined && r.status !== statusFilter) continue;
    if (sinceMs !== undefined && r.updatedMs < sinceMs) continue;
    if (beforeMs !== undefined && r.updatedMs > beforeMs) continue;
    if (matchName && !matchName(r.name)) continue;
    // A server of a cell that does not answer: a stub from 2.69, left out below (Nova API guide, "Down cells").
    if (r.downCell && !atLeast(ctx.version, 69)) continue;
    picked.push(r);
  }
  picked.sort(newerFirst);

  let start = 0;
  if (q.marker !== undefined) {
    const m = e.store.get(q.marker);
    if (!m) return fault(400, `marker [${q.marker}] not found`);
    const idx = picked.indexOf(m);
    start = idx >= 0 ? idx + 1 : picked.findIndex((r) => newerFirst(m, r) < 0);
    if (start < 0) start = picked.length;
  }
  const page = limit === 0 ? [] : picked.slice(start, start + limit);
  const body: Record<string, unknown> = {
    servers: page.map((r) => (r.downCell ? downCellStub(r, e, ctx, detail) : detail ? serverDetail(r, ctx.view, true) : serverBrief(r, ctx.view))),
  };
  if (limit > 0 && page.length === limit) {
    const params = new URLSearchParams(ctx.search);
    params.set('marker', page[page.length - 1]!.id);
    const prefix = ctx.projectInPath ? `/${e.projectId}` : '';
    body.servers_links = [
      { href: `${e.baseUrl}/v2.1${prefix}/servers${detail ? '/detail' : ''}?${params.toString()}`, rel: 'next' },
    ];
  }
  return { status: 200, body };
}

/** `GET /servers/{id}`. */
export function showServer(e: Engine, ctx: Ctx, id: string): Reply {
  const r = findServer(e, id);
  if (!r) return notFound(id);
  if (r.downCell) return fault(500, 'Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.');
  return { status: 200, body: { server: serverDetail(r, ctx.view) }, serverId: id };
}

function validationError(field: string, value: unknown, message: string): Reply {
  // Nova formats the value with Python's %s: str() of a string is the string itself, of anything else its repr().
  return fault(400, `Invalid input for field/attribute ${field}. Value: ${typeof value === 'string' ? value : pyRepr(value)}. ${message}`);
}

function countParam(value: unknown, field: string): number | Reply | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    return validationError(field, value, `${pyRepr(value)} is not of type 'integer', 'string'`);
  }
  if (n < 1) return validationError(field, value, `${n} is less than the minimum of 1`);
  return n;
}

function randomPassword(): string {
  const alphabet = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = randomBytes(12);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

/** `POST /servers`: validate like Nova, check quota (403), create, 202. */
export function createServer(e: Engine, ctx: Ctx): Reply {
  if (ctx.bodyMalformed) return fault(400, 'Malformed request body');
  const body = ctx.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return fault(400, 'The request body is invalid');
  }
  const server = (body as Record<string, unknown>).server;
  if (server === undefined) return fault(400, "'server' is a required property");
  if (server === null || typeof server !== 'object' || Array.isArray(server)) {
    return validationError('server', server, `${pyRepr(server)} is not of type 'object'`);
  }
  const s = server as Record<string, unknown>;
  // Nova's schema checks the properties given first, then the required ones, then the unknown ones
  // (jsonschema follows the schema's keyword order: properties, required, additionalProperties).
  if ('name' in s) {
    if (typeof s.name !== 'string') return validationError('name', s.name, `${pyRepr(s.name)} is not of type 'string'`);
    if (s.name.length < 1) return validationError('name', s.name, "'' is too short");
    if (s.name.length > 255) return validationError('name', s.name, `${pyRepr(s.name)} is too long`);
  }
  if ('flavorRef' in s && typeof s.flavorRef !== 'string' && typeof s.flavorRef !== 'number') {
    return validationError('flavorRef', s.flavorRef, `${pyRepr(s.flavorRef)} is not of type 'string', 'integer'`);
  }
  if (s.networks !== undefined && atLeast(ctx.version, 37)) {
    if (!Array.isArray(s.networks) && s.networks !== 'none' && s.networks !== 'auto') {
      return validationError('networks', s.networks, `${pyRepr(s.networks)} is not valid under any of the given schemas`);
    }
  } else if (s.networks !== undefined && !Array.isArray(s.networks)) {
    // Before 2.37 `networks` is a list only; "none" and "auto" arrived with 2.37 (servers.py schema base_create).
    return validationError('networks', s.networks, `${pyRepr(s.networks)} is not of type 'array'`);
  }
  const metadata = s.metadata ?? {};
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    return validationError('metadata', metadata, `${pyRepr(metadata)} is not of type 'object'`);
  }
  for (const [k, v] of Object.entries(metadata as Record<string, unknown>)) {
    if (typeof v !== 'string') return validationError(k, v, `${pyRepr(v)} is not of type 'string'`);
  }
  const minRaw = countParam(s.min_count, 'min_count');
  if (typeof minRaw === 'object') return minRaw;
  const maxRaw = countParam(s.max_count, 'max_count');
  if (typeof maxRaw === 'object') return maxRaw;
  const required = ['name', 'flavorRef'];
  if (atLeast(ctx.version, 37)) required.push('networks');
  for (const key of required) {
    if (!(key in s)) return validationError('server', s, `'${key}' is a required property`);
  }
  // A misspelled or unknown key (`network`, `bogus`) is refused, as the schema has additionalProperties false.
  const unexpected = unexpectedServerKeys(s, ctx.version);
  if (unexpected !== undefined) return validationError('server', s, unexpected);
  const unexpectedTop = unexpectedTopKeys(body as Record<string, unknown>, ctx.version);
  if (unexpectedTop !== undefined) return fault(400, unexpectedTop);
  const minCount = minRaw ?? 1;
  const maxCount = maxRaw ?? minCount;
  if (minCount > maxCount) return fault(400, 'min_count must be <= max_count');

  const flavorId = String(s.flavorRef).split('/').filter(Boolean).pop() ?? '';
  const flavor = e.flavors.get(flavorId);
  // A private flavor is not shared with the fake's project: only an admin finds it.
  if (!flavor || (flavor.isPublic === false && !ctx.admin)) return fault(400, `Flavor ${flavorId} could not be found.`);

  const verdict = checkCreateQuota(flavor, minCount, maxCount, e.countedUsage(), e.quota.limits);
  if (!verdict.ok) {
    e.store.record.quota403s++;
    return fault(403, verdict.message);
  }

  const imageRef = typeof s.imageRef === 'string' ? s.imageRef.split('/').filter(Boolean).pop() ?? '' : '';
  const created = e.compute.create({
    name: s.name as string,
    flavor,
    imageRef,
    metadata: metadata as Record<string, string>,
    count: verdict.count,
    userId: ctx.userId,
    keyName: typeof s.key_name === 'string' ? s.key_name : null,
    userData: typeof s.user_data === 'string' ? s.user_data : null,
    description: typeof s.description === 'string' ? s.description : null,
  });
  const first = created[0]!;
  const view = serverCreated(first, ctx.view, randomPassword());
  return {
    status: 202,
    body: { server: view },
    headers: { Location: `${e.baseUrl}/v2.1/servers/${first.id}` },
    serverId: first.id,
  };
}

/** `Instance <id> is locked` (409), unless the caller is admin (`check_instance_lock`). */
export function lockedConflict(r: ServerRecord, ctx: Ctx): Reply | undefined {
  return r.locked && !ctx.admin ? fault(409, `Instance ${r.id} is locked`, r.id) : undefined;
}

/** `DELETE /servers/{id}`: 204 and the compute-side delete starts. */
export function deleteServer(e: Engine, ctx: Ctx, id: string): Reply {
  const r = findServer(e, id);
  if (!r) return notFound(id);
  const locked = lockedConflict(r, ctx);
  if (locked) return locked;
  e.compute.requestDelete(r, false);
  return { status: 204, serverId: id };
}
