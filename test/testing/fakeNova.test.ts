import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeNova } from '../../src/testing/index.js';
import { clientFor, startNova as start } from '../helpers.js';
import { FRONTS, until, via } from './fakeNovaFetch.js';

// On fake timers (requests still go over the socket or the adapter): a state that lasts a few ms,
// such as BUILD or deleting, is seen however busy the machine is.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('FakeNova start/close', () => {
  it('listens on 127.0.0.1 with /v2.1 endpoint and closes idempotently', async () => {
    const n = await start();
    expect(n.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(n.endpoint).toBe(n.url + '/v2.1');
    expect(n.projectId).toBe('demo');
    await n.close();
    await n.close();
    await expect(fetch(n.endpoint + '/limits')).rejects.toThrow();
  });

  it('rejects bad options before listening', async () => {
    await expect(FakeNova.start({ buildDelayMs: -1 })).rejects.toThrow(/buildDelayMs/);
    await expect(FakeNova.start({ maxTotalCores: -2 })).rejects.toThrow(/maxTotalCores/);
    await expect(FakeNova.start({ maxMicroversion: 'x' })).rejects.toThrow(/maxMicroversion/);
  });

  it('validateToken that is not a function says what it takes (it said only "must be a function"); a token string is never shown', async () => {
    const expected =
      "validateToken must be a function (token: string) => boolean returning true for a token Nova accepts (with FakeKeystone: (token) => keystone.isValid(token)), got ";
    await expect(FakeNova.start({ validateToken: true as never })).rejects.toThrow(expected + 'true');
    const e = await FakeNova.start({ validateToken: 'admin:Sekrit' as never }).catch((err: unknown) => err as Error);
    expect(e).toMatchObject({ name: 'ValidationError', message: expected + 'a string' });
    expect((e as Error).message).not.toContain('Sekrit');
  });
});

