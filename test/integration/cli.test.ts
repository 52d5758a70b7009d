/**
 * The `nova-guard` command line (dist/cli/main.js, built in beforeAll) as a child process against a real
 * Nova 26.2, connected through NOVA_ENDPOINT and NOVA_TOKEN (the member token): `limits [--json]`,
 * `server delete --wait` (success, a locked server, an unknown id), `quota audit` and its exit codes
 * (0 consistent, 3 drift, 2 bad usage, 1 error), `server reap`.
 *
 * Drift on a real Nova: the harness's MariaDB is reachable on its Unix socket, and the test raises one
 * instance's `vcpus` column (what legacy quota counting sums) above its flavor's, the phantom usage of
 * the field. That test runs only when the harness database is there (not against an outside Nova).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/index.js';
import { buildCli, CLI, cliEnv, REPO } from './support/cli.js';
import { LIMITS_2_1, LIMITS_2_57 } from './support/novaFacts.js';
import { createActiveServer, project, usage, waitForServer } from './support/realNova.js';

const run = promisify(execFile);
const p = project('cli');
const SOCKET = join(process.env['REALNOVA_STATE'] ?? join(REPO, '.real-nova'), 'mysql', 'mysqld.sock');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `node dist/cli/main.js ...args` with NOVA_ENDPOINT and NOVA_TOKEN (member) in its environment. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const childEnv = cliEnv(p.nova.endpoint, p.nova.memberToken, env);
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: childEnv, cwd: REPO, timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof x.code !== 'number') throw e;
    return { code: x.code, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/** Run SQL on the harness's cell1 database. */
async function sql(statement: string): Promise<string> {
  const { stdout } = await run('mysql', [`--socket=${SOCKET}`, '-u', 'root', '-N', '-B', 'nova_cell1', '-e', statement], { timeout: 30_000 });
  return stdout.trim();
}

beforeAll(async () => {
  await buildCli();
  await p.cleanup();
}, 240_000);
afterAll(() => p.cleanup());
beforeEach(() => p.cleanup());

describe('nova-guard limits', () => {
  it('--microversion 2.1 --json: max, used and headroom of cores, RAM and instances; the /limits keys of microversion 2.1', async () => {
    await p.setQuota({ cores: 5 });
    await createActiveServer(p, 'cli-limits', p.nova.flavors.vcpus2);

    const r = await cli(['--microversion', '2.1', 'limits', '--json']);

    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout) as Record<string, unknown> & { absolute: Record<string, number>; requestId: string };
    expect(json['cores']).toEqual({ max: 5, used: 2, headroom: 3 });
    expect(json['ram']).toEqual({ max: 51200, used: 2048, headroom: 49152 });
    expect(json['instances']).toEqual({ max: 10, used: 1, headroom: 9 });
    expect(Object.keys(json.absolute).sort()).toEqual([...LIMITS_2_1].sort());
    expect(json.absolute['maxSecurityGroups']).toBe(-1);
    expect(json.requestId).toMatch(/^req-[0-9a-f-]{36}$/);
  });

  it('--microversion 2.79 --json, and without one (negotiated: 2.93 on Nova 26): the keys of 2.57 and later; the table form', async () => {
    const json = await cli(['--microversion', '2.79', 'limits', '--json']);
    const negotiated = await cli(['limits', '--json']);
    const table = await cli(['limits']);

    expect(json.code).toBe(0);
    expect(Object.keys((JSON.parse(json.stdout) as { absolute: object }).absolute).sort()).toEqual([...LIMITS_2_57].sort());
    expect(negotiated.code).toBe(0);
    expect(Object.keys((JSON.parse(negotiated.stdout) as { absolute: object }).absolute).sort()).toEqual([...LIMITS_2_57].sort());
    expect(table.code).toBe(0);
    // cliff's bordered table: | Resource | Max | Used | Headroom |
    const rows = table.stdout
      .split('\n')
      .filter((l) => l.startsWith('|'))
      .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
    expect(rows[0]).toEqual(['Resource', 'Max', 'Used', 'Headroom']);
    expect(rows).toContainEqual(['cores', '20', '0', '20']);
    expect(rows).toContainEqual(['instances', '10', '0', '10']);
    expect(rows.find((r) => r[0]!.startsWith('ram'))?.slice(1)).toEqual(['51200', '0', '51200']);
  });
});

