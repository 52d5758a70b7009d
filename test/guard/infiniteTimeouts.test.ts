/**
 * `Infinity` for a timeout means "no limit": no timer is armed for it (a Node timer given Infinity
 * fires after 1 ms), so the wait lasts as long as the server builds. `waitForActive` with
 * `timeoutMs: Infinity` and a QuotaGuard with `activeTimeoutMs: Infinity` on a server that builds
 * for 2 minutes. Fake timers.
 */
import { describe, expect, it } from 'vitest';
import { waitForActive } from '../../src/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { FAST, body } from './fixtures.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';

useFakeClock();

const BUILD_MS = 120_000;

describe('a timeout of Infinity is no limit, not an immediate end', () => {
  it('waitForActive({ timeoutMs: Infinity }): active once the server leaves BUILD after 2 minutes, polled every intervalMs meanwhile', async () => {
    const nova = await startNova({ buildDelayMs: BUILD_MS });
    const client = clientFor(nova);
    const s = await client.createServer({ name: 'a', flavorRef: '1', imageRef: 'i', networks: 'none' });
    const r = await settle(waitForActive(client, s.id, { timeoutMs: Infinity, intervalMs: 10_000, jitter: 0 }));
    expect(r).toMatchObject({ outcome: 'active', lastStatus: 'ACTIVE', elapsedMs: BUILD_MS, polls: 13 });
  });

  it('QuotaGuard({ activeTimeoutMs: Infinity }): the server that builds for 2 minutes is returned, never deleted', async () => {
    const nova = await startNova({ buildDelayMs: BUILD_MS });
    const guard = new QuotaGuard(clientFor(nova), { ...FAST, activeTimeoutMs: Infinity, activeIntervalMs: 10_000, jitter: 0 });
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(BUILD_MS);
    expect(nova.getServerState(server.id)?.status).toBe('ACTIVE');
    expect(nova.requests.filter((r) => r.method === 'DELETE')).toEqual([]);
    await guard.close();
  });
});
