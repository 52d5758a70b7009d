/**
 * One signal for a whole batch: `deleteServers(ids, { signal })` gives every server's wait the same
 * signal. The engine listens to it once (a listener per wait passed Node's limit of 10 and printed a
 * MaxListenersExceededWarning for 11 servers or more), an abort still ends every wait with an
 * `AbortError` naming its server, and no listener is left once the batch has settled.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AbortError } from '../../src/index.js';
import { PresenceCheck } from '../../src/delete/presenceCheck.js';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

describe('a batch sharing one signal', () => {
  it('40 waits on one signal: one abort listener while they wait, none after; abort ends each with its server id', async () => {
    const nova = await startNova();
    nova.setDefaultDeleteBehavior('never');
    const client = clientFor(nova);
    const ids = Array.from({ length: 40 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const controller = new AbortController();
    const batch = client.deleteServers(ids, { wait: true, intervalMs: 1000, timeoutMs: 60_000, signal: controller.signal });
    // Let every DELETE go out and every wait start.
    for (let i = 0; i < 20 && client.deleteEngine.pendingWaits < 40; i++) await settle(Promise.resolve());
    expect(client.deleteEngine.pendingWaits).toBe(40);
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(2);
    controller.abort(new Error('stop'));
    const r = await settle(batch);
    expect(r.failed).toHaveLength(40);
    for (const f of r.failed) {
      expect(f.error).toBeInstanceOf(AbortError);
      expect((f.error as AbortError).serverId).toBe(f.serverId);
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('waits that end on their own leave no listener on the shared signal', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const client = clientFor(nova);
    const ids = Array.from({ length: 12 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const controller = new AbortController();
    const r = await settle(client.deleteServers(ids, { wait: true, intervalMs: 200, timeoutMs: 60_000, signal: controller.signal }));
    expect(r.succeeded).toHaveLength(12);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('the 404 checks of one tick, under the tick signal', () => {
  it('20 callers of one presence listing on one signal: one listener on it, an abort rejects each with AbortError, none left', async () => {
    const shared = new AbortController();
    // A listing that never answers: the callers wait until the signal aborts.
    const check = new PresenceCheck({ api: {} as never, send: () => new Promise<never>(() => undefined), microversion: () => undefined, counted: () => undefined, unsupported: () => undefined });
    const calls = Array.from({ length: 20 }, () => check.listed(shared.signal).then(() => 'listed', (e: unknown) => e));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    shared.abort(new Error('tick over'));
    for (const r of await Promise.all(calls)) expect(r).toBeInstanceOf(AbortError);
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  });
});
