/**
 * One tick of the delete engine (src/delete/tick.ts), on fake timers against FakeNova: a shared
 * listing goes out only when a wait that is due now can be answered by it. The `changes-since`
 * listing (`GET /servers/detail`) when a due wait needs a status, the brief listing (`GET /servers`)
 * when a due wait is on a server under way; the waits that are not due ride along when it goes
 * out, and are never the reason it goes out.
 */
import { describe, expect, it, vi } from 'vitest';
import { waitForActive } from '../../src/index.js';
import { clientFor, settle, startNova, T0, useFakeClock } from '../helpers.js';

useFakeClock();

describe('shared listings only for due waits', () => {
  it('BUILD servers waited on every 10 s are listed every 10 s, not at every tick of delete waits every 2 s', async () => {
    const nova = await startNova({ deleteDelayMs: 21_000, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const building = [nova.addServer({ status: 'BUILD' }).id, nova.addServer({ status: 'BUILD' }).id];
    const deleting = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    const stop = new AbortController();
    const active = building.map((id) => waitForActive(client, id, { intervalMs: 10_000, jitter: 0, timeoutMs: 60_000, signal: stop.signal }).catch(() => undefined));
    const deletes = deleting.map((id) => client.deleteServer(id, { wait: true, intervalMs: 2000, jitter: 0 }));
    await vi.advanceTimersByTimeAsync(20_500);
    const at = (path: string): number[] => nova.requests.filter((q) => q.method === 'GET' && q.path === path).map((q) => q.timeMs - T0);
    const detail = at('/servers/detail');
    const brief = at('/servers');
    // The delete waits: a listing about every 2 s (brief, or the whole project's detail when a BUILD
    // server's status is due too: one listing a tick, never two at once).
    expect(brief.length + detail.length).toBeGreaterThanOrEqual(8);
    expect(new Set([...brief, ...detail]).size).toBe(brief.length + detail.length);
    // The BUILD servers' statuses: at once, at 10 s and at 20 s; not every 2 s.
    expect(detail.length).toBeLessThanOrEqual(4);
    expect(brief.length).toBeGreaterThanOrEqual(5);
    for (const r of await Promise.all(deletes.map((d) => settle(d)))) expect(r.outcome).toBe('deleted');
    stop.abort();
    await Promise.all(active);
  });
});

describe('one listing a tick, the lightest that answers it', () => {
  it('BUILD servers waited on every 2 s beside deletes under way waited on every 10 s: a changes-since listing for the statuses, the whole project only when a delete wait is due too', async () => {
    const nova = await startNova({ buildDelayMs: 60_000, deleteDelayMs: 60_000, deletedWindowMs: 0 });
    const client = clientFor(nova);
    const building = [nova.addServer({ status: 'BUILD' }).id, nova.addServer({ status: 'BUILD' }).id];
    const deleting = [nova.addServer({ status: 'ACTIVE' }).id, nova.addServer({ status: 'ACTIVE' }).id];
    const stop = new AbortController();
    const deletes = deleting.map((id) => client.deleteServer(id, { wait: true, intervalMs: 10_000, jitter: 0, signal: stop.signal }).catch(() => undefined));
    await vi.advanceTimersByTimeAsync(3_000);
    const active = building.map((id) => waitForActive(client, id, { intervalMs: 2000, jitter: 0, timeoutMs: 60_000, signal: stop.signal }).catch(() => undefined));
    const from = nova.requests.length;
    await vi.advanceTimersByTimeAsync(20_500);
    const listings = nova.requests.slice(from).filter((q) => q.method === 'GET' && (q.path === '/servers/detail' || q.path === '/servers'));
    const whole = listings.filter((q) => q.path === '/servers/detail' && q.query['changes-since'] === undefined);
    const changed = listings.filter((q) => q.path === '/servers/detail' && q.query['changes-since'] !== undefined);
    // The BUILD statuses every 2 s: about 10 listings, most of them changes-since.
    expect(listings.length).toBeGreaterThanOrEqual(9);
    expect(changed.length).toBeGreaterThanOrEqual(6);
    // The whole project only with a delete wait due (every 10 s, and its status refresh): at most 3 in 20 s.
    expect(whole.length).toBeLessThanOrEqual(3);
    stop.abort();
    await Promise.all([...deletes, ...active]);
  });
});

describe('the first round of a batch of deletes', () => {
  it('deleteServers: the first look is one whole listing for status and presence, not a changes-since listing and a brief one at the same instant', async () => {
    const nova = await startNova({ deleteDelayMs: 5_000, deletedWindowMs: 4_000 });
    const client = clientFor(nova);
    const ids = Array.from({ length: 6 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const done = client.deleteServers(ids, { wait: true, intervalMs: 500, jitter: 0 });
    await vi.advanceTimersByTimeAsync(1_000);
    const listings = nova.requests.filter((q) => q.method === 'GET' && (q.path === '/servers/detail' || q.path === '/servers'));
    const first = listings[0]!;
    // One listing, the whole project's detail, and no other listing sent at its instant.
    expect([first.path, first.query['changes-since']]).toEqual(['/servers/detail', undefined]);
    expect(listings.filter((q) => q.timeMs === first.timeMs)).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(30_000);
    expect((await done).succeeded).toHaveLength(6);
  });
});

describe('the pace of shared rounds', () => {
  it('40 waits at 500 ms with jitter 0.1: a shared listing every 500 ms at least, not at the earliest of 40 jitter draws (about 450 ms)', async () => {
    const nova = await startNova({ deleteDelayMs: 12_000, deletedWindowMs: 6_000 });
    const client = clientFor(nova);
    const ids = Array.from({ length: 40 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const done = client.deleteServers(ids, { wait: true, intervalMs: 500, jitter: 0.1 });
    await vi.advanceTimersByTimeAsync(10_000);
    const rounds = [...new Set(nova.requests.filter((q) => q.method === 'GET' && (q.path === '/servers/detail' || q.path === '/servers')).map((q) => q.timeMs))];
    expect(rounds.length).toBeGreaterThanOrEqual(10);
    const gaps = rounds.slice(1).map((t, i) => t - rounds[i]!);
    // FakeNova answers at once on fake timers: a gap is the pace itself.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(560);
    await vi.advanceTimersByTimeAsync(30_000);
    expect((await done).succeeded).toHaveLength(40);
  });
});
