/**
 * The causes of quota drift made by hand on a real Nova 26.2 (legacy quota counting from the cell
 * databases), and the finding `auditQuota` names for each: its kind, the server behind it, what it
 * holds, and the remedy. The same causes on FakeNova (`nova.causes`) are in test/audit/findings.test.ts.
 *
 * - orphan-mapping: the server's row in `nova_api.instance_mappings` loses its cell (`cell_id = NULL`):
 *   the listing still shows it, Nova still counts it, its own GET and DELETE answer 404. `deleteServer`
 *   fails with `OrphanedServerError`, `nova-guard server delete --wait` exits 1.
 * - stuck-deleting: the instance row says `vm_state = 'deleted'`, `deleted = 0`, last updated an hour
 *   ago: listed as DELETED and still counted (a delete the compute host never finished).
 * - never-scheduled: a server of the harness's no-valid-host flavor (ERROR in cell0).
 * - shelved: `shelve` with Nova's default `shelved_offload_time = 0`: SHELVED_OFFLOADED at once; legacy
 *   counting keeps its flavor, placement holds nothing for it.
 * - stale-usage: one instance row's `vcpus` raised above its flavor's (what legacy counting sums).
 * - leaked-allocation: an allocation PUT into placement for the project with no server behind it.
 *
 * The database edits need the harness's MariaDB (its Unix socket under REALNOVA_STATE) and placement's
 * admin token "admin" (noauth2): against an outside Nova those tests skip. Every edit is undone in a
 * `finally`, and the file works in a project of its own (`<NOVA_PROJECT>-findings` under noauth2).
 *
 * Not made here (they need a configuration change and service restarts that the rest of the suite
 * would see): counting from placement (`[quota] count_usage_from_placement`), a down cell, a
 * VERIFY_RESIZE server (the harness has one compute host: a resize to another host finds none, and
 * `allow_resize_to_same_host` is off). A server in BUILD is caught in audit.test.ts.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditQuota, NotFoundError, OrphanedServerError, type Server } from '../../src/index.js';
import type { Finding, PlacementUsagesReader } from '../../src/audit/index.js';
import { buildCli, CLI, cliEnv, REPO } from './support/cli.js';
import { breakMapping, HARNESS_DB, HARNESS_PLACEMENT, placement, placementUsages, sql, stickDeleting } from './support/harnessDb.js';
import { createActiveServer, createServer, project, usage, waitForServer } from './support/realNova.js';

const run = promisify(execFile);
const p = project('findings');

/** What the audit's `readPlacementUsages` option wants: placement's `GET /usages?project_id=`. */
const readPlacementUsages: PlacementUsagesReader = (projectId) => placementUsages(projectId);

