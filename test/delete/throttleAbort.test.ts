/**
 * The delete engine's rate limit (p-throttle, `maxRequestsPerSecond`) and aborts: a call aborted
 * while its request waits for its turn sends nothing, then or later, and does not hold a turn that
 * a later request could use. Fake timers: the test asserts which request goes out at which time.
 */
import { describe, expect, it } from 'vitest';
import { AbortError } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { T0, clientFor, rejection, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

/** Requests FakeNova received, as [method, server name, fake ms since T0]. */
const seen = (nova: FakeNova, names: Record<string, string>): Array<[string, string, number]> =>
  nova.requests.map((r) => [r.method, names[r.serverId ?? ''] ?? r.path, r.timeMs - T0]);

/** Let `ms` fake ms pass. */
const pass = (ms: number): Promise<unknown> => settle(new Promise((r) => setTimeout(r, ms)));

describe('delete engine rate limit × abort', () => {
  it('1 request/s: a DELETE aborted while queued is never sent, and a later DELETE takes its turn', async () => {
    const nova = await startNova();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => nova.addServer({ name: `ci-${n}` }).id) as [string, string, string];
    const names: Record<string, string> = { [a]: 'a', [b]: 'b', [c]: 'c' };
    const client = clientFor(nova, { maxRequestsPerSecond: 1 });
    const pa = client.deleteServer(a, { wait: false });
    const acB = new AbortController();
    const pb = client.deleteServer(b, { wait: false, signal: acB.signal });
    await settle(pa);
    // b waits for the next turn (1000 ms); it is aborted at 100 ms and rejects at once.
    await pass(100);
    acB.abort(new Error('caller gave up'));
    const eb = await rejection(pb);
    expect(eb).toBeInstanceOf(AbortError);
    // c comes at 200 ms: the turn b gave up is c's.
    await pass(100);
    const pc = client.deleteServer(c, { wait: false });
    await settle(pc);
    await pass(5000);
    expect(seen(nova, names)).toEqual([
      ['DELETE', 'a', 0],
      ['DELETE', 'c', 1000],
    ]);
  });

  it('1 request/s: every queued DELETE aborted, then a new one: sent at the next turn, and nothing else ever', async () => {
    const nova = await startNova();
    const ids = ['a', 'b', 'c', 'd'].map((n) => nova.addServer({ name: `ci-${n}` }).id);
    const names = Object.fromEntries(ids.map((id, i) => [id, 'abcd'[i]!]));
    const client = clientFor(nova, { maxRequestsPerSecond: 1 });
    const pa = client.deleteServer(ids[0]!, { wait: false });
    const ac = new AbortController();
    const queued = [ids[1]!, ids[2]!].map((id) => client.deleteServer(id, { wait: false, signal: ac.signal }));
    await settle(pa);
    await pass(50);
    ac.abort(new Error('caller gave up'));
    for (const p of queued) expect(await rejection(p)).toBeInstanceOf(AbortError);
    await pass(50);
    const pd = client.deleteServer(ids[3]!, { wait: false });
    await settle(pd);
    await pass(5000);
    expect(seen(nova, names)).toEqual([
      ['DELETE', 'a', 0],
      ['DELETE', 'd', 1000],
    ]);
    expect(client.deleteEngine.idle).toBe(true);
  });

  it('2 requests/s: the middle of three queued DELETEs aborted; the others keep their order and move up', async () => {
    const nova = await startNova();
    const ids = ['a', 'b', 'c', 'd', 'e'].map((n) => nova.addServer({ name: `ci-${n}` }).id);
    const names = Object.fromEntries(ids.map((id, i) => [id, 'abcde'[i]!]));
    const client = clientFor(nova, { maxRequestsPerSecond: 2 });
    const ac = new AbortController();
    // a and b go at once (2 a second); c, d, e wait: c at 1000 ms, then (p-throttle's strict mode
    // spaces turns interval / limit apart) d at 1500 ms and e at 2000 ms. d is aborted: e goes at 1500 ms.
    const ps = ids.map((id, i) => client.deleteServer(id, { wait: false, ...(i === 3 ? { signal: ac.signal } : {}) }));
    await pass(100);
    ac.abort(new Error('caller gave up'));
    expect(await rejection(ps[3]!)).toBeInstanceOf(AbortError);
    for (const [i, p] of ps.entries()) if (i !== 3) await settle(p);
    await pass(5000);
    expect(seen(nova, names)).toEqual([
      ['DELETE', 'a', 0],
      ['DELETE', 'b', 0],
      ['DELETE', 'c', 1000],
      ['DELETE', 'e', 1500],
    ]);
  });
});