describe('nova-guard server delete', () => {
  it('--wait: exit 0 once Nova answers 404 and the cores are free', async () => {
    const server = await createActiveServer(p, 'cli-delete', p.nova.flavors.vcpus2);
    expect((await usage(p.member)).cores).toBe(2);

    const r = await cli(['server', 'delete', server.id, '--wait', '--interval', '50ms']);

    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(new RegExp(`^${server.id}: deleted \\(\\d+ polls, \\d+ ms\\)\\n$`));
    await expect(p.member.getServer(server.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await usage(p.member)).toEqual({ cores: 0, instances: 0, ram: 0 });
  });

  it('a locked server fails like `openstack server delete`, the other is deleted: exit 1', async () => {
    const [locked, free] = await Promise.all([createActiveServer(p, 'cli-locked'), createActiveServer(p, 'cli-free')]);
    await p.member.request({ method: 'POST', path: `/servers/${locked.id}/action`, body: { lock: null } });

    const r = await cli(['server', 'delete', locked.id, free.id, '--wait', '--interval', '50ms']);

    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^${free.id}: deleted \\(\\d+ polls, \\d+ ms\\)\\n$`));
    expect(r.stderr).toBe(`Failed to delete server with name or ID '${locked.id}': Instance ${locked.id} is locked\n1 of 2 servers failed to delete.\n`);
    expect((await p.member.getServer(locked.id)).status).toBe('ACTIVE');
    await p.admin.request({ method: 'POST', path: `/servers/${locked.id}/action`, body: { unlock: null } });
  });

  it('an id Nova does not know: "No server" like openstack, exit 1; with --ignore-missing exit 0 and nothing printed', async () => {
    const id = '7b4c6f7e-1111-4222-8333-944455556666';

    const r = await cli(['server', 'delete', id, '--wait', '--interval', '50ms']);
    const ignored = await cli(['server', 'delete', id, '--wait', '--interval', '50ms', '--ignore-missing']);

    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`Failed to delete server with name or ID '${id}': No server with a name or ID of '${id}' exists.\n1 of 1 servers failed to delete.\n`);
    expect(ignored.code).toBe(0);
    expect(ignored.stdout).toBe('');
    expect(ignored.stderr).toBe('');
  });
});

describe('nova-guard quota audit', () => {
  it('a consistent project: exit 0, the table and the verdict', async () => {
    await createActiveServer(p, 'cli-audit-1');
    await createActiveServer(p, 'cli-audit-2', p.nova.flavors.vcpus2);

    const r = await cli(['quota', 'audit']);
    const json = await cli(['quota', 'audit', '--json']);

    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Quota audit: 2 servers listed \(1 page\), readings stable$/m);
    expect(r.stdout).toMatch(/^cores +3 +3 +3 +20 +0 +consistent$/m);
    expect(r.stdout).toMatch(/^Servers by status: ACTIVE 2$/m);
    expect(r.stdout).toContain('Verdict: consistent. Reported usage matches the 2 listed servers: 3 cores, 2560 MiB RAM and 2 instances.');
    expect(json.code).toBe(0);
    const audit = JSON.parse(json.stdout) as { verdict: string; resources: Record<string, { counted: number; drift: number }> };
    expect(audit.verdict).toBe('consistent');
    expect([audit.resources['cores']!.counted, audit.resources['ramMiB']!.counted, audit.resources['instances']!.counted]).toEqual([3, 2560, 2]);
  });

  it.skipIf(!existsSync(SOCKET))('phantom usage (an instance row counting more vCPUs than its flavor): over-reported with stale usage, exit 5 (an operator must act)', async () => {
    const server = await createActiveServer(p, 'cli-phantom', p.nova.flavors.vcpus2);
    expect(await sql(`UPDATE instances SET vcpus = vcpus + 4 WHERE uuid = '${server.id}'; SELECT vcpus FROM instances WHERE uuid = '${server.id}'`)).toBe('6');
    try {
      expect((await usage(p.member)).cores).toBe(6);

      const r = await cli(['quota', 'audit', '--no-ghosts']);
      const json = await cli(['quota', 'audit', '--json', '--no-ghosts']);

      expect(r.code).toBe(5);
      expect(r.stdout).toMatch(/^cores +6 +2 +6 +20 +\+4 +over-reported$/m);
      expect(r.stdout).toContain('An operator must act: stale-usage');
      expect(r.stdout).toContain(
        'Verdict: over-reported. Nova reports 4 cores more than the 1 listed server holds (6 cores reported, 2 counted): ' +
          'that quota is held by nothing the listing shows, and blocks creates until the usage is corrected.',
      );
      expect(json.code).toBe(5);
      const audit = JSON.parse(json.stdout) as { verdict: string; resources: Record<string, { drift: number; verdict: string }> };
      expect(audit.verdict).toBe('over-reported');
      expect(audit.resources['cores']).toMatchObject({ drift: 4, verdict: 'over-reported' });
      expect(audit.resources['ramMiB']).toMatchObject({ drift: 0, verdict: 'consistent' });
    } finally {
      await sql(`UPDATE instances SET vcpus = 2 WHERE uuid = '${server.id}'`);
    }
    expect((await usage(p.member)).cores).toBe(2);
  });

  it('bad usage: exit 2 with the reason', async () => {
    const r = await cli(['quota', 'audit', '--attempts', '0']);

    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('nova-guard: --attempts must be a positive integer, got "0"\n');
  });

  it('no Nova at the endpoint: exit 1 with the error, never the token', async () => {
    const r = await cli(['quota', 'audit', '--request-timeout', '2s'], { NOVA_ENDPOINT: 'http://127.0.0.1:9/v2.1' });

    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^nova-guard quota audit: NovaNetworkError: GET http:\/\/127\.0\.0\.1:9\/v2\.1\/\S+ failed without a response: ECONNREFUSED; is Nova running at http:\/\/127\.0\.0\.1:9\/v2\.1\?\n$/);
    expect(r.stderr).not.toContain(p.nova.memberToken);
  });
});

describe('nova-guard server reap', () => {
  it('--json: the leftover of a fleet is deleted on the second pass, the rest is left', async () => {
    const prefix = `ng-it-clireap${Math.random().toString(36).slice(2, 7)}-`;
    const leftover = await createActiveServer(p, prefix.slice('ng-it-'.length) + 'x');
    const other = await createActiveServer(p, 'cli-keep');

    const r = await cli(['server', 'reap', '--prefix', prefix, '--older-than', '0s', '--pass-interval', '100ms', '--interval', '50ms', '--json']);

    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { dryRun: boolean; deleted: Array<{ serverId: string; outcome: string }>; failed: unknown[] };
    expect(out.dryRun).toBe(false);
    expect(out.deleted.map((d) => [d.serverId, d.outcome])).toEqual([[leftover.id, 'deleted']]);
    expect(out.failed).toEqual([]);
    expect((await p.member.listServers()).map((s) => s.id)).toEqual([other.id]);
    expect(await waitForServer(p.member, other.id, (s) => s.status === 'ACTIVE')).toBeDefined();
  });
});
