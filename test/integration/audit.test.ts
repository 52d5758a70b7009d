/**
 * auditQuota against a real Nova 26.2 (legacy quota counting from the cell databases): on a quiet,
 * consistent project the usage Nova reports equals what the listed servers hold, at a recent
 * microversion and from a client at 2.1 (the audit lists at 2.69, where the flavor is embedded in the
 * server, so no `GET /flavors/{id}`), over several pages; ERROR servers (no valid host, in cell0; reset by an admin) count on both sides; a
 * server caught in BUILD is a suspect and the verdict stays consistent.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditQuota, formatAudit, type NovaClient, type QuotaAudit } from '../../src/index.js';
import { createActiveServer, createServer, memberClient, project, waitForGone, waitForServer } from './support/realNova.js';

const p = project('audit');
const LIMITS = { cores: 20, ramMiB: 51200, instances: 10 };

beforeAll(() => p.cleanup());
afterAll(() => p.cleanup());
beforeEach(() => p.cleanup());

/** Every resource: reported before = counted = reported after, drift 0. */
function expectConsistent(audit: QuotaAudit, counted: { cores: number; ramMiB: number; instances: number }, inBuild = { cores: 0, ramMiB: 0, instances: 0 }): void {
  expect(audit.verdict).toBe('consistent');
  expect(audit.stable).toBe(true);
  for (const r of ['cores', 'ramMiB', 'instances'] as const) {
    expect(audit.resources[r]).toEqual({
      reportedBefore: counted[r],
      counted: counted[r],
      countedInBuild: inBuild[r],
      countedInGhosts: 0,
      reportedAfter: counted[r],
      limit: LIMITS[r],
      drift: 0,
      verdict: 'consistent',
    });
  }
  expect(audit.ghosts).toEqual([]);
  expect(audit.ghostsChecked).toBe(true);
  expect(audit.uncounted).toEqual([]);
  expect(audit.notes).toEqual([]);
}

async function deleteAll(ids: string[]): Promise<void> {
  await Promise.all(ids.map((id) => p.member.deleteServer(id, { wait: true, intervalMs: 25, timeoutMs: 60_000 }).then(() => waitForGone(p.member, id))));
}

