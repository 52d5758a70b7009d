/**
 * FakeNova's legacy counting of build requests (a server in `scheduling` is not counted until
 * conductor creates it, then rechecks the quota) and its quota record (`quotaRecord()`), on fake timers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova as start } from '../helpers.js';
import { call, createServer } from './fakeNovaFetch.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function newServer(n: FakeNova, flavor = '2', name = 'ci'): Promise<string> {
  const r = await createServer(n, flavor, name);
  expect(r.status).toBe(202);
  return r.json.server.id as string;
}

const limitsUsed = async (n: FakeNova): Promise<number> => (await call(n, 'GET', '/limits')).json.limits.absolute.totalCoresUsed as number;

describe('legacy counting of build requests (schedulingDelayMs > 0)', () => {
  it('a server in scheduling is counted neither by the create check nor by /limits, so racing creates are all accepted', async () => {
    const n = await start({ maxTotalCores: 4, buildDelayMs: 1000, schedulingDelayMs: 300 });
    const ids = [await newServer(n), await newServer(n), await newServer(n)];
    expect(ids).toHaveLength(3);
    expect(await limitsUsed(n)).toBe(0);
    expect(n.usage().cores).toBe(0);
    for (const id of ids) expect(n.getServerState(id)).toMatchObject({ status: 'BUILD', taskState: 'scheduling', counted: false });
  });

  it("at the end of scheduling conductor's recheck sets the servers that no longer fit to ERROR with Nova's recheck fault; they count until deleted", async () => {
    const n = await start({ maxTotalCores: 4, buildDelayMs: 1000, schedulingDelayMs: 300 });
    const ids = [await newServer(n), await newServer(n), await newServer(n)];
    await vi.advanceTimersByTimeAsync(300);
    const states = ids.map((id) => n.getServerState(id)!);
    expect(states.map((s) => [s.status, s.taskState])).toEqual([
      ['BUILD', 'spawning'],
      ['BUILD', 'spawning'],
      ['ERROR', null],
    ]);
    const g = (await call(n, 'GET', `/servers/${ids[2]}`)).json.server;
    expect(g.fault).toMatchObject({ code: 413, message: 'Quota exceeded for cores: Requested 2, but already used 4 of 4 cores' });
    expect(n.usage().cores).toBe(6);
    expect(await limitsUsed(n)).toBe(6);
    await vi.advanceTimersByTimeAsync(700);
    expect(n.getServerState(ids[0]!)!.status).toBe('ACTIVE');
    expect(n.getServerState(ids[2]!)!.status).toBe('ERROR');
    await call(n, 'DELETE', `/servers/${ids[2]}`);
    await vi.advanceTimersByTimeAsync(10);
    expect(n.usage().cores).toBe(4);
  });

  it('a create that fits when conductor rechecks goes on to spawning and ACTIVE', async () => {
    const n = await start({ maxTotalCores: 4, buildDelayMs: 1000, schedulingDelayMs: 300 });
    const id = await newServer(n);
    await vi.advanceTimersByTimeAsync(300);
    expect(n.getServerState(id)).toMatchObject({ status: 'BUILD', taskState: 'spawning', counted: true });
    await vi.advanceTimersByTimeAsync(700);
    expect(n.getServerState(id)!.status).toBe('ACTIVE');
    expect(n.quotaRecord()).toMatchObject({ peakCores: 2, recheckErrors: 0, quota403s: 0 });
  });

  it('a server deleted while still a build request is never counted nor rechecked', async () => {
    const n = await start({ maxTotalCores: 2, buildDelayMs: 1000, schedulingDelayMs: 300, deleteDelayMs: 500 });
    const a = await newServer(n);
    const b = await newServer(n);
    await call(n, 'DELETE', `/servers/${a}`);
    await vi.advanceTimersByTimeAsync(300);
    expect(n.getServerState(a)).toMatchObject({ taskState: 'deleting', counted: false });
    expect(n.getServerState(b)).toMatchObject({ status: 'BUILD', taskState: 'spawning' });
    expect(n.usage().cores).toBe(2);
    expect(n.quotaRecord().recheckErrors).toBe(0);
  });

  it('failCreatesWithQuotaRecheck with a scheduling part: ERROR when scheduling ends, never spawning', async () => {
    const n = await start({ maxTotalCores: 10, buildDelayMs: 1000, schedulingDelayMs: 300 });
    n.failCreatesWithQuotaRecheck(1);
    const id = await newServer(n);
    await vi.advanceTimersByTimeAsync(299);
    expect(n.getServerState(id)).toMatchObject({ status: 'BUILD', taskState: 'scheduling', counted: false });
    await vi.advanceTimersByTimeAsync(1);
    expect(n.getServerState(id)).toMatchObject({ status: 'ERROR', taskState: null, counted: true, faultMessage: 'Quota exceeded for cores: Requested 2, but already used 10 of 10 cores' });
    expect(n.quotaRecord().recheckErrors).toBe(1);
  });
});

describe('quotaRecord()', () => {
  it('records the most cores, instances and RAM held at once by servers that exist, counted by Nova or not', async () => {
    const n = await start({ maxTotalCores: 4, buildDelayMs: 1000, schedulingDelayMs: 300, deleteDelayMs: 100 });
    const ids = [await newServer(n), await newServer(n), await newServer(n, '1')];
    expect(n.quotaRecord()).toEqual({
      peakCores: 5,
      peakInstances: 3,
      peakRamMiB: 2048 * 2 + 512,
      quota403s: 0,
      recheckErrors: 0,
      limits: { cores: 4, instances: 10, ramMiB: 51200, ram: 51200 },
    });
    await vi.advanceTimersByTimeAsync(300);
    expect(n.quotaRecord().recheckErrors).toBe(1);
    for (const id of ids) await call(n, 'DELETE', `/servers/${id}`);
    await vi.advanceTimersByTimeAsync(200);
    expect(n.listServerStates()).toEqual([]);
    expect(n.quotaRecord().peakCores).toBe(5);
  });

  it('counts the quota 403s sent (create and restore), not an injected 403', async () => {
    const n = await start({ maxTotalCores: 2, softDelete: true });
    const id = await newServer(n);
    expect((await createServer(n, '2', 'x')).status).toBe(403);
    n.inject({ method: 'POST', path: '/servers', status: 403 });
    expect((await createServer(n, '1', 'y')).status).toBe(403);
    await call(n, 'DELETE', `/servers/${id}`);
    await newServer(n);
    expect((await call(n, 'POST', `/servers/${id}/action`, { body: { restore: null } })).status).toBe(403);
    expect(n.quotaRecord().quota403s).toBe(2);
  });

  it('clearQuotaRecord starts over from what is held now', async () => {
    const n = await start({ maxTotalCores: 8 });
    const a = await newServer(n);
    await newServer(n);
    await call(n, 'DELETE', `/servers/${a}`);
    await vi.advanceTimersByTimeAsync(10);
    expect(n.quotaRecord().peakCores).toBe(4);
    n.clearQuotaRecord();
    expect(n.quotaRecord()).toMatchObject({ peakCores: 2, peakInstances: 1, quota403s: 0, recheckErrors: 0 });
  });
});
