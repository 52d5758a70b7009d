/**
 * `waitForActive: false`: the claim of a server nobody watches ends at the guard's next reading
 * that shows the server past scheduling (Nova counts it from then on), as with `waitForActive`,
 * not when it leaves BUILD: otherwise each building server is subtracted twice (Nova's usage and
 * the claim) for its whole build, and creates wait for quota that is there. Fake timers, FakeNova.
 */
import { describe, expect, it } from 'vitest';
import { settle, useFakeClock } from '../helpers.js';
import { body, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

describe('waitForActive: false, long builds', () => {
  it('4 one-core creates on a 4-core quota all go at once while the first ones still build (no wait, 4 POSTs)', async () => {
    const nova = await startNova({ maxTotalCores: 4, buildDelayMs: 60_000, schedulingDelayMs: 10 });
    const guard = guardFor(nova, { waitForActive: false, maxWaitMs: 2000 });
    const statuses: string[] = [];
    for (let i = 0; i < 4; i++) {
      await settle(new Promise((r) => setTimeout(r, 50))); // each scheduled before the next create
      statuses.push(await settle(guard.createServer(body(`u${i}`, '1')).then((s) => s.status ?? 'BUILD', (e: Error) => e.name)));
    }
    expect(statuses).toEqual(['BUILD', 'BUILD', 'BUILD', 'BUILD']);
    expect(posts(nova)).toHaveLength(4);
    expect(guard.stats.waits).toBe(0);
    expect(nova.quotaRecord().peakCores).toBe(4);
    await guard.close();
  });
});
