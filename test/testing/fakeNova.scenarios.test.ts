import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova as start } from '../helpers.js';
import { FRONTS, call, createServer, until, via } from './fakeNovaFetch.js';

// On fake timers (requests still go over the socket or the adapter): a state that lasts a few ms,
// such as SOFT_DELETED before its reclaim, is seen however busy the machine is.
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function newServer(n: FakeNova, flavor = '1', name = 'ci'): Promise<string> {
  const r = await createServer(n, flavor, name);
  expect(r.status).toBe(202);
  return r.json.server.id as string;
}

describe('soft delete (reclaim_instance_interval > 0)', () => {
  it('DELETE -> SOFT_DELETED, GET 200, not counted, hidden from plain listing; forceDelete destroys', async () => {
    const n = await start({ deletedWindowMs: 0, softDelete: true });
    const id = await newServer(n, '2');
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    const g = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect([g.status, g['OS-EXT-STS:vm_state'], g['OS-EXT-STS:task_state']]).toEqual(['SOFT_DELETED', 'soft-delete', null]);
    expect(n.usage()).toEqual({ cores: 0, instances: 0, ramMiB: 0, ram: 0 });
    expect((await call(n, 'GET', '/servers')).json.servers).toEqual([]);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(204);
    expect(n.getServerState(id)?.status).toBe('SOFT_DELETED');
    await call(n, 'POST', `/servers/${id}/action`, { body: { forceDelete: null } });
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
  });

  it('reclaimIntervalMs: a SOFT_DELETED server is destroyed after the interval', async () => {
    const n = await start({ softDelete: true, reclaimIntervalMs: 30 });
    const id = await newServer(n, '1');
    await call(n, 'DELETE', `/servers/${id}`);
    expect((await call(n, 'GET', `/servers/${id}`)).json.server.status).toBe('SOFT_DELETED');
    await until(() => n.getServerState(id) === undefined);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
  });

  it('a server never ACTIVE is hard-deleted', async () => {
    const n = await start({ deletedWindowMs: 0, softDelete: true, buildDelayMs: 1000 });
    const id = await newServer(n);
    await call(n, 'DELETE', `/servers/${id}`);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
  });

  it('restore brings it back and re-checks quota', async () => {
    const n = await start({ softDelete: true, maxTotalCores: 2 });
    const id = await newServer(n, '2');
    await call(n, 'DELETE', `/servers/${id}`);
    await newServer(n, '2');
    const denied = await call(n, 'POST', `/servers/${id}/action`, { body: { restore: null } });
    expect(denied.json.forbidden.message).toBe('Quota exceeded for cores: Requested 2, but already used 2 of 2 cores');
    n.setQuota({ cores: 4 });
    expect((await call(n, 'POST', `/servers/${id}/action`, { body: { restore: null } })).status).toBe(202);
    expect(n.getServerState(id)?.status).toBe('ACTIVE');
    expect(n.usage().cores).toBe(4);
  });
});

