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

describe("FakeNova refuses create-body keys Nova's schema does not know (additionalProperties false)", () => {
  const post = (body: unknown, microversion = '2.79') => call(nova!, 'POST', '/servers', { microversion, body });
  const ok = { name: 'a', flavorRef: '1', networks: 'none' };

  it('an unknown key in server: 400 with the server dict and the key, byte for byte; nothing created', async () => {
    nova = await FakeNova.start();
    const res = await post({ server: { ...ok, bogus: 1 } });
    expect(res.status).toBe(400);
    expect(res.text).toBe(
      '{"badRequest": {"code": 400, "message": "Invalid input for field/attribute server. ' +
        "Value: {'name': 'a', 'flavorRef': '1', 'networks': 'none', 'bogus': 1}. Additional properties are not allowed ('bogus' was unexpected)\"}}",
    );
    expect(nova.usage().instances).toBe(0);
  });

  it('several unknown keys are named sorted, with "were"', async () => {
    nova = await FakeNova.start();
    const res = await post({ server: { ...ok, zz: 1, aa: 2 } });
    expect(res.json.badRequest.message).toMatch(/\. Additional properties are not allowed \('aa', 'zz' were unexpected\)$/);
  });

  it('a misspelled networks: 400 naming it before 2.37; from 2.37 the missing networks comes first, as in Nova', async () => {
    nova = await FakeNova.start();
    const old = await post({ server: { name: 'a', flavorRef: '1', network: [] } }, '2.1');
    expect(old.status).toBe(400);
    expect(old.json.badRequest.message).toBe(
      "Invalid input for field/attribute server. Value: {'name': 'a', 'flavorRef': '1', 'network': []}. Additional properties are not allowed ('network' was unexpected)",
    );
    const recent = await post({ server: { name: 'a', flavorRef: '1', network: 'auto' } });
    expect(recent.json.badRequest.message).toBe(
      "Invalid input for field/attribute server. Value: {'name': 'a', 'flavorRef': '1', 'network': 'auto'}. 'networks' is a required property",
    );
  });

  it('a wrong property type is named before a missing required one, as jsonschema orders them', async () => {
    nova = await FakeNova.start();
    const res = await post({ server: { name: 5 } });
    expect(res.json.badRequest.message).toBe("Invalid input for field/attribute name. Value: 5. 5 is not of type 'string'");
  });

  it('an unknown key beside server: 400 with the bare jsonschema message; the scheduler hints are allowed', async () => {
    nova = await FakeNova.start();
    const res = await post({ server: ok, bogus: 1 });
    expect(res.status).toBe(400);
    expect(res.text).toBe('{"badRequest": {"code": 400, "message": "Additional properties are not allowed (\'bogus\' was unexpected)"}}');
    // The server's own errors come first.
    expect((await post({ server: { ...ok, x: 1 }, bogus: 1 })).json.badRequest.message).toMatch(/\('x' was unexpected\)$/);
    expect((await post({ server: ok, 'os:scheduler_hints': { group: '00000000-0000-4000-8000-000000000000' } })).status).toBe(202);
    expect((await post({ server: ok, 'OS-SCH-HNT:scheduler_hints': {} })).status).toBe(202);
  });

  it('the keys follow the microversion: description from 2.19, tags 2.52, personality until 2.56, host 2.74, hostname 2.90', async () => {
    nova = await FakeNova.start({ maxTotalInstances: 100, maxTotalCores: 100, maxTotalRAMSize: 100_000 });
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      ['description', { description: 'd' }, '2.18', '2.19'],
      ['tags', { tags: ['t'] }, '2.51', '2.52'],
      ['trusted_image_certificates', { trusted_image_certificates: ['c'] }, '2.62', '2.63'],
      ['host', { host: 'h' }, '2.73', '2.74'],
      ['hypervisor_hostname', { hypervisor_hostname: 'h' }, '2.73', '2.74'],
      ['hostname', { hostname: 'h' }, '2.89', '2.90'],
    ];
    for (const [key, extra, before, from] of cases) {
      const networks = (v: string): unknown => (Number(v.split('.')[1]) >= 37 ? 'none' : []);
      const refused = await post({ server: { name: 'a', flavorRef: '1', networks: networks(before), ...extra } }, before);
      expect(refused.json.badRequest?.message, `${key} at ${before}`).toMatch(new RegExp(`\\('${key}' was unexpected\\)$`));
      expect((await post({ server: { name: 'a', flavorRef: '1', networks: networks(from), ...extra } }, from)).status, `${key} at ${from}`).toBe(202);
    }
    expect((await post({ server: { ...ok, personality: [] } }, '2.56')).status).toBe(202);
    expect((await post({ server: { ...ok, personality: [] } }, '2.57')).json.badRequest.message).toMatch(/\('personality' was unexpected\)$/);
  });

  it('every key nova-guard sends (name, flavorRef, imageRef, networks, metadata, key_name, user_data, min_count, max_count) is accepted', async () => {
    nova = await FakeNova.start();
    const res = await post({
      server: { name: 'a', flavorRef: '1', imageRef: 'img', networks: 'auto', metadata: { k: 'v' }, key_name: 'k', user_data: 'aGk=', min_count: 1, max_count: 1 },
    });
    expect(res.status, res.text).toBe(202);
  });
});
