import { describe, expect, it } from 'vitest';
import { auditQuota, ValidationError, type NovaClient } from '../../src/index.js';
import { countsTowardUsage, suspectReasons } from '../../src/audit/count.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, startNova } from '../helpers.js';

/** Whole seconds: Nova prints `created` without milliseconds. */
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const now = (): number => T0 + 90_000;

/** Resolves once the fake has received the listing (held there by an injected delay). */
async function whenListing(nova: FakeNova): Promise<void> {
  while (nova.requestsTo('GET', '/servers/detail').length === 0) await new Promise((r) => setTimeout(r, 1));
}

describe('auditQuota', () => {
  it('consistent: reported usage equals the count of the listed servers; reads limits twice, lists once, ghost-checks each', async () => {
    // A Nova older than 2.69 (and a client below 2.47): the presence listing at 2.69 is refused, the
    // listing falls back to the client's microversion, and flavors are read by GET.
    const nova = await startNova({ maxMicroversion: '2.60' });
    const client = clientFor(nova, { microversion: '2.1' });
    const ids = ['1', '2', '3'].map((flavorId, i) => nova.addServer({ name: `ci-${i}`, flavorId, createdMs: T0 }).id);
    const a = await auditQuota(client, { now });
    expect(a.verdict).toBe('consistent');
    expect(a.stable).toBe(true);
    expect(a.resources.cores).toEqual({ reportedBefore: 7, counted: 7, countedInBuild: 0, countedInGhosts: 0, reportedAfter: 7, limit: 20, drift: 0, verdict: 'consistent' });
    expect(a.resources.ramMiB).toEqual({ reportedBefore: 6656, counted: 6656, countedInBuild: 0, countedInGhosts: 0, reportedAfter: 6656, limit: 51200, drift: 0, verdict: 'consistent' });
    expect(a.resources.instances).toMatchObject({ reportedBefore: 3, counted: 3, reportedAfter: 3, limit: 10, drift: 0 });
    expect(a.byStatus).toEqual({ ACTIVE: 3 });
    expect(a.suspects).toEqual([]);
    expect(a.ghosts).toEqual([]);
    expect(a.ghostsChecked).toBe(true);
    expect(a.notes).toEqual(['Nova refused microversion 2.69 (406): listed at 2.1, where servers of a cell that does not answer are left out']);
    expect(a.partial).toBe(true);
    expect(a.readings.quotaSetBefore?.used).toEqual({ cores: 7, ramMiB: 6656, instances: 3 });
    expect(a.servers.map((s) => s.ageMs)).toEqual([90_000, 90_000, 90_000]);
    expect(a.summary).toBe(
      'Reported usage matches the 3 listed servers: 7 cores, 6656 MiB RAM and 3 instances. ' +
        'Partial audit: Nova lists below microversion 2.69 only: servers of a cell that does not answer would be missing from the listing.',
    );
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(2);
    expect(nova.requestsTo('GET', `/os-quota-sets/${nova.projectId}/detail`)).toHaveLength(2);
    // one listing refused at 2.69 (406), one answered at 2.1
    expect(nova.requestsTo('GET', '/servers/detail').map((r) => r.status)).toEqual([406, 200]);
    expect(nova.requestsTo('GET', /^\/flavors\/[123]$/)).toHaveLength(3);
    for (const id of ids) expect(nova.requestsTo('GET', `/servers/${id}`)).toHaveLength(1);
    expect(nova.requests.filter((r) => r.method !== 'GET')).toHaveLength(0);
  });

  it('reads the limits before and after the listing, in that order', async () => {
    const nova = await startNova({ maxMicroversion: '2.60' });
    nova.addServer({ flavorId: '1' });
    await auditQuota(clientFor(nova, { microversion: '2.1' }), { checkGhosts: false, readQuotaSetDetail: false });
    expect(nova.requests.map((r) => r.path)).toEqual(['/limits', '/servers/detail', '/servers/detail', '/limits', '/flavors/1']);
  });

  it('lists at microversion 2.69 when the client is below it and Nova supports it: flavors embedded, no GET /flavors', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const a = await auditQuota(clientFor(nova, { microversion: '2.1' }), { checkGhosts: false, readQuotaSetDetail: false });
    expect(nova.requests.map((r) => [r.path, r.status])).toEqual([
      ['/limits', 200],
      ['/servers/detail', 200],
      ['/limits', 200],
    ]);
    expect(a.resources.cores).toMatchObject({ counted: 1, reportedBefore: 1, verdict: 'consistent' });
    expect(a.partial).toBe(false);
  });

  it('follows every page of the listing', async () => {
    const nova = await startNova({ pageSize: 2 });
    for (let i = 0; i < 5; i++) nova.addServer({ flavorId: '2' });
    const a = await auditQuota(clientFor(nova), { checkGhosts: false });
    expect(a.pages).toBe(3);
    expect(a.servers).toHaveLength(5);
    expect(a.resources.cores).toMatchObject({ counted: 10, reportedBefore: 10, drift: 0 });
    expect(a.verdict).toBe('consistent');
  });

  it('uses the flavor embedded in the server from microversion 2.47: no GET /flavors', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '3' });
    nova.addServer({ flavorId: '3' });
    const a = await auditQuota(clientFor(nova, { microversion: '2.47' }), { checkGhosts: false });
    expect(a.resources.cores.counted).toBe(8);
    expect(a.resources.ramMiB.counted).toBe(8192);
    expect(nova.requestsTo('GET', /^\/flavors/)).toHaveLength(0);
    expect(a.servers.map((s) => [s.cores, s.ramMiB])).toEqual([
      [4, 4096],
      [4, 4096],
    ]);
  });

  it('over-reported: phantom usage with no servers at all', async () => {
    const nova = await startNova();
    nova.setUsageDrift({ cores: 8, instances: 2, ram: 4096 });
    const a = await auditQuota(clientFor(nova));
    expect(a.verdict).toBe('over-reported');
    expect(a.stable).toBe(true);
    expect(a.servers).toEqual([]);
    expect(a.resources.cores).toMatchObject({ reportedBefore: 8, counted: 0, reportedAfter: 8, drift: 8, verdict: 'over-reported' });
    expect(a.resources.ramMiB).toMatchObject({ drift: 4096, verdict: 'over-reported' });
    expect(a.resources.instances).toMatchObject({ drift: 2, verdict: 'over-reported' });
    expect(a.summary).toBe(
      'Nova reports 8 cores, 4096 MiB RAM and 2 instances more than the 0 listed servers hold ' +
        '(8 cores reported, 0 counted; 4096 MiB RAM reported, 0 counted; 2 instances reported, 0 counted): ' +
        'that quota is held by nothing the listing shows, and blocks creates until the usage is corrected. ' +
        'An operator must act: stale-usage.',
    );
    expect(a.needsOperator).toBe(true);
  });

  it('under-reported: Nova counts less than the listed servers hold', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '2' });
    nova.addServer({ flavorId: '2' });
    nova.setUsageDrift({ cores: -2, instances: -1, ram: -2048 });
    const a = await auditQuota(clientFor(nova));
    expect(a.verdict).toBe('under-reported');
    expect(a.resources.cores).toMatchObject({ reportedBefore: 2, counted: 4, reportedAfter: 2, drift: -2, verdict: 'under-reported' });
    expect(a.resources.ramMiB).toMatchObject({ reportedBefore: 2048, counted: 4096, drift: -2048 });
    expect(a.resources.instances).toMatchObject({ reportedBefore: 1, counted: 2, drift: -1 });
    expect(a.summary).toMatch(/^Nova reports 2 cores, 2048 MiB RAM and 1 instance less than the 2 listed servers hold/);
  });

  it('only one resource drifting: the others stay consistent', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.setUsageDrift({ cores: 3 });
    const a = await auditQuota(clientFor(nova));
    expect(a.verdict).toBe('over-reported');
    expect([a.resources.cores.verdict, a.resources.ramMiB.verdict, a.resources.instances.verdict]).toEqual(['over-reported', 'consistent', 'consistent']);
    expect(a.resources.cores.drift).toBe(3);
  });

  it('unstable: a server is deleted while the listing is under way, so the verdict is inconclusive and drift null', async () => {
    const nova = await startNova();
    const keep = nova.addServer({ flavorId: '2' }).id;
    const gone = nova.addServer({ flavorId: '2' }).id;
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const audit = auditQuota(clientFor(nova));
    await whenListing(nova);
    nova.destroyServer(gone);
    const a = await audit;
    expect(a.stable).toBe(false);
    expect(a.verdict).toBe('inconclusive');
    expect(a.resources.cores).toMatchObject({ reportedBefore: 4, counted: 2, reportedAfter: 2, drift: null, verdict: 'inconclusive' });
    expect(a.resources.instances).toMatchObject({ reportedBefore: 2, counted: 1, reportedAfter: 1, drift: null });
    expect(a.servers.map((s) => s.id)).toEqual([keep]);
    expect(a.summary).toBe(
      'Reported usage changed while the servers were listed (cores 4 → 2, ramMiB 4096 → 2048, instances 2 → 1): ' +
        'servers were created or deleted during the audit, so the count cannot be compared; run it again when the fleet is quiet.',
    );
  });

  it('unstable: drift that appears between the two readings is not taken for drift', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 30 });
    const audit = auditQuota(clientFor(nova), { checkGhosts: false });
    await whenListing(nova);
    nova.setUsageDrift({ cores: 6 });
    const a = await audit;
    expect(a.stable).toBe(false);
    expect(a.verdict).toBe('inconclusive');
    expect(a.resources.cores).toMatchObject({ reportedBefore: 1, counted: 1, reportedAfter: 7, drift: null });
    // the resources that did not change are still judged
    expect(a.resources.ramMiB).toMatchObject({ drift: 0, verdict: 'consistent' });
  });

  it('ghosts: a listed server whose own GET answers 404 is reported with its share of the count', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ok', flavorId: '1' });
    const ghost = nova.addServer({ name: 'phantom', flavorId: '3', createdMs: T0 }).id;
    nova.makeGhost(ghost);
    const a = await auditQuota(clientFor(nova), { now });
    expect(a.ghosts).toHaveLength(1);
    expect(a.ghosts[0]).toMatchObject({ id: ghost, name: 'phantom', status: 'ACTIVE', cores: 4, ramMiB: 4096, ageMs: 90_000 });
    expect(a.ghosts[0]!.requestId).toMatch(/^req-/);
    expect(a.resources.cores).toMatchObject({ counted: 5, countedInGhosts: 4, reportedBefore: 5 });
    expect(a.verdict).toBe('consistent');
    expect(a.summary).toBe(
      `Reported usage matches the 2 listed servers: 5 cores, 4608 MiB RAM and 2 instances. 1 listed server answers 404 on its own GET (ghosts). An operator must act: orphan-mapping (${ghost}).`,
    );
    expect(a.needsOperator).toBe(true);
  });

  it('checkGhosts: false sends no per-server GET', async () => {
    const nova = await startNova();
    const id = nova.addServer().id;
    nova.makeGhost(id);
    const a = await auditQuota(clientFor(nova), { checkGhosts: false });
    expect(a.ghostsChecked).toBe(false);
    expect(a.ghosts).toEqual([]);
    expect(nova.requestsTo('GET', `/servers/${id}`)).toHaveLength(0);
  });

  it('ghost checks run at bounded concurrency', async () => {
    const nova = await startNova();
    for (let i = 0; i < 9; i++) nova.addServer();
    nova.inject({ method: 'GET', path: /^\/servers\/[0-9a-f-]{36}$/, delayMs: 15, times: Infinity });
    const client = clientFor(nova);
    let inFlight = 0;
    let peak = 0;
    const original = client.getServer.bind(client);
    (client as { getServer: NovaClient['getServer'] }).getServer = async (id, opts) => {
      peak = Math.max(peak, ++inFlight);
      try {
        return await original(id, opts);
      } finally {
        inFlight--;
      }
    };
    const a = await auditQuota(client, { ghostCheckConcurrency: 3 });
    expect(peak).toBe(3);
    expect(a.ghosts).toEqual([]);
    expect(nova.requestsTo('GET', /^\/servers\/[0-9a-f-]{36}$/)).toHaveLength(9);
  });

  it('suspects: not ACTIVE or ERROR, or task_state set, with their ages, oldest first', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'fine', status: 'ACTIVE', createdMs: T0 });
    nova.addServer({ name: 'broken', status: 'ERROR', faultMessage: 'boom', createdMs: T0 });
    const build = nova.addServer({ name: 'building', status: 'BUILD', taskState: 'spawning', createdMs: T0 + 60_000 }).id;
    const deleting = nova.addServer({ name: 'stuck', status: 'ACTIVE', taskState: 'deleting', createdMs: T0 - 3_600_000 }).id;
    const off = nova.addServer({ name: 'off', status: 'SHUTOFF', createdMs: T0 }).id;
    const a = await auditQuota(clientFor(nova), { now, checkGhosts: false });
    expect(a.byStatus).toEqual({ ACTIVE: 2, BUILD: 1, ERROR: 1, SHUTOFF: 1 });
    expect(a.suspects.map((s) => [s.id, s.ageMs, s.reasons])).toEqual([
      [deleting, 3_690_000, ['task_state deleting']],
      [off, 90_000, ['status SHUTOFF']],
      [build, 30_000, ['status BUILD', 'task_state spawning']],
    ]);
    expect(a.suspects.every((s) => s.counted)).toBe(true);
    // ERROR counts, as in Nova: 5 servers of flavor 1
    expect(a.resources.cores).toMatchObject({ counted: 5, countedInBuild: 1, reportedBefore: 5, drift: 0 });
    expect(a.verdict).toBe('consistent');
  });

  it('BUILD servers Nova does not count yet are consistent, and said so', async () => {
    const nova = await startNova();
    nova.countBuildInUsage(false);
    nova.addServer({ flavorId: '1' });
    nova.addServer({ flavorId: '2', status: 'BUILD', taskState: 'scheduling' });
    const a = await auditQuota(clientFor(nova), { checkGhosts: false });
    expect(a.resources.cores).toMatchObject({ reportedBefore: 1, counted: 3, countedInBuild: 2, drift: -2, verdict: 'consistent' });
    expect(a.verdict).toBe('consistent');
    expect(a.summary).toBe(
      'Reported usage matches the 2 listed servers: 1 core, 512 MiB RAM and 1 instance. ' +
        'Servers in BUILD hold 2 cores, 2048 MiB RAM and 1 instance that Nova does not count yet (normal until their instance rows exist).',
    );
  });

  it('a 403 on the quota-set detail is noted, not fatal, and not asked again', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const client = clientFor(nova, { token: `member:${nova.projectId}` });
    nova.inject({ method: 'GET', path: /^\/os-quota-sets\//, status: 403, body: { forbidden: { code: 403, message: 'Policy does not allow it.' } }, times: Infinity });
    const a = await auditQuota(client, { checkGhosts: false });
    expect(a.verdict).toBe('consistent');
    expect(a.readings.quotaSetBefore).toBeUndefined();
    expect(a.notes).toEqual(['quota-set detail not readable (403): Policy does not allow it.']);
    expect(nova.requestsTo('GET', /^\/os-quota-sets\//)).toHaveLength(1);
  });

  it('a 403 on the second quota-set read only is noted and does not make the readings unstable', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.inject({ method: 'GET', path: '/servers/detail', delayMs: 20 });
    const audit = auditQuota(clientFor(nova), { checkGhosts: false });
    await whenListing(nova);
    nova.inject({ method: 'GET', path: /^\/os-quota-sets\//, status: 403 });
    const a = await audit;
    expect(a.stable).toBe(true);
    expect(a.verdict).toBe('consistent');
    expect(a.readings.quotaSetBefore?.used).toEqual({ cores: 1, ramMiB: 512, instances: 1 });
    expect(a.readings.quotaSetAfter).toBeUndefined();
    expect(a.notes).toHaveLength(1);
    expect(a.notes[0]).toMatch(/^quota-set detail not readable \(403\): /);
  });

  it('an unreadable flavor leaves cores and RAM inconclusive but still judges instances', async () => {
    const nova = await startNova({ maxMicroversion: '2.60' });
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.addServer({ flavorId: '1' });
    nova.setUsageDrift({ instances: 1 });
    nova.inject({ method: 'GET', path: '/flavors/2', status: 404, times: Infinity });
    // below 2.47 for flavors by GET: a Nova without 2.69, so the listing falls back to 2.1
    const a = await auditQuota(clientFor(nova, { microversion: '2.1' }), { checkGhosts: false });
    expect(a.uncounted).toEqual([{ serverId: id, reason: expect.stringMatching(/^flavor 2 could not be read: /) }]);
    expect(a.resources.cores).toMatchObject({ counted: 1, drift: null, verdict: 'inconclusive' });
    expect(a.resources.instances).toMatchObject({ counted: 2, reportedBefore: 3, drift: 1, verdict: 'over-reported' });
    expect(a.verdict).toBe('over-reported');
  });

  it('bad options are refused before any request', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    await expect(auditQuota(client, { ghostCheckConcurrency: 0 })).rejects.toThrow(ValidationError);
    await expect(auditQuota(client, { pageSize: 1.5 })).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('a /limits failure is fatal (the audit cannot compare without it)', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', status: 500, times: Infinity });
    const err = await auditQuota(clientFor(nova, { retry: { retries: 1, minDelayMs: 1, maxDelayMs: 2 } })).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ServerError');
    expect((err as { status: number }).status).toBe(500);
  });
});

describe('Nova counting rules', () => {
  // A plain listing shows DELETED only while the row is not destroyed, and legacy counting counts that
  // row until then (issue 14: a stuck DELETED record held quota the audit said nothing held).
  it('SOFT_DELETED does not count; a listed DELETED record, ERROR, BUILD, SHUTOFF do', () => {
    const s = (status: string, vm?: string): { id: string; status: string; 'OS-EXT-STS:vm_state'?: string } => ({ id: 'x', status, ...(vm ? { 'OS-EXT-STS:vm_state': vm } : {}) });
    expect(['ACTIVE', 'ERROR', 'BUILD', 'SHUTOFF', 'SOFT_DELETED', 'DELETED', 'deleted'].map((st) => countsTowardUsage(s(st)))).toEqual([
      true,
      true,
      true,
      true,
      false,
      true,
      true,
    ]);
    expect(countsTowardUsage(s('UNKNOWN', 'soft-delete'))).toBe(false);
  });

  it('suspect reasons', () => {
    expect(suspectReasons({ id: 'a', status: 'ACTIVE', 'OS-EXT-STS:task_state': null })).toEqual([]);
    expect(suspectReasons({ id: 'a', status: 'ERROR', 'OS-EXT-STS:task_state': '' })).toEqual([]);
    expect(suspectReasons({ id: 'a', status: 'ERROR', 'OS-EXT-STS:task_state': 'deleting' })).toEqual(['task_state deleting']);
    expect(suspectReasons({ id: 'a' })).toEqual(['status unknown']);
  });
});

describe('formatAudit: the first line', () => {
  it('says "1 server listed" for one server and "2 servers listed" for two (it said "1 servers")', async () => {
    const { formatAudit } = await import('../../src/audit/format.js');
    const nova = await startNova();
    nova.addServer({ name: 'ci-1' });
    expect(formatAudit(await auditQuota(clientFor(nova)))).toMatch(/^Quota audit: 1 server listed \(1 page\)/);
    nova.addServer({ name: 'ci-2' });
    expect(formatAudit(await auditQuota(clientFor(nova)))).toMatch(/^Quota audit: 2 servers listed \(1 page\)/);
  });
});