describe.each(FRONTS)('listing (%s front)', (front) => {
  const { call } = via(front);

  it('changes-since includes destroyed servers as DELETED; plain listing hides them', async () => {
    const n = await start({ deletedWindowMs: 0 });
    const since = new Date(Date.now() - 2000).toISOString();
    const keep = await newServer(n, '1', 'cs-2');
    const gone = await newServer(n, '1', 'cs-1');
    await call(n, 'DELETE', `/servers/${gone}`);
    const plain = await call(n, 'GET', '/servers/detail');
    expect(plain.json.servers.map((s: { id: string }) => s.id)).toEqual([keep]);
    const cs = await call(n, 'GET', `/servers/detail?changes-since=${encodeURIComponent(since)}`, { token: 'alice:demo' });
    const rows = cs.json.servers.map((s: Record<string, unknown>) => [
      s.name,
      s.status,
      s['OS-EXT-STS:vm_state'],
      s['OS-EXT-STS:task_state'],
    ]);
    expect(rows).toEqual([
      ['cs-1', 'DELETED', 'deleted', null],
      ['cs-2', 'ACTIVE', 'active', null],
    ]);
    const future = new Date(Date.now() + 60000).toISOString();
    expect((await call(n, 'GET', `/servers/detail?changes-since=${future}`)).json.servers).toEqual([]);
    const bad = await call(n, 'GET', '/servers/detail?changes-since=yesterday');
    expect(bad.status).toBe(400);
  });

  it('status and name filters; non-admin status=DELETED is 403', async () => {
    const n = await start();
    await newServer(n, '1', 'web-1');
    await newServer(n, '1', 'db-1');
    n.addServer({ name: 'web-broken', status: 'ERROR', faultMessage: 'boom' });
    const errors = await call(n, 'GET', '/servers/detail?status=ERROR');
    expect(errors.json.servers.map((s: { name: string }) => s.name)).toEqual(['web-broken']);
    expect(errors.json.servers[0].fault).toEqual({ code: 500, created: expect.any(String), message: 'boom' });
    const web = await call(n, 'GET', '/servers?name=^web');
    expect(web.json.servers.map((s: { name: string }) => s.name).sort()).toEqual(['web-1', 'web-broken']);
    const denied = await call(n, 'GET', '/servers?status=DELETED', { token: 'alice:demo' });
    expect(denied.json).toEqual({ forbidden: { code: 403, message: 'Only administrators may list deleted instances' } });
  });

  it('limit/marker pagination with servers_links next (absolute URL); pageSize caps the page', async () => {
    const n = await start({ pageSize: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await newServer(n, '1', `p-${i}`));
    const newest = [...ids].reverse();
    const p1 = await call(n, 'GET', '/servers?limit=2');
    expect(p1.json.servers.map((s: { id: string }) => s.id)).toEqual(newest.slice(0, 2));
    expect(p1.json.servers_links).toEqual([
      { href: `${n.url}/v2.1/servers?limit=2&marker=${newest[1]}`, rel: 'next' },
    ]);
    const next = new URL(p1.json.servers_links[0].href);
    const p2 = await call(n, 'GET', '/servers' + next.search);
    expect(p2.json.servers.map((s: { id: string }) => s.id)).toEqual(newest.slice(2, 4));
    const capped = await call(n, 'GET', '/servers/detail');
    expect(capped.json.servers).toHaveLength(3);
    expect(capped.json.servers_links[0].href).toBe(`${n.url}/v2.1/servers/detail?marker=${newest[2]}`);
    const last = await call(n, 'GET', `/servers/detail?marker=${newest[2]}`);
    expect(last.json.servers.map((s: { id: string }) => s.id)).toEqual(newest.slice(3));
    expect(last.json).not.toHaveProperty('servers_links');
    const badMarker = await call(n, 'GET', '/servers?marker=nope');
    expect(badMarker.json).toEqual({ badRequest: { code: 400, message: 'marker [nope] not found' } });
  });
});

describe('failure scenarios', () => {
  it('quota recheck race: 202, then ERROR with the quota fault; still counted until deleted', async () => {
    const n = await start({ deletedWindowMs: 0, maxTotalCores: 10 });
    n.failCreatesWithQuotaRecheck(1);
    const id = await newServer(n, '2');
    const g = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect(g.status).toBe('ERROR');
    expect(g['OS-EXT-STS:vm_state']).toBe('error');
    expect(g.fault.code).toBe(413);
    expect(g.fault.message).toBe('Quota exceeded for cores: Requested 2, but already used 10 of 10 cores');
    expect(n.usage().cores).toBe(2);
    const second = await newServer(n, '2');
    expect(n.getServerState(second)?.status).toBe('ACTIVE');
    await call(n, 'DELETE', `/servers/${id}`);
    expect(n.usage().cores).toBe(2);
  });

  it('usage drift changes reported usage and the check, not the truth', async () => {
    const n = await start({ maxTotalCores: 10 });
    await newServer(n, '2');
    await newServer(n, '2');
    n.setUsageDrift({ cores: 4 });
    const lim = (await call(n, 'GET', '/limits')).json.limits.absolute;
    expect([lim.totalCoresUsed, lim.totalInstancesUsed]).toEqual([8, 2]);
    expect(n.usage().cores).toBe(4);
    const d = (await call(n, 'GET', '/os-quota-sets/demo/detail')).json.quota_set;
    expect(d.cores.in_use).toBe(8);
    const r = await createServer(n, '3');
    expect(r.json.forbidden.message).toBe('Quota exceeded for cores: Requested 4, but already used 8 of 10 cores');
    n.setUsageDrift({ cores: -4 });
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(0);
  });

  it('quotaLagMs: /limits keeps a destroyed server for the lag, the truth drops at once', async () => {
    const n = await start({ deletedWindowMs: 0, quotaLagMs: 80 });
    // On the fake clock (over either front): the lag ends at exactly 80 ms, however busy the machine.
    vi.useFakeTimers();
    const id = await newServer(n, '2');
    await call(n, 'DELETE', `/servers/${id}`);
    expect(n.usage().cores).toBe(0);
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(2);
    await vi.advanceTimersByTimeAsync(79);
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(0);
  });

  it('ghost: listed and counted, but GET and DELETE answer 404', async () => {
    const n = await start();
    const id = await newServer(n, '2');
    n.makeGhost(id);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
    expect((await call(n, 'DELETE', `/servers/${id}`)).status).toBe(404);
    expect((await call(n, 'GET', '/servers')).json.servers.map((s: { id: string }) => s.id)).toEqual([id]);
    expect((await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed).toBe(2);
  });

  it("onDelete 'error': deleting, then ERROR with fault; the next DELETE works", async () => {
    const n = await start({ deleteDelayMs: 20 });
    const id = await newServer(n);
    n.setServerBehavior(id, { onDelete: 'error' });
    await call(n, 'DELETE', `/servers/${id}`);
    expect(n.getServerState(id)?.taskState).toBe('deleting');
    await until(() => n.getServerState(id)?.status === 'ERROR');
    const g = (await call(n, 'GET', `/servers/${id}`)).json.server;
    expect([g.status, g['OS-EXT-STS:vm_state'], g['OS-EXT-STS:task_state']]).toEqual(['ERROR', 'error', null]);
    expect(g.fault.message).toBe('Failed to terminate instance: fake compute driver error');
    expect(n.usage().instances).toBe(1);
    await call(n, 'DELETE', `/servers/${id}`);
    await until(() => n.getServerState(id) === undefined);
  });

  it("onDelete 'never' stays deleting; 'ignore' loses one DELETE", async () => {
    const n = await start({ deletedWindowMs: 0 });
    const stuck = await newServer(n);
    const lost = await newServer(n);
    n.setServerBehavior(stuck, { onDelete: 'never' });
    n.setServerBehavior(lost, { onDelete: 'ignore' });
    await call(n, 'DELETE', `/servers/${stuck}`);
    await call(n, 'DELETE', `/servers/${stuck}`);
    await call(n, 'DELETE', `/servers/${lost}`);
    expect(n.getServerState(stuck)).toMatchObject({ status: 'ACTIVE', taskState: 'deleting' });
    expect(n.getServerState(lost)).toMatchObject({ status: 'ACTIVE', taskState: null });
    await call(n, 'DELETE', `/servers/${lost}`);
    expect(n.getServerState(lost)).toBeUndefined();
    n.setServerBehavior(stuck, { onDelete: 'normal' });
    await call(n, 'DELETE', `/servers/${stuck}`);
    expect(n.getServerState(stuck)).toBeUndefined();
  });

  it('setDefaultDeleteBehavior applies to servers without their own', async () => {
    const n = await start();
    n.setDefaultDeleteBehavior('never');
    const id = await newServer(n);
    await call(n, 'DELETE', `/servers/${id}`);
    expect(n.getServerState(id)?.taskState).toBe('deleting');
  });

  it('addServer seeds servers counted like Nova counts them', async () => {
    const n = await start();
    n.addServer({ flavorId: '3', status: 'ERROR' });
    n.addServer({ flavorId: '2', status: 'SOFT_DELETED' });
    n.addServer({ flavorId: '1', status: 'BUILD', taskState: 'spawning' });
    expect(n.usage()).toEqual({ cores: 5, instances: 2, ramMiB: 4608, ram: 4608 });
    expect(() => n.addServer({ flavorId: 'nope' })).toThrow(/unknown flavor/);
  });

  it('close() clears pending delete timers', async () => {
    const n = await start({ deleteDelayMs: 10_000 });
    const id = await newServer(n);
    await call(n, 'DELETE', `/servers/${id}`);
    expect(n.pendingTimers()).toBe(1);
    await n.close();
    expect(n.pendingTimers()).toBe(0);
  });
});
