/**
 * The harness's own back doors, for the suites that make causes of quota drift by hand: its MariaDB
 * (Unix socket `$REALNOVA_STATE/mysql/mysqld.sock`, user root; databases `nova_api`, `nova_cell0`,
 * `nova_cell1`, `placement`) and placement's API (noauth2: `admin` is its admin token). Neither exists
 * against an outside Nova: the suites skip those tests then ({@link HARNESS_DB}, {@link HARNESS_PLACEMENT}).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './cli.js';

const run = promisify(execFile);

/** The harness database's Unix socket. */
export const SOCKET = join(process.env['REALNOVA_STATE'] ?? join(REPO, '.real-nova'), 'mysql', 'mysqld.sock');

/** True when the harness's MariaDB is there (the suites run against the harness, not an outside Nova). */
export const HARNESS_DB = existsSync(SOCKET);

/** Placement's endpoint: `PLACEMENT_ENDPOINT`, else the harness's port on loopback. */
export const PLACEMENT = (process.env['PLACEMENT_ENDPOINT'] ?? `http://127.0.0.1:${process.env['REALNOVA_PLACEMENT_PORT'] ?? '8778'}`).replace(/\/+$/, '');

/** True when placement can be called with the harness's noauth2 admin token. */
export const HARNESS_PLACEMENT = HARNESS_DB && process.env['REALNOVA_AUTH'] !== 'keystone';

/** Run SQL on one of the harness's databases; the rows, tab-separated, trimmed. */
export async function sql(database: 'nova_api' | 'nova_cell0' | 'nova_cell1' | 'placement', statement: string): Promise<string> {
  const { stdout } = await run('mysql', [`--socket=${SOCKET}`, '-u', 'root', '-N', '-B', database, '-e', statement], { timeout: 30_000 });
  return stdout.trim();
}

/** One placement request with the admin token; the parsed body (undefined when empty). Throws on an HTTP error. */
export async function placement(method: string, path: string, body?: unknown, microversion = '1.28'): Promise<unknown> {
  const headers: Record<string, string> = { 'X-Auth-Token': 'admin', 'OpenStack-API-Version': `placement ${microversion}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(PLACEMENT + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`placement ${method} ${path} answered ${res.status}: ${text}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/** Placement's `GET /usages?project_id=` (microversion 1.9): what the audit's `readPlacementUsages` reads. */
export async function placementUsages(projectId: string): Promise<Record<string, number>> {
  const body = (await placement('GET', `/usages?project_id=${encodeURIComponent(projectId)}`, undefined, '1.9')) as { usages: Record<string, number> };
  return body.usages;
}

/**
 * The server's instance mapping loses its cell (`nova_api.instance_mappings.cell_id = NULL`): it stays
 * listed and counted, its GET and DELETE answer 404. Resolves a function that puts the cell back.
 */
export async function breakMapping(serverId: string): Promise<() => Promise<void>> {
  const cell = await sql('nova_api', `SELECT cell_id FROM instance_mappings WHERE instance_uuid = '${serverId}'`);
  if (!/^\d+$/.test(cell)) throw new Error(`server ${serverId} has no instance mapping with a cell (cell_id ${JSON.stringify(cell)})`);
  await sql('nova_api', `UPDATE instance_mappings SET cell_id = NULL WHERE instance_uuid = '${serverId}'`);
  return async () => {
    await sql('nova_api', `UPDATE instance_mappings SET cell_id = ${cell} WHERE instance_uuid = '${serverId}'`);
  };
}

/**
 * The server's delete never finished: its cell1 row says `vm_state = 'deleted'`, no task, `deleted = 0`
 * (not destroyed), last updated `agoS` seconds ago. Listed as DELETED and counted. Resolves a function
 * that makes it ACTIVE again (so that it can be deleted for real).
 */
export async function stickDeleting(serverId: string, agoS = 3600): Promise<() => Promise<void>> {
  await sql('nova_cell1', `UPDATE instances SET vm_state = 'deleted', task_state = NULL, updated_at = UTC_TIMESTAMP() - INTERVAL ${agoS} SECOND WHERE uuid = '${serverId}' AND deleted = 0`);
  return async () => {
    await sql('nova_cell1', `UPDATE instances SET vm_state = 'active', task_state = NULL, updated_at = UTC_TIMESTAMP() WHERE uuid = '${serverId}' AND deleted = 0`);
  };
}
