/**
 * A brief listing older than one already taken (a cache or proxy answering with a stored copy, its
 * `Date` the stored one): a server created since is missing from it without being gone, so its
 * absences prove nothing. Each server then gets its own GET, and Nova's 404 decides.
 */
import { describe, expect, it, vi } from 'vitest';
import { waitForDelete } from '../../src/index.js';
import { T0, hostileSetup, reply, run, useHostileClock } from './support/hostile.js';

const IDS = ['00000001-0000-4000-8000-000000000000', '00000002-0000-4000-8000-000000000000', '00000003-0000-4000-8000-000000000000'];

useHostileClock();

/** Every other brief listing is a cache's copy from 5 minutes ago, before the third server was created. */
function staleEveryOther(front: ReturnType<typeof hostileSetup>['front']): { briefs: () => number } {
  let briefs = 0;
  const staleDate = new Date(T0 - 300_000).toUTCString();
  front.override = ({ config, method, path }) => {
    if (method !== 'GET' || path !== '/servers') return undefined;
    briefs++;
    if (briefs % 2 === 1) return reply(config, 200, { servers: IDS.map((id) => ({ id, links: [] })) });
    return reply(config, 200, { servers: IDS.slice(0, 2).map((id) => ({ id, links: [] })) }, { date: staleDate });
  };
  return { briefs: () => briefs };
}

describe('a brief listing dated before one already taken', () => {
  it('proves no absence: a server missing from a stale copy is not taken for deleted', async () => {
    const { nova, client, front } = hostileSetup();
    for (const id of IDS) {
      nova.add(id, {}); // accepted, never deleted
      await client.requestDelete(id);
    }
    const { briefs } = staleEveryOther(front);
    const results = await Promise.all(IDS.map((id) => run(waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }))));
    expect(briefs()).toBeGreaterThan(4);
    // Before the fix the third server ended 'deleted' at the first stale copy.
    for (const r of results) expect(r.value).toMatchObject({ outcome: 'timeout', lastStatus: 'ACTIVE' });
  });

  it("the server that is really deleted still ends deleted, on Nova's 404 for its own GET", async () => {
    const { nova, client, front } = hostileSetup();
    nova.add(IDS[0]!, {});
    nova.add(IDS[1]!, {});
    nova.add(IDS[2]!, { deletedAfterMs: 3000, goneAfterMs: 5000 });
    for (const id of IDS) await client.requestDelete(id);
    const { briefs } = staleEveryOther(front);
    const others = IDS.slice(0, 2).map((id) => waitForDelete(client, id, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    const r = await run(waitForDelete(client, IDS[2]!, { intervalMs: 1000, timeoutMs: 20_000, jitter: 0 }));
    expect(r.value).toMatchObject({ outcome: 'deleted', lastStatus: 'NOT_FOUND' });
    expect(r.settledAt).toBeGreaterThanOrEqual(nova.goneAt(IDS[2]!)! - T0);
    expect(r.settledAt).toBeLessThan(8000);
    expect(briefs()).toBeGreaterThan(1);
    await vi.advanceTimersByTimeAsync(21_000);
    for (const o of await Promise.all(others)) expect(o.outcome).toBe('timeout');
  });
});
