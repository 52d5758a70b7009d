/**
 * A flavor without a usable `vcpus` or `ram` is unknown in the audit, as it is in the guard: the
 * count of cores and RAM is incomplete (never 0), and a consistent project is never called
 * over-reported because of it.
 */
import { describe, expect, it } from 'vitest';
import { auditQuota } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

describe('auditQuota with a flavor whose vcpus or ram is unknown', () => {
  it.each([
    ['no vcpus and no ram', { id: '2', name: 'm1.small' }],
    ['vcpus "n/a"', { id: '2', name: 'm1.small', vcpus: 'n/a', ram: 2048 }],
    ['ram null', { id: '2', name: 'm1.small', vcpus: 2, ram: null }],
  ])('%s: cores and RAM are not counted as 0, the verdict is not over-reported, no stale usage is found', async (_, flavor) => {
    // Below 2.47 the flavor is read by GET /flavors/{id}: the proxy's answer lacks the numbers.
    const nova = await startNova({ maxMicroversion: '2.60' });
    const client = clientFor(nova, { microversion: '2.1' });
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.inject({ method: 'GET', path: '/flavors/2', status: 200, body: { flavor }, times: Infinity });
    const a = await auditQuota(client, { checkGhosts: false });
    // Nova reports the server's 2 cores, 2048 MiB and 1 instance: the project is consistent.
    expect(a.resources.cores.reportedBefore).toBe(2);
    expect(a.verdict).not.toBe('over-reported');
    expect(a.verdict).toBe('inconclusive');
    expect(a.resources.cores).toMatchObject({ verdict: 'inconclusive', drift: null });
    expect(a.resources.ramMiB).toMatchObject({ verdict: 'inconclusive', drift: null });
    expect(a.resources.instances).toMatchObject({ verdict: 'consistent', drift: 0 });
    expect(a.uncounted).toEqual([{ serverId: id, reason: expect.stringContaining('flavor 2 has no usable vcpus or ram') }]);
    expect(a.servers[0]).toMatchObject({ cores: undefined, ramMiB: undefined });
    expect(a.findings.map((f) => f.kind)).not.toContain('stale-usage');
    expect(a.summary).toContain('some flavors could not be read');
  });

  it('an embedded flavor (2.47+) without numbers is unknown too, with its own reason', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { microversion: '2.79' });
    const id = nova.addServer({ flavorId: '2' }).id;
    nova.inject({
      method: 'GET',
      path: '/servers/detail',
      status: 200,
      body: { servers: [{ id, name: 'x', status: 'ACTIVE', tenant_id: nova.projectId, created: new Date().toISOString(), updated: new Date().toISOString(), flavor: { original_name: 'm1.small' } }] },
      times: Infinity,
    });
    const a = await auditQuota(client, { checkGhosts: false });
    expect(a.verdict).not.toBe('over-reported');
    expect(a.resources.cores.verdict).toBe('inconclusive');
    expect(a.uncounted).toEqual([{ serverId: id, reason: 'its embedded flavor has no usable vcpus or ram' }]);
    expect(a.findings.map((f) => f.kind)).not.toContain('stale-usage');
  });
});