describe('auditQuota on a real Nova', () => {
  it('an empty project is consistent: nothing reported, nothing listed', async () => {
    const audit = await auditQuota(p.member);

    expectConsistent(audit, { cores: 0, ramMiB: 0, instances: 0 });
    expect(audit.servers).toEqual([]);
    expect(audit.byStatus).toEqual({});
    expect(audit.suspects).toEqual([]);
    expect(audit.summary).toBe('Reported usage matches the 0 listed servers: 0 cores, 0 MiB RAM and 0 instances.');
  });

  it('ACTIVE servers: counted equals reported, from /limits and the quota-set detail, before and after', async () => {
    const a = await createActiveServer(p, 'audit-1', p.nova.flavors.vcpus1);
    const b = await createActiveServer(p, 'audit-2', p.nova.flavors.vcpus2);

    const audit = await auditQuota(p.member);

    expectConsistent(audit, { cores: 3, ramMiB: 2560, instances: 2 });
    expect(audit.summary).toBe('Reported usage matches the 2 listed servers: 3 cores, 2560 MiB RAM and 2 instances.');
    expect(audit.byStatus).toEqual({ ACTIVE: 2 });
    expect(audit.suspects).toEqual([]);
    expect(audit.pages).toBe(1);
    expect(audit.servers.map((s) => [s.id, s.status, s.cores, s.ramMiB, s.counted]).sort()).toEqual(
      [
        [a.id, 'ACTIVE', 1, 512, true],
        [b.id, 'ACTIVE', 2, 2048, true],
      ].sort(),
    );
    for (const s of audit.servers) {
      expect(s.ageMs).toBeGreaterThanOrEqual(0);
      expect(s.ageMs).toBeLessThan(600_000);
    }
    for (const reading of [audit.readings.quotaSetBefore, audit.readings.quotaSetAfter]) {
      expect(reading).toEqual({ source: 'quota-set-detail', used: { cores: 3, ramMiB: 2560, instances: 2 }, limit: LIMITS });
    }
    expect(audit.readings.limitsBefore.requestId).toMatch(/^req-[0-9a-f-]{36}$/);
    const table = formatAudit(audit);
    expect(table).toMatch(/^cores +3 +3 +3 +20 +0 +consistent$/m);
    expect(table).toMatch(/^ramMiB +2560 +2560 +2560 +51200 +0 +consistent$/m);
  });

  it('a client at microversion 2.1 and one server a page: listed at 2.69 (flavors embedded), the same counts', async () => {
    await createActiveServer(p, 'audit-mv-1', p.nova.flavors.vcpus1);
    await createActiveServer(p, 'audit-mv-2', p.nova.flavors.vcpus2);
    const old: NovaClient = memberClient(p.nova, '2.1');
    const flavorGets = (): number => old.stats.byMethod['GET'] ?? 0;

    const before = flavorGets();
    const audit = await auditQuota(old, { pageSize: 1, checkGhosts: false });

    expect(audit.verdict).toBe('consistent');
    expect(audit.stable).toBe(true);
    expect([audit.resources.cores.counted, audit.resources.ramMiB.counted, audit.resources.instances.counted]).toEqual([3, 2560, 2]);
    expect(audit.resources.cores.drift).toBe(0);
    expect(audit.ghostsChecked).toBe(false);
    // Two full pages of one server each, then the empty page after the last `next` link.
    expect(audit.pages).toBe(3);
    // limits + quota set (twice each), three listing pages; no flavor GET: the audit lists at 2.69 when
    // the client is below it (docs/audit.md, "What it reads"), and the flavor is embedded from 2.47.
    expect(flavorGets() - before).toBe(2 + 2 + 3);
  });

  it('ERROR servers (no valid host, in cell0; ACTIVE reset to error by an admin) count on both sides', async () => {
    const noHost = await createServer(p, 'audit-nvh', p.nova.flavors.noValidHost);
    expect((await waitForServer(p.member, noHost.id, (s) => s.status !== 'BUILD'))?.status).toBe('ERROR');
    const reset = await createActiveServer(p, 'audit-reset', p.nova.flavors.vcpus2);
    await p.admin.request({ method: 'POST', path: `/servers/${reset.id}/action`, body: { 'os-resetState': { state: 'error' } } });

    const audit = await auditQuota(p.member);

    expectConsistent(audit, { cores: 3, ramMiB: 2560, instances: 2 });
    expect(audit.byStatus).toEqual({ ERROR: 2 });
    expect(audit.suspects).toEqual([]);
    expect(audit.servers.every((s) => s.counted && s.vmState === 'error' && s.taskState === undefined)).toBe(true);
    await deleteAll([noHost.id, reset.id]);
  });

  it('a server caught in BUILD: a suspect, and the audit stays consistent', async () => {
    // BUILD lasts a fraction of a second on this stack: create and audit at once, a few times, until
    // an audit with stable readings lists the server still in BUILD.
    let caught: QuotaAudit | undefined;
    let server = '';
    for (let i = 0; i < 8 && !caught; i++) {
      server = (await createServer(p, `audit-build-${i}`, p.nova.flavors.vcpus2)).id;
      const audit = await auditQuota(p.member, { checkGhosts: false, readQuotaSetDetail: false });
      if (audit.stable && audit.byStatus['BUILD'] === 1) caught = audit;
      else await deleteAll([server]);
    }

    expect(caught, 'no stable audit caught the server in BUILD in 8 tries').toBeDefined();
    const audit = caught!;
    expect(audit.verdict).toBe('consistent');
    expect(audit.resources.cores.counted).toBe(2);
    expect(audit.resources.cores.countedInBuild).toBe(2);
    // Nova counts a BUILD server once its instance row exists (0 or 2 cores here): both are consistent.
    expect([0, 2]).toContain(audit.resources.cores.reportedBefore);
    expect(audit.suspects.map((s) => [s.id, s.status])).toEqual([[server, 'BUILD']]);
    expect(audit.suspects[0]!.reasons[0]).toBe('status BUILD');
    // The finding: transient, the server named, what it holds once placed (its flavor, or nothing yet).
    expect(audit.findings.map((f) => f.kind)).toEqual(['build-in-flight']);
    expect(audit.findings[0]).toMatchObject({ serverIds: [server], transient: true, projectCan: 'wait; a server in BUILD for long can be deleted' });
    await deleteAll([server]);
  });
});
