/** waitForActive against FakeNova, on fake timers through its in-process adapter (exact times). */
import { describe, expect, it } from 'vitest';
import { AbortError, waitForActive } from '../../src/index.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

describe('waitForActive (port of osc-lib wait_for_status, on the shared poll loop)', () => {
  it('polls until the server leaves BUILD', async () => {
    const nova = await startNova({ buildDelayMs: 60 });
    const client = clientFor(nova);
    const s = await client.createServer({ name: 'a', flavorRef: '1', imageRef: 'i', networks: 'none' });
    const r = await settle(waitForActive(client, s.id, { intervalMs: 10, jitter: 0 }));
    expect(r.outcome).toBe('active');
    expect(r.lastStatus).toBe('ACTIVE');
    expect(r.polls).toBeGreaterThanOrEqual(2);
    // Looks at 0, 10, ..., 60 ms: ACTIVE at the 60 ms look, the seventh.
    expect(r.elapsedMs).toBe(60);
    expect(r.polls).toBe(7);
    expect(r.polls).toBe(nova.requestsTo('GET', `/servers/${s.id}`).length);
  });

  it('ERROR, 404 and the deadline are outcomes, not errors', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const err = nova.addServer({ status: 'ERROR', faultMessage: 'No valid host was found.' }).id;
    const built = nova.addServer({ status: 'BUILD' }).id;
    expect(await settle(waitForActive(client, err, { intervalMs: 5 }))).toMatchObject({ outcome: 'error', lastStatus: 'ERROR', polls: 1 });
    expect((await settle(waitForActive(client, err, { intervalMs: 5 }))).server?.fault?.message).toBe('No valid host was found.');
    expect(await settle(waitForActive(client, '00000000-0000-4000-8000-00000000dead', { intervalMs: 5 }))).toMatchObject({ outcome: 'gone', lastStatus: 'NOT_FOUND', server: undefined });
    const t = await settle(waitForActive(client, built, { intervalMs: 5, timeoutMs: 60 }));
    expect(t).toMatchObject({ outcome: 'timeout', lastStatus: 'BUILD' });
    expect(t.elapsedMs).toBe(60);
  });

  it('abort rejects with AbortError', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const built = nova.addServer({ status: 'BUILD' }).id;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    const t0 = Date.now();
    await expect(settle(waitForActive(client, built, { intervalMs: 5, signal: ac.signal }))).rejects.toBeInstanceOf(AbortError);
    expect(Date.now() - t0).toBe(20);
  });
});
