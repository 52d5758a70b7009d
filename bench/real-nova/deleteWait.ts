/**
 * Part A of the real-Nova bench: delete-and-wait of N servers with each tool, as shipped (defaults):
 * - `nova-guard deleteServers`: `client.deleteServers(ids, { wait: true })` in this process;
 * - `nova-guard CLI`: `nova-guard server delete --wait <ids...>` (dist/cli/main.js, a child process);
 * - `openstack server delete --wait`: Debian's python3-openstackclient (keystoneauth `admin_token`
 *   plugin against the noauth2 Nova);
 * - `openstacksdk`: `conn.compute.delete_server` for each, then `conn.compute.wait_for_delete` for each
 *   (sdk_delete.py).
 *
 * Witness (independent of the tools): the harness's database, every 50 ms (NovaDbWatcher of the
 * integration suites): a server's row gets `deleted` set in the transaction that makes
 * `GET /servers/{id}` answer 404 and frees its cores. Requests: nova-api's request log between a mark
 * before the tool starts and one after it returned (the witness sends nothing to nova-api).
 *
 * When a tool reported each server gone: the CLIs that print one line per server (nova-guard's CLI,
 * sdk_delete.py) are timed as each line reaches this process (the safe side); `deleteServers` and
 * `openstack server delete` report every server when they return.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { NovaDbWatcher } from '../../test/integration/support/deleteObserver.js';
import { BenchProject, byKind, NovaApiLog, REPO, STATE, type Harness } from './harness.js';

/** The tools compared. */
export const DELETE_TOOLS = ['nova-guard deleteServers', 'nova-guard CLI', 'openstack server delete --wait', 'openstacksdk wait_for_delete'] as const;
export type DeleteTool = (typeof DELETE_TOOLS)[number];

/** One tool on one fleet size. */
export interface DeleteRow {
  tool: DeleteTool;
  servers: number;
  /** Tool start (process spawn for the CLIs) to its return/exit, ms. */
  wallMs: number;
  /** Requests nova-api logged, total and by `METHOD kind status`. */
  requests: number;
  requestKinds: Record<string, number>;
  /** The last server's row deleted (its 404), ms from the start. */
  lastGoneMs: number;
  /** Return minus the last 404, ms (negative: returned before the last server was gone). */
  lagAfterLast404Ms: number;
  /** Servers reported gone while the witness still saw their row afterwards. */
  reportedBefore404: number;
  /** Exit code or outcome. */
  outcome: string;
}

/** Run one tool on `ids`; resolves when it returned, having called `reported(id)` for each server it reported gone. */
type Runner = (ids: string[], reported: (id: string) => void) => Promise<string>;

function spawnTool(cmd: string, args: string[], env: NodeJS.ProcessEnv, onLine: (line: string) => void): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    createInterface({ input: child.stdout }).on('line', onLine);
    const killer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('error', (e) => (stderr += e.message));
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve(code === 0 ? 'exit 0' : `exit ${String(code)}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
    });
  });
}

function runners(p: BenchProject): Record<DeleteTool, Runner> {
  const nova = p.nova;
  const baseEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('OS_') || k.startsWith('NOVA_')) delete env[k];
    return env;
  };
  const idLine = (reported: (id: string) => void) => (line: string) => {
    const id = /^([0-9a-f-]{36}): /.exec(line)?.[1];
    if (id) reported(id);
  };
  return {
    'nova-guard deleteServers': async (ids) => {
      const { NovaClient } = await import('nova-guard');
      const client = new NovaClient({ endpoint: nova.endpoint, token: p.memberToken });
      const r = await client.deleteServers(ids, { wait: true });
      return r.failed.length === 0 ? 'ok' : `${r.failed.length} failed`;
    },
    'nova-guard CLI': (ids, reported) =>
      spawnTool(process.execPath, [join(REPO, 'dist', 'cli', 'main.js'), 'server', 'delete', ...ids, '--wait'], { ...baseEnv(), NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: p.memberToken }, idLine(reported)),
    'openstack server delete --wait': (ids) =>
      spawnTool('/usr/bin/openstack', ['--os-auth-type', 'admin_token', '--os-endpoint', nova.endpoint, '--os-token', p.memberToken, 'server', 'delete', '--wait', ...ids], baseEnv(), () => undefined),
    'openstacksdk wait_for_delete': (ids, reported) =>
      spawnTool('/usr/bin/python3', [join(REPO, 'bench', 'real-nova', 'sdk_delete.py'), ...ids], { ...baseEnv(), NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: p.memberToken }, idLine(reported)),
  };
}

/** Delete-and-wait of each size with each tool; logs progress to stderr. */
export async function runDeleteWait(nova: Harness, sizes: readonly number[], tools: readonly DeleteTool[] = DELETE_TOOLS): Promise<DeleteRow[]> {
  const socket = join(STATE, 'mysql', 'mysqld.sock');
  if (!existsSync(socket)) throw new Error('the harness database socket is missing: the bench needs the real-Nova harness');
  const p = new BenchProject(nova, 'bench-delete');
  const log = new NovaApiLog();
  const run = runners(p);
  const rows: DeleteRow[] = [];
  await p.cleanup();
  await p.setQuota({ cores: 200, instances: 200, ram: 1_000_000 });
  for (const servers of sizes) {
    for (const tool of tools) {
      const ids = await p.createFleet(servers, `${servers}`);
      const db = new NovaDbWatcher(socket, ids);
      const reportedAt = new Map<string, number>();
      db.start();
      const from = await log.settle();
      const t0 = performance.now();
      let outcome: string;
      try {
        outcome = await run[tool](ids, (id) => reportedAt.set(id, performance.now()));
      } catch (e) {
        outcome = `threw ${(e as Error).message}`;
      }
      const returnedMs = performance.now();
      for (const id of ids) if (!reportedAt.has(id)) reportedAt.set(id, returnedMs);
      const to = await log.settle();
      try {
        await db.whenAllGone(300_000);
      } finally {
        await db.stop();
      }
      const requests = log.since(from, to);
      const traces = [...db.traces.values()];
      const lastGone = Math.max(...traces.map((t) => t.firstGoneAnsweredMs ?? Number.NaN));
      const early = traces.filter((t) => (t.lastPresentSentMs ?? Number.NEGATIVE_INFINITY) > reportedAt.get(t.id)!).length;
      const row: DeleteRow = {
        tool,
        servers,
        wallMs: Math.round(returnedMs - t0),
        requests: requests.length,
        requestKinds: byKind(requests),
        lastGoneMs: Math.round(lastGone - t0),
        lagAfterLast404Ms: Math.round(returnedMs - lastGone),
        reportedBefore404: early,
        outcome,
      };
      rows.push(row);
      process.stderr.write(`delete ${tool} x${servers}: ${JSON.stringify(row)}\n`);
    }
  }
  await p.cleanup();
  return rows;
}
