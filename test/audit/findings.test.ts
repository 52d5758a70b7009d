/**
 * Each cause of drift made on FakeNova (`nova.causes`) and the finding the audit names for it: kind,
 * servers, what they hold under the counting model, and the remedy.
 */
import { describe, expect, it } from 'vitest';
import { auditQuota, type NovaClient } from '../../src/index.js';
import type { Finding } from '../../src/audit/index.js';
import { clientFor, startNova } from '../helpers.js';

const kinds = (fs: Finding[]): string[] => fs.map((f) => f.kind);
const find = (fs: Finding[], kind: string): Finding => {
  const f = fs.find((x) => x.kind === kind);
  if (!f) throw new Error(`no ${kind} finding in ${kinds(fs).join(', ')}`);
  return f;
};
const audit = (client: NovaClient, o: Parameters<typeof auditQuota>[1] = {}): ReturnType<typeof auditQuota> => auditQuota(client, o);

describe('audit findings (FakeNova causes)', () => {
  it('orphan-mapping: listed and counted, its GET answers 404; an operator must fix the mapping', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.causes.breakMapping(id);
    const a = await audit(clientFor(nova));
    const f = find(a.findings, 'orphan-mapping');
    expect(f).toMatchObject({ serverIds: [id], transient: false, holds: { cores: 2, ramMiB: 2048, instances: 1 } });
    expect(f.operatorCan).toMatch(/nova-manage cell_v2 verify_instance/);
    expect(f.projectCan).toMatch(/DELETE answers 404/);
  });

  it('stuck-deleting: a DELETED record past stuckAfterMs still holds its quota (legacy), and the verdict is consistent', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '3' }).id;
    nova.causes.stickDeleting(id);
    const later = Date.now() + 700_000;
    const a = await audit(clientFor(nova), { now: () => later });
    expect(a.resources.cores).toMatchObject({ reportedBefore: 4, counted: 4, verdict: 'consistent' });
    expect(a.verdict).toBe('consistent');
    const f = find(a.findings, 'stuck-deleting');
    expect(f).toMatchObject({ serverIds: [id], transient: false, holds: { cores: 4, ramMiB: 4096, instances: 1 } });
    expect(f.projectCan).toMatch(/force-delete/);
    expect(f.operatorCan).toMatch(/archive_deleted_rows/);
  });

  it('delete-in-flight: the same record younger than stuckAfterMs is transient', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '1' }).id;
    nova.causes.stickDeleting(id);
    const a = await audit(clientFor(nova), { stuckAfterMs: 60_000 });
    expect(find(a.findings, 'delete-in-flight')).toMatchObject({ serverIds: [id], transient: true });
    expect(kinds(a.findings)).not.toContain('stuck-deleting');
  });

  it('never-scheduled under placement counting: an instance, no cores or RAM; the model is inferred', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.causes.addNeverScheduled({ flavorId: '3' });
    nova.causes.countUsageFromPlacement(true);
    const a = await audit(clientFor(nova));
    expect(a.countingModel).toMatchObject({ model: 'placement', basis: 'inferred' });
    expect(a.resources.cores).toMatchObject({ reportedBefore: 1, counted: 5, verdict: 'consistent' });
    expect(find(a.findings, 'never-scheduled')).toMatchObject({ serverIds: [id], holds: { cores: 0, ramMiB: 0, instances: 1 } });
    expect(a.servers.find((s) => s.id === id)?.why).toMatch(/never scheduled/);
  });

  it('never-scheduled under legacy counting: its cell0 row counts with its flavor; legacy is inferred', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.causes.addNeverScheduled({ flavorId: '3' });
    const a = await audit(clientFor(nova));
    expect(a.countingModel).toMatchObject({ model: 'legacy', basis: 'inferred', misfits: { legacy: 0, placement: 2 } });
    expect(find(a.findings, 'never-scheduled')).toMatchObject({ serverIds: [id], holds: { cores: 4, ramMiB: 4096, instances: 1 } });
    expect(find(a.findings, 'never-scheduled').projectCan).toMatch(/^delete it/);
  });

  it('shelved: SHELVED_OFFLOADED holds only an instance under placement; unshelve or delete', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.addServer({ flavorId: '1' });
    nova.causes.shelveOffload(id);
    nova.causes.countUsageFromPlacement(true);
    const a = await audit(clientFor(nova));
    expect(a.countingModel.model).toBe('placement');
    expect(a.resources.cores).toMatchObject({ reportedBefore: 1 });
    expect(find(a.findings, 'shelved')).toMatchObject({ serverIds: [id], holds: { cores: 0, ramMiB: 0, instances: 1 }, projectCan: 'unshelve or delete it' });
  });

  it('resize-double: VERIFY_RESIZE holds the old and the new flavor under placement; told the model, no stale usage', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '1' }).id;
    nova.causes.resizePending(id, '2');
    nova.causes.countUsageFromPlacement(true);
    const a = await audit(clientFor(nova), { countingModel: 'placement' });
    expect(a.resources.cores).toMatchObject({ reportedBefore: 3, counted: 2 });
    expect(a.countingModel).toMatchObject({ model: 'placement', basis: 'given' });
    expect(find(a.findings, 'resize-double')).toMatchObject({ serverIds: [id], holds: { cores: 2, ramMiB: 2048, instances: 1 } });
    expect(kinds(a.findings)).not.toContain('stale-usage');
    // the old flavor's share is what placement counting holds, not over-reporting
    expect(a.resources.cores).toMatchObject({ drift: 1, verdict: 'consistent' });
    expect(a.verdict).toBe('consistent');
    expect(a.summary).toMatch(/Nova counts 1 core and 512 MiB RAM more than the listed flavors, as placement counting does \(see the findings\)\.$/);
  });

  it('the same resize read as legacy counting is over-reported: the model decides what is explained', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '1' }).id;
    nova.causes.resizePending(id, '2');
    nova.causes.countUsageFromPlacement(true);
    const a = await audit(clientFor(nova), { countingModel: 'legacy' });
    expect(a.resources.cores).toMatchObject({ drift: 1, verdict: 'over-reported' });
    expect(find(a.findings, 'stale-usage').holds).toEqual({ cores: 1, ramMiB: 512, instances: 0 });
  });

  it('down-cell: a stub at 2.69 makes the audit partial; legacy counting leaves the server out', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.causes.downCell(id);
    const a = await audit(clientFor(nova, { microversion: '2.1' }));
    expect(a.partial).toBe(true);
    expect(a.unreachable.map((s) => s.id)).toEqual([id]);
    expect(find(a.findings, 'down-cell')).toMatchObject({ serverIds: [id], transient: false });
    expect(nova.requestsTo('GET', `/servers/${id}`)).toHaveLength(0);
    expect(a.resources.instances).toMatchObject({ reportedBefore: 1, counted: 2, verdict: 'consistent' });
  });

  it('down-cell on a Nova without 2.69: the server is missing from the listing and the audit says it cannot know', async () => {
    const nova = await startNova({ maxMicroversion: '2.60' });
    nova.addServer({ flavorId: '1' });
    nova.causes.downCell(nova.addServer({ flavorId: '2' }).id);
    const a = await audit(clientFor(nova, { microversion: '2.47' }));
    expect(a.servers).toHaveLength(1);
    expect(a.partial).toBe(true);
    expect(find(a.findings, 'down-cell')).toMatchObject({ serverIds: [], evidence: expect.stringMatching(/does not support microversion 2.69/) });
  });

  it('stale-usage: usage with no server behind it (the second field report: no servers, 8 cores used)', async () => {
    const nova = await startNova();
    nova.causes.staleUsage({ cores: 8, ram: 4096, instances: 2 });
    const a = await audit(clientFor(nova));
    expect(a.verdict).toBe('over-reported');
    expect(find(a.findings, 'stale-usage')).toMatchObject({ serverIds: [], holds: { cores: 8, ramMiB: 4096, instances: 2 } });
    expect(find(a.findings, 'stale-usage').operatorCan).toMatch(/archive_deleted_rows/);
  });

  it('a leaked allocation under placement counting shows as cores/RAM-only stale usage with placement remedies', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.causes.countUsageFromPlacement(true);
    nova.causes.leakAllocation({ cores: 2, ram: 2048 });
    const a = await audit(clientFor(nova), { countingModel: 'placement' });
    const f = find(a.findings, 'stale-usage');
    expect(f.holds).toEqual({ cores: 2, ramMiB: 2048, instances: 0 });
    expect(f.operatorCan).toMatch(/nova-manage placement audit --delete/);
    expect(a.placementUsage).toMatch(/^not read: no readPlacementUsages given/);
    expect(kinds(a.findings)).not.toContain('leaked-allocation');
  });

  it('leaked-allocation: placement usages (when readable) above what the servers hold; an operator audits placement', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    nova.causes.leakAllocation({ cores: 2, ram: 2048 });
    const seen: string[] = [];
    const a = await audit(clientFor(nova), {
      readPlacementUsages: (projectId) => {
        seen.push(projectId);
        return Promise.resolve(nova.causes.placementUsages());
      },
    });
    expect(seen).toEqual([nova.projectId]);
    expect(a.placementUsage).toBe('read: 3 VCPU, 2560 MEMORY_MB allocated');
    const f = find(a.findings, 'leaked-allocation');
    expect(f).toMatchObject({ serverIds: [], transient: false, holds: { cores: 2, ramMiB: 2048, instances: 0 } });
    expect(f.operatorCan).toMatch(/nova-manage placement audit --delete/);
    // legacy counting (the fake's default) does not count the leak: Nova's numbers are right
    expect(a.verdict).toBe('consistent');
  });

  it('missing allocations point to heal_allocations; an unreadable placement is a reason, not a failure', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '2' });
    nova.causes.leakAllocation({ cores: -2, ram: -2048 });
    const a = await audit(clientFor(nova), { readPlacementUsages: () => Promise.resolve(nova.causes.placementUsages()) });
    expect(find(a.findings, 'leaked-allocation')).toMatchObject({ holds: { cores: -2, ramMiB: -2048, instances: 0 }, operatorCan: '`nova-manage placement heal_allocations`' });
    const b = await audit(clientFor(nova), { readPlacementUsages: () => Promise.reject(new Error('403 Forbidden')) });
    expect(b.placementUsage).toBe('not read: 403 Forbidden');
    expect(kinds(b.findings)).not.toContain('leaked-allocation');
  });

  it('build-in-flight: transient; foreign-usage: servers the caller does not own', async () => {
    const nova = await startNova();
    const build = nova.addServer({ flavorId: '1', status: 'BUILD', taskState: 'spawning' }).id;
    const other = nova.addServer({ flavorId: '2', name: 'someone-else' }).id;
    const a = await audit(clientFor(nova), { ownedBy: (s) => s.name !== 'someone-else' });
    expect(find(a.findings, 'build-in-flight')).toMatchObject({ serverIds: [build], transient: true });
    expect(find(a.findings, 'foreign-usage')).toMatchObject({ serverIds: [other], holds: { cores: 2, ramMiB: 2048, instances: 1 } });
  });

  it('a quiet, consistent project has no findings', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const a = await audit(clientFor(nova));
    expect(a.findings).toEqual([]);
    expect(a.countingModel.basis).toBe('ambiguous');
  });
});