const kinds = (fs: Finding[]): string[] => fs.map((f) => f.kind);
function find(fs: Finding[], kind: string): Finding {
  const f = fs.find((x) => x.kind === kind);
  if (!f) throw new Error(`no ${kind} finding in [${kinds(fs).join(', ')}]`);
  return f;
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: cliEnv(p.nova.endpoint, p.nova.memberToken), cwd: REPO, timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof x.code !== 'number') throw e;
    return { code: x.code, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

beforeAll(async () => {
  if (HARNESS_DB) await buildCli();
  await p.cleanup();
}, 240_000);
afterAll(() => p.cleanup());
beforeEach(() => p.cleanup());

describe.skipIf(!HARNESS_DB)('audit findings on a real Nova, each cause made by hand', () => {
  it('orphan-mapping: listed and counted, GET and DELETE answer 404; deleteServer fails with OrphanedServerError, the CLI exits 1', async () => {
    const plain = await createActiveServer(p, 'orphan-plain', p.nova.flavors.vcpus1);
    const orphan = await createActiveServer(p, 'orphan', p.nova.flavors.vcpus2);
    const repair = await breakMapping(orphan.id);
    try {
      await expect(p.member.getServer(orphan.id)).rejects.toBeInstanceOf(NotFoundError);
      expect((await p.member.listServers()).map((s) => s.id).sort()).toEqual([plain.id, orphan.id].sort());
      expect(await usage(p.member)).toEqual({ cores: 3, ram: 2560, instances: 2 });

      const audit = await auditQuota(p.member);

      expect(audit.ghosts.map((g) => g.id)).toEqual([orphan.id]);
      expect(audit.ghosts[0]!.requestId).toMatch(/^req-[0-9a-f-]{36}$/);
      expect(audit.resources.cores).toMatchObject({ reportedBefore: 3, counted: 3, countedInGhosts: 2, reportedAfter: 3 });
      expect(kinds(audit.findings)).toEqual(['orphan-mapping']);
      const f = find(audit.findings, 'orphan-mapping');
      expect(f).toMatchObject({ serverIds: [orphan.id], transient: false, holds: { cores: 2, ramMiB: 2048, instances: 1 } });
      expect(f.projectCan).toMatch(/DELETE answers 404/);
      expect(f.operatorCan).toMatch(/nova-manage cell_v2 verify_instance/);
      // The books match the listing (Nova counts what it lists); the finding says which server cannot go.
      expect(audit.verdict).toBe('consistent');
      expect(audit.summary).toContain('1 listed server answers 404 on its own GET (ghosts).');

      // The delete cannot end: never `already-gone` while Nova lists and counts the server.
      const failed = await p.member.deleteServer(orphan.id, { wait: true, intervalMs: 50, timeoutMs: 60_000 }).then(
        (r) => r,
        (e: unknown) => e,
      );
      expect(failed).toBeInstanceOf(OrphanedServerError);
      const err = failed as OrphanedServerError;
      expect(err.serverId).toBe(orphan.id);
      expect(err.finding).toMatchObject({ kind: 'orphan-mapping', serverIds: [orphan.id] });
      expect(p.member.unconfirmedDeletes().map((u) => u.serverId)).toContain(orphan.id);

      const r = await cli(['server', 'delete', orphan.id, '--wait', '--interval', '50ms']);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`Failed to delete server with name or ID '${orphan.id}': Server ${orphan.id} cannot be deleted:`);
      expect(r.stderr).toContain('1 of 1 servers failed to delete.');
      expect(await usage(p.member)).toEqual({ cores: 3, ram: 2560, instances: 2 });
    } finally {
      await repair();
    }
    expect((await p.member.getServer(orphan.id)).status).toBe('ACTIVE');
  });

  it('stuck-deleting: listed as DELETED and still counted; never "held by nothing"', async () => {
    const stuck = await createActiveServer(p, 'stuck', p.nova.flavors.vcpus2);
    const revive = await stickDeleting(stuck.id, 3600);
    try {
      const listed: Server[] = await p.member.listServers();
      expect(listed.map((s) => [s.id, s.status])).toEqual([[stuck.id, 'DELETED']]);
      expect(await usage(p.member)).toEqual({ cores: 2, ram: 2048, instances: 1 });

      const audit = await auditQuota(p.member);

      expect(audit.byStatus).toEqual({ DELETED: 1 });
      expect(audit.resources.cores).toMatchObject({ reportedBefore: 2, counted: 2, drift: 0, verdict: 'consistent' });
      expect(audit.verdict).toBe('consistent');
      expect(audit.summary).not.toMatch(/held by nothing/);
      expect(kinds(audit.findings)).toEqual(['stuck-deleting']);
      const f = find(audit.findings, 'stuck-deleting');
      expect(f).toMatchObject({ serverIds: [stuck.id], transient: false, holds: { cores: 2, ramMiB: 2048, instances: 1 } });
      expect(f.evidence).toContain(`${stuck.id} DELETED`);
      expect(f.projectCan).toMatch(/force-delete/);
      expect(f.operatorCan).toMatch(/archive_deleted_rows/);

      // Younger than stuckAfterMs, the same record is a delete under way.
      const young = await auditQuota(p.member, { stuckAfterMs: 2 * 3600_000, checkGhosts: false });
      expect(find(young.findings, 'delete-in-flight')).toMatchObject({ serverIds: [stuck.id], transient: true });
      expect(kinds(young.findings)).not.toContain('stuck-deleting');
    } finally {
      await revive();
    }
  });

  it('never-scheduled: a NoValidHost server in cell0 counts its flavor (legacy counting, inferred)', async () => {
    const active = await createActiveServer(p, 'nvh-active', p.nova.flavors.vcpus2);
    const noHost = await createServer(p, 'nvh', p.nova.flavors.noValidHost);
    expect((await waitForServer(p.member, noHost.id, (s) => s.status !== 'BUILD'))?.fault?.message).toMatch(/^No valid host was found\./);
    // Nova lists it without its fault (read from the API's database, not cell0): the audit GETs it.
    expect((await p.member.listServers()).find((s) => s.id === noHost.id)?.fault).toBeUndefined();

    const audit = await auditQuota(p.member);

    expect(audit.resources.cores).toMatchObject({ reportedBefore: 3, counted: 3, drift: 0, verdict: 'consistent' });
    expect(audit.verdict).toBe('consistent');
    expect(audit.countingModel).toEqual({ model: 'legacy', basis: 'inferred', misfits: { legacy: 0, placement: 2 } });
    expect(audit.unscheduled.map((s) => s.id)).toEqual([noHost.id]);
    expect(kinds(audit.findings)).toEqual(['never-scheduled']);
    const f = find(audit.findings, 'never-scheduled');
    expect(f).toMatchObject({ serverIds: [noHost.id], transient: false, holds: { cores: 1, ramMiB: 512, instances: 1 } });
    expect(f.projectCan).toMatch(/^delete it/);
    expect(audit.servers.find((s) => s.id === active.id)?.holds).toEqual({ cores: 2, ramMiB: 2048, instances: 1 });
  });

  it.skipIf(!HARNESS_PLACEMENT)('shelved: SHELVED_OFFLOADED keeps its flavor under legacy counting; placement holds nothing for it', async () => {
    const server = await createActiveServer(p, 'shelve', p.nova.flavors.vcpus2);
    await p.member.request({ method: 'POST', path: `/servers/${server.id}/action`, body: { shelve: null } });
    await waitForServer(p.member, server.id, (s) => s.status === 'SHELVED_OFFLOADED' && !s['OS-EXT-STS:task_state'], { intervalMs: 200, timeoutMs: 120_000 });

    const audit = await auditQuota(p.member, { readPlacementUsages });

    expect(audit.resources.cores).toMatchObject({ reportedBefore: 2, counted: 2, drift: 0, verdict: 'consistent' });
    expect(audit.countingModel).toMatchObject({ model: 'legacy', basis: 'inferred' });
    expect(audit.placementUsage).toBe('read: 0 VCPU, 0 MEMORY_MB allocated');
    expect(kinds(audit.findings)).toEqual(['shelved']);
    expect(find(audit.findings, 'shelved')).toMatchObject({ serverIds: [server.id], transient: false, holds: { cores: 2, ramMiB: 2048, instances: 1 }, projectCan: 'unshelve or delete it' });
  });

  it.skipIf(!HARNESS_PLACEMENT)('stale-usage: an instance row counting 4 vCPUs more than its flavor; placement agrees with the servers', async () => {
    const server = await createActiveServer(p, 'stale', p.nova.flavors.vcpus2);
    expect(await sql('nova_cell1', `UPDATE instances SET vcpus = vcpus + 4 WHERE uuid = '${server.id}'; SELECT vcpus FROM instances WHERE uuid = '${server.id}'`)).toBe('6');
    try {
      const audit = await auditQuota(p.member, { readPlacementUsages });

      expect(audit.resources.cores).toMatchObject({ reportedBefore: 6, counted: 2, drift: 4, verdict: 'over-reported' });
      expect(audit.verdict).toBe('over-reported');
      expect(audit.countingModel.model).toBe('legacy');
      expect(audit.placementUsage).toBe('read: 2 VCPU, 2048 MEMORY_MB allocated');
      expect(kinds(audit.findings)).toEqual(['stale-usage']);
      const f = find(audit.findings, 'stale-usage');
      expect(f).toMatchObject({ serverIds: [], transient: false, holds: { cores: 4, ramMiB: 0, instances: 0 } });
      expect(f.evidence).toContain('under legacy counting (cores 4)');
      expect(f.operatorCan).toMatch(/archive_deleted_rows/);
    } finally {
      await sql('nova_cell1', `UPDATE instances SET vcpus = 2 WHERE uuid = '${server.id}'`);
    }
    expect((await usage(p.member)).cores).toBe(2);
  });

  it.skipIf(!HARNESS_PLACEMENT)('leaked-allocation: an allocation in placement with no server behind it; Nova (legacy) does not count it', async () => {
    const server = await createActiveServer(p, 'leak', p.nova.flavors.vcpus1);
    const { resource_providers: rps } = (await placement('GET', '/resource_providers')) as { resource_providers: Array<{ uuid: string }> };
    expect(rps.length).toBeGreaterThan(0);
    const consumer = randomUUID();
    await placement('PUT', `/allocations/${consumer}`, {
      allocations: { [rps[0]!.uuid]: { resources: { VCPU: 2, MEMORY_MB: 1024 } } },
      project_id: p.nova.project,
      user_id: 'nova-guard-it',
      consumer_generation: null,
    });
    try {
      const audit = await auditQuota(p.member, { readPlacementUsages });

      expect(audit.placementUsage).toBe('read: 3 VCPU, 1536 MEMORY_MB allocated');
      expect(audit.resources.cores).toMatchObject({ reportedBefore: 1, counted: 1, drift: 0, verdict: 'consistent' });
      expect(kinds(audit.findings)).toEqual(['leaked-allocation']);
      const f = find(audit.findings, 'leaked-allocation');
      expect(f).toMatchObject({ serverIds: [], transient: false, holds: { cores: 2, ramMiB: 1024, instances: 0 } });
      expect(f.evidence).toContain('placement allocates 3 VCPU and 1536 MEMORY_MB to the project; its listed servers account for 1 VCPU and 512 MEMORY_MB');
      expect(f.operatorCan).toMatch(/nova-manage placement audit --delete/);
      expect(audit.servers.map((s) => s.id)).toEqual([server.id]);
    } finally {
      await placement('DELETE', `/allocations/${consumer}`);
    }
  });
});
