/**
 * `GET /limits` and `GET /os-quota-sets/{project}/detail` of a real Nova 26.2 at several microversions:
 * which keys come back (Nova drops network keys at 2.36, maxImageMeta at 2.39, personality keys at
 * 2.57), how the library parses them (-1 becomes Infinity), and how usage moves with a server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS_2_57, NETWORK_LIMITS, NETWORK_QUOTAS, PERSONALITY_LIMITS, PERSONALITY_QUOTAS, QUOTA_2_57 } from './support/novaFacts.js';
import { createActiveServer, memberClient, project, waitForGone } from './support/realNova.js';

const p = project('limits');

beforeAll(() => p.cleanup());
afterAll(() => p.cleanup());

const sorted = (keys: string[]): string[] => [...keys].sort();

describe('GET /limits keys by microversion', () => {
  it.each([
    ['2.1', [...LIMITS_2_57, ...NETWORK_LIMITS, ...PERSONALITY_LIMITS, 'maxImageMeta']],
    ['2.35', [...LIMITS_2_57, ...NETWORK_LIMITS, ...PERSONALITY_LIMITS, 'maxImageMeta']],
    ['2.36', [...LIMITS_2_57, ...PERSONALITY_LIMITS, 'maxImageMeta']],
    ['2.38', [...LIMITS_2_57, ...PERSONALITY_LIMITS, 'maxImageMeta']],
    ['2.39', [...LIMITS_2_57, ...PERSONALITY_LIMITS]],
    ['2.56', [...LIMITS_2_57, ...PERSONALITY_LIMITS]],
    ['2.57', LIMITS_2_57],
    ['2.79', LIMITS_2_57],
    ['2.93', LIMITS_2_57],
  ])('at %s', async (microversion, keys) => {
    const { absolute, requestId } = await memberClient(p.nova, microversion).getLimits();
    expect(Object.keys(absolute).sort()).toEqual(sorted(keys));
    expect(requestId).toMatch(/^req-/);
  });

  it('parses the default quota; -1 (unlimited) becomes Infinity', async () => {
    const { absolute } = await memberClient(p.nova, '2.1').getLimits();
    expect(absolute).toEqual({
      maxTotalCores: 20,
      maxTotalInstances: 10,
      maxTotalRAMSize: 51200,
      maxTotalKeypairs: 100,
      maxServerMeta: 128,
      maxImageMeta: 128,
      maxPersonality: 5,
      maxPersonalitySize: 10240,
      maxServerGroups: 10,
      maxServerGroupMembers: 10,
      maxTotalFloatingIps: Infinity,
      maxSecurityGroups: Infinity,
      maxSecurityGroupRules: Infinity,
      totalCoresUsed: 0,
      totalInstancesUsed: 0,
      totalRAMUsed: 0,
      totalFloatingIpsUsed: 0,
      totalSecurityGroupsUsed: 0,
      totalServerGroupsUsed: 0,
    });
  });

  it('an unlimited cores quota (-1) is Infinity at 2.79 too', async () => {
    await p.setQuota({ cores: -1 });
    try {
      const { absolute } = await p.member.getLimits();
      expect(absolute.maxTotalCores).toBe(Infinity);
      expect((await p.member.getQuotaSetDetail()).cores).toEqual({ in_use: 0, limit: Infinity, reserved: 0 });
    } finally {
      await p.resetQuota();
    }
  });
});

describe('GET /os-quota-sets/{project}/detail keys by microversion', () => {
  it.each([
    ['2.1', [...QUOTA_2_57, ...NETWORK_QUOTAS, ...PERSONALITY_QUOTAS]],
    ['2.35', [...QUOTA_2_57, ...NETWORK_QUOTAS, ...PERSONALITY_QUOTAS]],
    ['2.36', [...QUOTA_2_57, ...PERSONALITY_QUOTAS]],
    ['2.56', [...QUOTA_2_57, ...PERSONALITY_QUOTAS]],
    ['2.57', QUOTA_2_57],
    ['2.79', QUOTA_2_57],
  ])('at %s', async (microversion, keys) => {
    const detail = await memberClient(p.nova, microversion).getQuotaSetDetail(p.nova.project);
    expect(Object.keys(detail).sort()).toEqual(sorted(keys));
    expect(detail.id).toBe(p.nova.project);
  });

  it('parses every resource as {in_use, limit, reserved}; -1 becomes Infinity', async () => {
    const detail = await memberClient(p.nova, '2.1').getQuotaSetDetail(p.nova.project);
    expect(detail.cores).toEqual({ in_use: 0, limit: 20, reserved: 0 });
    expect(detail.instances).toEqual({ in_use: 0, limit: 10, reserved: 0 });
    expect(detail.ram).toEqual({ in_use: 0, limit: 51200, reserved: 0 });
    expect(detail['floating_ips']).toEqual({ in_use: 0, limit: Infinity, reserved: 0 });
    expect(detail['injected_files']).toEqual({ in_use: 0, limit: 5, reserved: 0 });
  });
});

describe('usage in /limits and quota detail follows a server', () => {
  it('counts an ACTIVE 2-vCPU server at 2.1 and 2.79 alike, and drops it at the 404', async () => {
    const server = await createActiveServer(p, 'usage', p.nova.flavors.vcpus2);

    for (const microversion of ['2.1', '2.79']) {
      const client = memberClient(p.nova, microversion);
      const { absolute } = await client.getLimits();
      expect([absolute.totalCoresUsed, absolute.totalInstancesUsed, absolute.totalRAMUsed]).toEqual([2, 1, 2048]);
      const detail = await client.getQuotaSetDetail(p.nova.project);
      expect([detail.cores, detail.instances, detail.ram]).toEqual([
        { in_use: 2, limit: 20, reserved: 0 },
        { in_use: 1, limit: 10, reserved: 0 },
        { in_use: 2048, limit: 51200, reserved: 0 },
      ]);
    }

    await p.member.requestDelete(server.id);
    await waitForGone(p.member, server.id);

    const { absolute } = await p.member.getLimits();
    expect([absolute.totalCoresUsed, absolute.totalInstancesUsed, absolute.totalRAMUsed]).toEqual([0, 0, 0]);
    const detail = await p.member.getQuotaSetDetail(p.nova.project);
    expect(detail.cores?.in_use).toBe(0);
  });

  it('shows a lowered quota in both', async () => {
    await p.setQuota({ cores: 3, instances: 2, ram: 4096 });
    try {
      const { absolute } = await p.member.getLimits();
      expect([absolute.maxTotalCores, absolute.maxTotalInstances, absolute.maxTotalRAMSize]).toEqual([3, 2, 4096]);
      const detail = await p.member.getQuotaSetDetail(p.nova.project);
      expect([detail.cores?.limit, detail.instances?.limit, detail.ram?.limit]).toEqual([3, 2, 4096]);
    } finally {
      await p.resetQuota();
    }
    expect((await p.member.getLimits()).absolute.maxTotalCores).toBe(20);
  });
});