describe('FakeNova causes: what Nova shows and counts', () => {
  it('downCell: a stub in listings from 2.69 (brief: id, status, links), left out below; GET 500; legacy counting leaves it out, placement keeps it', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.causes.downCell(id);
    const brief = await clientFor(nova, { microversion: '2.69' }).listServers({}, { brief: true });
    expect(brief).toEqual([{ id, status: 'UNKNOWN', links: expect.any(Array) }]);
    const detail = await clientFor(nova, { microversion: '2.69' }).listServers();
    expect(Object.keys(detail[0]!).sort()).toEqual(['created', 'id', 'links', 'status', 'tenant_id']);
    expect(await clientFor(nova, { microversion: '2.68' }).listServers()).toEqual([]);
    const get = await clientFor(nova, { retry: false }).getServer(id).catch((e: unknown) => e);
    expect((get as { status: number }).status).toBe(500);
    expect(nova.reportedUsage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
    nova.causes.countUsageFromPlacement(true);
    expect(nova.reportedUsage()).toEqual({ cores: 2, instances: 1, ramMiB: 2048, ram: 2048 });
  });

  it('the counting model switch: each cause held as legacy counting and placement counting hold it', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' }); // 1 / 512
    nova.causes.addNeverScheduled({ flavorId: '2' }); // 2 / 2048 legacy only
    nova.causes.shelveOffload(nova.addServer({ flavorId: '3' }).id); // 4 / 4096 legacy only
    nova.causes.resizePending(nova.addServer({ flavorId: '1' }).id, '2'); // new 2 / 2048; + old 1 / 512 placement
    nova.causes.stickDeleting(nova.addServer({ flavorId: '1' }).id); // instance legacy only
    nova.causes.leakAllocation({ cores: 1, ram: 100 }); // placement only
    expect(nova.reportedUsage()).toEqual({ cores: 1 + 2 + 4 + 2 + 1, ramMiB: 512 + 2048 + 4096 + 2048 + 512, ram: 512 + 2048 + 4096 + 2048 + 512, instances: 5 });
    nova.causes.countUsageFromPlacement(true);
    expect(nova.reportedUsage()).toEqual({ cores: 1 + 2 + 1 + 1 + 1, ramMiB: 512 + 2048 + 512 + 512 + 100, ram: 512 + 2048 + 512 + 512 + 100, instances: 4 });
    expect(nova.causes.placementUsages()).toEqual({ VCPU: 6, MEMORY_MB: 3684 });
  });

  it('stickDeleting: GET shows DELETED and a DELETE changes nothing', async () => {
    const nova = await startNova();
    const id = nova.addServer({ flavorId: '1' }).id;
    nova.causes.stickDeleting(id);
    const client = clientFor(nova);
    expect((await client.getServer(id)).status).toBe('DELETED');
    await client.request({ method: 'DELETE', path: `/servers/${id}`, acceptStatus: [204, 404, 409] }).catch(() => undefined);
    expect(nova.getServerState(id)?.status).toBe('DELETED');
    expect(nova.usage()).toEqual({ cores: 1, instances: 1, ramMiB: 512, ram: 512 });
  });
});
