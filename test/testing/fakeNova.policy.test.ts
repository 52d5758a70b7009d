// Fidelity fixes found by the real-Nova fidelity suite (Nova 26.2): each asserts what real Nova answered.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeNova } from '../../src/testing/index.js';
import { call } from './fakeNovaFetch.js';

let nova: FakeNova | undefined;
afterEach(async () => {
  await nova?.close();
  nova = undefined;
});

describe('FakeNova quota-set policy and fixed quotas, as real Nova 26.2 answers', () => {
  it('a member may not PUT or DELETE its own quota set (403, admin-only policy)', async () => {
    nova = await FakeNova.start();
    const put = await call(nova, 'PUT', '/os-quota-sets/demo', { token: 'ci-bot:demo', body: { quota_set: { cores: 5 } } });
    expect(put.status).toBe(403);
    expect(put.text).toBe('{"forbidden": {"code": 403, "message": "Policy doesn\'t allow os_compute_api:os-quota-sets:update to be performed."}}');
    const del = await call(nova, 'DELETE', '/os-quota-sets/demo', { token: 'ci-bot:demo' });
    expect(del.status).toBe(403);
    expect(del.json.forbidden.message).toBe("Policy doesn't allow os_compute_api:os-quota-sets:delete to be performed.");
    expect((await call(nova, 'GET', '/limits', { token: 'ci-bot:demo' })).json.limits.absolute.maxTotalCores).toBe(20);
    const admin = await call(nova, 'PUT', '/os-quota-sets/demo', { body: { quota_set: { cores: 5 } } });
    expect(admin.status).toBe(200);
  });

  it('network quotas are -1 below microversion 2.36', async () => {
    nova = await FakeNova.start();
    const abs = (await call(nova, 'GET', '/limits', { microversion: '2.1' })).json.limits.absolute;
    expect([abs.maxTotalFloatingIps, abs.maxSecurityGroups, abs.maxSecurityGroupRules]).toEqual([-1, -1, -1]);
    const qs = (await call(nova, 'GET', '/os-quota-sets/demo', { microversion: '2.1' })).json.quota_set;
    expect([qs.fixed_ips, qs.floating_ips, qs.security_groups, qs.security_group_rules]).toEqual([-1, -1, -1, -1]);
  });
});

describe('FakeNova create body validation per microversion, as Nova\'s schema', () => {
  it('networks "none" needs microversion 2.37; before it networks must be a list', async () => {
    nova = await FakeNova.start();
    const old = await call(nova, 'POST', '/servers', { microversion: '2.1', body: { server: { name: 'a', flavorRef: '1', networks: 'none' } } });
    expect(old.status).toBe(400);
    expect(old.json.badRequest.message).toBe("Invalid input for field/attribute networks. Value: none. 'none' is not of type 'array'");
    const list = await call(nova, 'POST', '/servers', { microversion: '2.1', body: { server: { name: 'b', flavorRef: '1', networks: [] } } });
    expect(list.status).toBe(202);
    const recent = await call(nova, 'POST', '/servers', { microversion: '2.37', body: { server: { name: 'c', flavorRef: '1', networks: 'none' } } });
    expect(recent.status).toBe(202);
  });
});