describe.each(FRONTS)('servers (%s front)', (front) => {
  const { call, createServer } = via(front);

  it('creates with 202 and Nova create body, then GET shows ACTIVE', async () => {
    const n = await start();
    const r = await createServer(n, '1', 'probe-0');
    expect(r.status).toBe(202);
    expect(r.headers.get('content-type')).toBe('application/json');
    const s = r.json.server;
    expect(Object.keys(s).sort()).toEqual(['OS-DCF:diskConfig', 'adminPass', 'id', 'links', 'security_groups']);
    expect(s['OS-DCF:diskConfig']).toBe('MANUAL');
    expect(s.security_groups).toEqual([{ name: 'default' }]);
    expect(s.links).toEqual([
      { href: `${n.url}/v2.1/servers/${s.id}`, rel: 'self' },
      { href: `${n.url}/servers/${s.id}`, rel: 'bookmark' },
    ]);
    const g = await call(n, 'GET', `/servers/${s.id}`);
    expect(g.status).toBe(200);
    expect(g.json.server.status).toBe('ACTIVE');
    expect(g.json.server['OS-EXT-STS:vm_state']).toBe('active');
    expect(g.json.server['OS-EXT-STS:task_state']).toBeNull();
    expect(g.json.server.flavor).toEqual({
      disk: 1,
      ephemeral: 0,
      extra_specs: {},
      original_name: 'm1.tiny',
      ram: 512,
      swap: 0,
      vcpus: 1,
    });
    expect(g.json.server.hostId).toBe('71d92e1038231c91eb6483bdc6909e7e14799efabf2d5f8d871793f1');
    expect(n.requestsTo('POST', '/servers')[0]).toMatchObject({ status: 202, serverId: s.id });
  });

  it('shows BUILD/spawning while building and counts BUILD unless switched off', async () => {
    const n = await start({ buildDelayMs: 40 });
    const r = await createServer(n, '2');
    const id = r.json.server.id;
    const g = await call(n, 'GET', `/servers/${id}`);
    expect([g.json.server.status, g.json.server['OS-EXT-STS:task_state']]).toEqual(['BUILD', 'spawning']);
    expect(n.usage()).toEqual({ cores: 2, instances: 1, ramMiB: 2048, ram: 2048 });
    n.countBuildInUsage(false);
    expect(n.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
    await until(() => n.getServerState(id)?.status === 'ACTIVE');
    expect(n.usage()).toEqual({ cores: 2, instances: 1, ramMiB: 2048, ram: 2048 });
  });

  it('server view depends on microversion and role', async () => {
    const n = await start();
    const id = (await createServer(n, '1', 'probe-0')).json.server.id as string;
    const v21 = (await call(n, 'GET', `/servers/${id}`, { microversion: '' })).json.server;
    expect(v21.flavor).toEqual({ id: '1', links: [{ href: `${n.url}/flavors/1`, rel: 'bookmark' }] });
    expect(v21).not.toHaveProperty('locked');
    expect(v21).not.toHaveProperty('OS-EXT-SRV-ATTR:hostname');
    expect(v21['OS-EXT-SRV-ATTR:host']).toBe('fake-compute-1');
    const member = (await call(n, 'GET', `/servers/${id}`, { token: 'alice:demo' })).json.server;
    expect(Object.keys(member).filter((k) => k.startsWith('OS-EXT-SRV-ATTR'))).toEqual([]);
    expect(member).not.toHaveProperty('host_status');
    expect(member.locked).toBe(false);
    expect(member.user_id).toBe('admin');
    expect(member.tenant_id).toBe('demo');
    const viaProject = await call(n, 'GET', `/demo/servers/${id}`);
    expect(viaProject.json.server.id).toBe(id);
    expect(n.requestsTo('GET', `/servers/${id}`)).toHaveLength(3);
  });

  it('validates the create body like Nova', async () => {
    const n = await start();
    const missingNetworks = await call(n, 'POST', '/servers', {
      body: { server: { name: 'x', imageRef: '155d900f-4e14-4e4c-a73d-069cbf4541e6', flavorRef: '1' } },
    });
    expect(missingNetworks.status).toBe(400);
    expect(missingNetworks.text).toBe(
      '{"badRequest": {"code": 400, "message": "Invalid input for field/attribute server. Value: ' +
        "{'name': 'x', 'imageRef': '155d900f-4e14-4e4c-a73d-069cbf4541e6', 'flavorRef': '1'}. " +
        '\'networks\' is a required property"}}',
    );
    const old = await call(n, 'POST', '/servers', { body: { server: { name: 'x', flavorRef: '1' } }, microversion: '2.36' });
    expect(old.status).toBe(202);
    const noName = await call(n, 'POST', '/servers', { body: { server: { flavorRef: '1', networks: 'none' } } });
    expect(noName.json.badRequest.message).toBe(
      "Invalid input for field/attribute server. Value: {'flavorRef': '1', 'networks': 'none'}. 'name' is a required property",
    );
    const badFlavor = await createServer(n, '999');
    expect(badFlavor.text).toBe('{"badRequest": {"code": 400, "message": "Flavor 999 could not be found."}}');
    const malformed = await call(n, 'POST', '/servers', { body: '{nope' });
    expect(malformed.json).toEqual({ badRequest: { code: 400, message: 'Malformed request body' } });
  });

  it('answers 404 itemNotFound for unknown servers on GET and DELETE', async () => {
    const n = await start();
    const id = '00000000-0000-0000-0000-000000000000';
    for (const method of ['GET', 'DELETE']) {
      const r = await call(n, method, `/servers/${id}`);
      expect(r.status).toBe(404);
      expect(r.headers.get('content-type')).toBe('application/json; charset=UTF-8');
      expect(r.text).toBe(`{"itemNotFound": {"code": 404, "message": "Instance ${id} could not be found."}}`);
    }
  });

  it('sets Nova headers on every response', async () => {
    const n = await start();
    const r = await call(n, 'GET', '/limits');
    const rid = r.headers.get('x-openstack-request-id');
    expect(rid).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(r.headers.get('x-compute-request-id')).toBe(rid);
    expect(r.headers.get('date')).toMatch(/GMT$/);
    expect(r.headers.get('openstack-api-version')).toBe('compute 2.79');
    expect(r.headers.get('x-openstack-nova-api-version')).toBe('2.79');
    expect(r.headers.get('vary')).toBe('OpenStack-API-Version');
    const none = await call(n, 'GET', '/limits', { microversion: '' });
    expect(none.headers.get('openstack-api-version')).toBe('compute 2.1');
  });
});

describe.each(FRONTS)('quota 403 on create (legacy DbQuotaDriver) (%s front)', (front) => {
  const { call, createServer } = via(front);

  it('single resource, byte-exact with Content-Length 111 as real Nova', async () => {
    const n = await start({ maxTotalCores: 2 });
    expect((await createServer(n, '2')).status).toBe(202);
    const r = await createServer(n, '1');
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toBe('application/json; charset=UTF-8');
    expect(r.headers.get('content-length')).toBe('111');
    expect(r.text).toBe(
      '{"forbidden": {"code": 403, "message": "Quota exceeded for cores: Requested 1, but already used 2 of 2 cores"}}',
    );
    expect(n.usage()).toEqual({ cores: 2, instances: 1, ramMiB: 2048, ram: 2048 });
  });

  it('instances and ram messages', async () => {
    const n = await start({ maxTotalInstances: 1 });
    await createServer(n, '2');
    expect((await createServer(n, '1')).json.forbidden.message).toBe(
      'Quota exceeded for instances: Requested 1, but already used 1 of 1 instances',
    );
    n.setQuota({ instances: 10, ram: 2304 });
    expect((await createServer(n, '1')).json.forbidden.message).toBe(
      'Quota exceeded for ram: Requested 512, but already used 2048 of 2304 ram',
    );
  });

  it('several resources: sorted names, lists joined with ", " (observed forced-quota case)', async () => {
    const n = await start({ maxTotalRAMSize: 2304 });
    await createServer(n, '2');
    n.setQuota({ cores: 1 });
    const r = await createServer(n, '2');
    expect(r.text).toBe(
      '{"forbidden": {"code": 403, "message": "Quota exceeded for cores, ram: Requested 2, 2048, but already used 2, 2048 of 1, 2304 cores, ram"}}',
    );
  });

  it('fits iff used + requested <= limit; -1 is unlimited', async () => {
    const n = await start({ maxTotalCores: 4 });
    expect((await createServer(n, '2')).status).toBe(202);
    expect((await createServer(n, '2')).status).toBe(202); // exactly at the limit
    expect((await createServer(n, '1')).status).toBe(403);
    n.setQuota({ cores: -1 });
    expect((await createServer(n, '3')).status).toBe(202);
    const lim = await call(n, 'GET', '/limits');
    expect(lim.json.limits.absolute.maxTotalCores).toBe(-1);
    expect(lim.json.limits.absolute.totalCoresUsed).toBe(8);
  });

  it('min_count/max_count: creates fewer when min fits, else the "min-max" message', async () => {
    const n = await start({ maxTotalCores: 5 });
    const r = await createServer(n, '2', 'multi', { min_count: 1, max_count: 3 });
    expect(r.status).toBe(202);
    expect(n.listServerStates().map((s) => s.name)).toEqual(['multi-1', 'multi-2']);
    const r2 = await createServer(n, '2', 'multi', { min_count: 2, max_count: 3 });
    expect(r2.json.forbidden.message).toBe('Quota exceeded for cores: Requested 6, but already used 4 of 5 cores');
    n.setQuota({ instances: 2 });
    const r3 = await createServer(n, '1', 'x', { min_count: 2, max_count: 3 });
    expect(r3.json.forbidden.message).toBe(
      'Quota exceeded for cores, instances: Requested 3, 2-3, but already used 4, 2 of 5, 2 cores, instances',
    );
  });
});

describe.each(FRONTS)('limits and quota sets (%s front)', (front) => {
  const { call, createServer } = via(front);

  it('limits keys depend on the microversion like a real Nova 26.2 (docs/nova-behaviour.md#limits-and-quota-sets)', async () => {
    const n = await start();
    await createServer(n, '1');
    const at279 = await call(n, 'GET', '/limits');
    expect(at279.text).toBe(
      '{"limits": {"absolute": {"maxServerGroupMembers": 10, "maxServerGroups": 10, "maxServerMeta": 128, ' +
        '"maxTotalCores": 20, "maxTotalInstances": 10, "maxTotalKeypairs": 100, "maxTotalRAMSize": 51200, ' +
        '"totalCoresUsed": 1, "totalInstancesUsed": 1, "totalRAMUsed": 512, "totalServerGroupsUsed": 0}, "rate": []}}',
    );
    const keys = async (mv: string): Promise<string[]> =>
      Object.keys((await call(n, 'GET', '/limits', { microversion: mv })).json.limits.absolute).sort();
    const v21 = await keys('');
    expect(v21).toEqual(
      [
        'maxImageMeta',
        'maxPersonality',
        'maxPersonalitySize',
        'maxSecurityGroupRules',
        'maxSecurityGroups',
        'maxServerGroupMembers',
        'maxServerGroups',
        'maxServerMeta',
        'maxTotalCores',
        'maxTotalFloatingIps',
        'maxTotalInstances',
        'maxTotalKeypairs',
        'maxTotalRAMSize',
        'totalCoresUsed',
        'totalFloatingIpsUsed',
        'totalInstancesUsed',
        'totalRAMUsed',
        'totalSecurityGroupsUsed',
        'totalServerGroupsUsed',
      ].sort(),
    );
    const v236 = await keys('2.36');
    expect(v236).toContain('maxImageMeta');
    expect(v236).not.toContain('maxSecurityGroups');
    expect(v236).not.toContain('totalFloatingIpsUsed');
    const v239 = await keys('2.39');
    expect(v239).not.toContain('maxImageMeta');
    expect(v239).toContain('maxPersonality');
    const v257 = await keys('2.57');
    expect(v257).toHaveLength(11);
  });

  it('quota detail and PUT with Nova 400 unless force', async () => {
    const n = await start();
    await createServer(n, '2');
    const d = await call(n, 'GET', '/os-quota-sets/demo/detail');
    expect(d.json.quota_set).toEqual({
      id: 'demo',
      cores: { in_use: 2, limit: 20, reserved: 0 },
      instances: { in_use: 1, limit: 10, reserved: 0 },
      key_pairs: { in_use: 0, limit: 100, reserved: 0 },
      metadata_items: { in_use: 0, limit: 128, reserved: 0 },
      ram: { in_use: 2048, limit: 51200, reserved: 0 },
      server_group_members: { in_use: 0, limit: 10, reserved: 0 },
      server_groups: { in_use: 0, limit: 10, reserved: 0 },
    });
    const bad = await call(n, 'PUT', '/os-quota-sets/demo', { body: { quota_set: { ram: 1024 } } });
    expect(bad.text).toBe(
      '{"badRequest": {"code": 400, "message": "Quota limit 1024 for ram must be greater than or equal to already used and reserved 2048."}}',
    );
    const forced = await call(n, 'PUT', '/os-quota-sets/demo', { body: { quota_set: { cores: 1, force: true } } });
    expect(forced.status).toBe(200);
    expect(forced.json.quota_set).toEqual({
      cores: 1,
      instances: 10,
      key_pairs: 100,
      metadata_items: 128,
      ram: 51200,
      server_group_members: 10,
      server_groups: 10,
    });
    expect(n.limits().cores).toBe(1);
    const reverted = await call(n, 'DELETE', '/os-quota-sets/demo');
    expect([reverted.status, reverted.text]).toEqual([202, '']);
    expect(n.limits()).toEqual({ cores: 20, instances: 10, ramMiB: 51200, ram: 51200 });
  });
});

describe.each(FRONTS)('delete timeline (%s front)', (front) => {
  const { call, createServer } = via(front);

  it('deleting (status unchanged) -> DELETED window -> 404, usage drops at the 404', async () => {
    const n = await start({ deleteDelayMs: 60, deletedWindowMs: 60 });
    const id = (await createServer(n, '2')).json.server.id as string;
    const del = await call(n, 'DELETE', `/servers/${id}`);
    expect([del.status, del.text]).toEqual([204, '']);
    const g1 = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect([g1.status, g1['OS-EXT-STS:vm_state'], g1['OS-EXT-STS:task_state']]).toEqual(['ACTIVE', 'active', 'deleting']);
    expect(n.usage().cores).toBe(2);
    const again = await call(n, 'DELETE', `/servers/${id}`);
    expect(again.status).toBe(204);
    await until(() => n.getServerState(id)?.status === 'DELETED');
    const g2 = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect([g2.status, g2['OS-EXT-STS:vm_state'], g2['OS-EXT-STS:task_state'], g2['OS-EXT-STS:power_state']]).toEqual([
      'DELETED',
      'deleted',
      null,
      0,
    ]);
    expect(g2['OS-SRV-USG:terminated_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000000$/);
    expect(g2).not.toHaveProperty('progress');
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(2);
    await until(() => n.getServerState(id) === undefined);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(0);
    expect(n.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
  });

  it('with zero delays the server is gone when the 204 arrives', async () => {
    const n = await start({ deletedWindowMs: 0 });
    const id = (await createServer(n, '1')).json.server.id as string;
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
    expect(n.usage().instances).toBe(0);
  });

  it('delete during BUILD works', async () => {
    const n = await start({ buildDelayMs: 30, deleteDelayMs: 50 });
    const id = (await createServer(n, '1')).json.server.id as string;
    await call(n, 'DELETE', `/servers/${id}`);
    const g = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect([g.status, g['OS-EXT-STS:task_state']]).toEqual(['BUILD', 'deleting']);
    await until(() => n.getServerState(id) === undefined);
    expect(n.usage().instances).toBe(0);
  });

  it('forceDelete: 202, destroys; 404 for unknown', async () => {
    const n = await start({ deletedWindowMs: 0 });
    const id = (await createServer(n, '1')).json.server.id as string;
    const r = await call(n, 'POST', `/servers/${id}/action`, { body: { forceDelete: null } });
    expect([r.status, r.text]).toEqual([202, '']);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
    const again = await call(n, 'POST', `/servers/${id}/action`, { body: { forceDelete: null } });
    expect(again.json.itemNotFound.message).toBe(`Instance ${id} could not be found.`);
  });

  it('locked server: 409 for a member, admin bypasses', async () => {
    const n = await start();
    const id = (await createServer(n, '1')).json.server.id as string;
    n.lock(id);
    const r = await call(n, 'DELETE', `/servers/${id}`, { token: 'alice:demo' });
    expect(r.status).toBe(409);
    expect(r.text).toBe(`{"conflictingRequest": {"code": 409, "message": "Instance ${id} is locked"}}`);
    const f = await call(n, 'POST', `/servers/${id}/action`, { body: { forceDelete: null }, token: 'alice:demo' });
    expect(f.status).toBe(409);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
  });
});

describe('private flavors (isPublic false): GET /flavors/detail as Nova filters it', () => {
  it("an admin's listing shows public flavors only, all with is_public=None, the private ones with is_public=false; a member's shows the public ones only (a private flavor of the fake is shared with no project)", async () => {
    const nova = await start({ flavors: [{ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 }, { id: 'p', name: 'ci.private', vcpus: 2, ram: 1024, disk: 1, isPublic: false }] });
    const ids = async (token: string, query: Record<string, string> = {}) => {
      const res = await clientFor(nova, { token: `${token}:${nova.projectId}` }).request<{ flavors: Array<{ id: string; 'os-flavor-access:is_public': boolean }> }>({ method: 'GET', path: '/flavors/detail', query });
      return res.data.flavors.map((f) => `${f.id}:${f['os-flavor-access:is_public']}`);
    };
    expect(await ids('admin')).toEqual(['1:true']);
    expect(await ids('admin', { is_public: 'None' })).toEqual(['1:true', 'p:false']);
    expect(await ids('admin', { is_public: 'false' })).toEqual(['p:false']);
    expect(await ids('member')).toEqual(['1:true']);
    expect(await ids('member', { is_public: 'None' })).toEqual(['1:true']);
    await expect(ids('admin', { is_public: 'maybe' })).rejects.toMatchObject({ status: 400 });
  });
});
