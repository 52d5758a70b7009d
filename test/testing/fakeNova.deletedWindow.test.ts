/**
 * FakeNova's DELETED window under load, on vitest's fake timers through the in-process adapter:
 * the window grows with the deletes in flight (real Nova 26.2: 20 to 100 ms for one delete; median
 * 7 s, up to 12 s, for 40 at once) and Nova keeps counting the server's cores, RAM and instance
 * until the 404.
 */
import axios, { type AxiosError } from 'axios';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeystoneAuth, NotFoundError, NovaClient } from '../../src/index.js';
import { FakeKeystone, FakeNova, realNovaDeletedWindowMs } from '../../src/testing/index.js';
import { rejection, startNovaAsShipped as start } from '../helpers.js';
import { call } from './fakeNovaFetch.js';

afterEach(() => {
  vi.useRealTimers();
});

function clientOf(n: FakeNova): NovaClient {
  return new NovaClient({ endpoint: n.endpoint, token: 'admin:demo', microversion: '2.79', adapter: n.adapter });
}

/** status / task_state of a server as GET answers it, or 404 with Nova's message. */
async function look(c: NovaClient, id: string): Promise<[string | undefined, string | null | undefined] | [404, string]> {
  try {
    const s = await c.getServer(id);
    return [s.status, s['OS-EXT-STS:task_state']];
  } catch (e) {
    if (e instanceof NotFoundError) return [404, (e as Error).message];
    throw e;
  }
}

describe('realNovaDeletedWindowMs', () => {
  it('is small for one delete and seconds for tens', () => {
    expect(realNovaDeletedWindowMs(1)).toBe(50);
    expect(realNovaDeletedWindowMs(0)).toBe(50);
    expect(realNovaDeletedWindowMs(20)).toBe(5750);
    expect(realNovaDeletedWindowMs(40)).toBe(11_750);
  });
});

describe('DELETED window on fake timers, through FakeNova.adapter', () => {
  it('20 deletes at once: ACTIVE/deleting -> DELETED at 100 ms -> 404 at 5850 ms; /limits and quota in_use count the cores until the 404', async () => {
    const n = await start({ deleteDelayMs: 100, maxTotalInstances: 40 });
    vi.useFakeTimers();
    const c = clientOf(n);
    const ids = Array.from({ length: 20 }, () => n.addServer({ flavorId: '1' }).id);
    const t0 = Date.now();
    expect(await Promise.all(ids.map((id) => c.requestDelete(id)))).toEqual(Array(20).fill('delete-requested'));
    const id = ids[7]!;
    const at = async (ms: number): Promise<void> => {
      await vi.advanceTimersByTimeAsync(t0 + ms - Date.now());
      expect(Date.now() - t0).toBe(ms);
    };
    const cores = async (): Promise<number | undefined> => (await c.getLimits()).absolute.totalCoresUsed;

    expect(await look(c, id)).toEqual(['ACTIVE', 'deleting']);
    expect(await cores()).toBe(20);
    await at(99);
    expect(await look(c, id)).toEqual(['ACTIVE', 'deleting']);
    await at(100);
    expect(await look(c, id)).toEqual(['DELETED', null]);
    expect(await cores()).toBe(20);
    // Every one of the 20 reached DELETED with 20 deletes in flight: 50 + 300 * 19 ms.
    expect(realNovaDeletedWindowMs(20)).toBe(5750);
    await at(3000);
    expect(await look(c, id)).toEqual(['DELETED', null]);
    expect((await c.getQuotaSetDetail('demo')).cores).toMatchObject({ in_use: 20 });
    await at(5849);
    expect(await look(c, id)).toEqual(['DELETED', null]);
    expect((await c.getLimits()).absolute).toMatchObject({ totalCoresUsed: 20, totalInstancesUsed: 20, totalRAMUsed: 20 * 512 });
    await at(5850);
    expect(await look(c, id)).toEqual([404, expect.stringContaining(`Instance ${id} could not be found.`)]);
    expect(await cores()).toBe(0);
    expect(n.listServerStates()).toEqual([]);
  });

  it('deletes in a row: window k is 50 + 300 * (k - 1) ms (in flight when it reached DELETED)', async () => {
    const n = await start({ maxTotalInstances: -1, maxTotalCores: -1 });
    vi.useFakeTimers();
    const c = clientOf(n);
    const ids = Array.from({ length: 40 }, () => n.addServer().id);
    const t0 = Date.now();
    for (const id of ids) await c.requestDelete(id);
    expect(ids.map((id) => n.getServerState(id)?.status)).toEqual(Array(40).fill('DELETED'));
    const goneAt: number[] = [];
    while (goneAt.length < 40) {
      await vi.advanceTimersByTimeAsync(10);
      for (const [k, id] of ids.entries()) if (goneAt[k] === undefined && !n.getServerState(id)) goneAt[k] = Date.now() - t0;
      if (Date.now() - t0 > 20_000) break;
    }
    expect(goneAt).toEqual(ids.map((_, k) => 50 + 300 * k));
    const sorted = [...goneAt].sort((a, b) => a - b);
    expect(sorted[19]! / 1000).toBeGreaterThan(5);
    expect(sorted[39]).toBe(11_750);
  });

  it('one delete alone: DELETED for 50 ms', async () => {
    const n = await start();
    vi.useFakeTimers();
    const c = clientOf(n);
    const id = n.addServer().id;
    await c.requestDelete(id);
    expect(await look(c, id)).toEqual(['DELETED', null]);
    await vi.advanceTimersByTimeAsync(49);
    expect(await look(c, id)).toEqual(['DELETED', null]);
    await vi.advanceTimersByTimeAsync(1);
    expect((await look(c, id))[0]).toBe(404);
  });

  it('listings: plain shows DELETED during the window and drops it at the 404; changes-since keeps it as DELETED', async () => {
    const n = await start({ deletedWindowMs: 2000 });
    vi.useFakeTimers();
    const keep = n.addServer({ name: 'keep' }).id;
    const gone = n.addServer({ name: 'gone' }).id;
    const since = new Date(Date.now() - 2000).toISOString();
    await clientOf(n).requestDelete(gone);
    const rows = async (query: string): Promise<string[][]> =>
      (await call(n, 'GET', `/servers/detail${query}`, { front: 'adapter', token: 'alice:demo' })).json.servers.map((s: Record<string, string>) => [
        s.name,
        s.status,
      ]);
    const cs = `?changes-since=${encodeURIComponent(since)}`;
    await vi.advanceTimersByTimeAsync(1000);
    expect(await rows('')).toEqual([
      ['gone', 'DELETED'],
      ['keep', 'ACTIVE'],
    ]);
    expect(await rows(cs)).toEqual([
      ['gone', 'DELETED'],
      ['keep', 'ACTIVE'],
    ]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(n.getServerState(gone)).toBeUndefined();
    expect(await rows('')).toEqual([['keep', 'ACTIVE']]);
    expect(await rows(cs)).toEqual([
      ['gone', 'DELETED'],
      ['keep', 'ACTIVE'],
    ]);
    expect(n.getServerState(keep)?.status).toBe('ACTIVE');
  });

  it('deletedWindowMs as a function gets the deletes in flight; odd results are kept in range', async () => {
    const seen: number[] = [];
    const n = await start({ deleteDelayMs: 10, deletedWindowMs: (k) => (seen.push(k), k === 3 ? Number.NaN : -5) });
    vi.useFakeTimers();
    const c = clientOf(n);
    const ids = [n.addServer().id, n.addServer().id, n.addServer().id];
    for (const id of ids) await c.requestDelete(id);
    await vi.advanceTimersByTimeAsync(10);
    expect(seen).toEqual([3, 2, 1]);
    expect(n.listServerStates()).toEqual([]);
    await expect(FakeNova.start({ deletedWindowMs: -1 })).rejects.toThrow(/deletedWindowMs/);
  });

  it('FakeKeystone.adapter and FakeNova.adapter: a client renews its token in fake time, no socket used', async () => {
    const n = await start({ validateToken: (t) => keystone.isValid(t) });
    const keystone = await FakeKeystone.start({ computeUrl: n.endpoint, tokenLifetimeMs: 180_000 });
    try {
      vi.useFakeTimers();
      const auth = new KeystoneAuth({
        authUrl: keystone.authUrl,
        username: 'ci-bot',
        password: 'ci-bot-password',
        userDomainName: 'Default',
        projectName: 'ci',
        projectDomainName: 'Default',
        adapter: keystone.adapter,
      });
      const c = new NovaClient({ auth, microversion: '2.79', adapter: n.adapter });
      expect((await c.getLimits()).absolute.totalCoresUsed).toBe(0);
      expect(keystone.tokenRequests).toBe(1);
      await vi.advanceTimersByTimeAsync(61_000); // under 120 s left: renewed before use
      expect((await c.getLimits()).absolute.maxTotalCores).toBe(20);
      expect(keystone.tokenRequests).toBe(2);
      expect(n.requestsTo('GET', '/limits').map((r) => r.status)).toEqual([200, 200]);
      await keystone.stop();
      const e = await rejection(axios.post(`${keystone.authUrl}/auth/tokens`, {}, { adapter: keystone.adapter }));
      expect((e as AxiosError).code).toBe('ECONNREFUSED');
    } finally {
      await keystone.stop();
    }
  });
});
