// What a waiting call asks of its ledger's kept reading (`AcquireRequest.staleShortMs`): its
// re-checks may be answered "still short" on a kept reading up to `maxDelayMs` old, but its first
// admission, the admission before a wait whose shortfall is explained, and the last one before
// `maxWaitMs` ask for a fresh reading. Fake timers, FakeNova, the in-process ledger (which keeps no
// reading and reads afresh whatever it is asked) wrapped to record each request.
import { describe, expect, it } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { AcquireRequest, QuotaLedger } from '../../src/ledger/port.js';
import { QuotaWaitTimeoutError } from '../../src/guard/errors.js';
import type { Clock } from '../../src/core/clock.js';
import { runUntil, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

/** The in-process ledger, recording the `staleShortMs` of each `acquire` (0: absent). */
function recording(clock: Clock): { ledger: QuotaLedger; asked: number[] } {
  const inner = new InProcessQuotaLedger({ clock });
  const asked: number[] = [];
  const acquire = inner.acquire.bind(inner);
  inner.acquire = (request: AcquireRequest, ...rest) => {
    asked.push(request.staleShortMs ?? 0);
    return acquire(request, ...rest);
  };
  return { ledger: inner, asked };
}

describe('staleShortMs: what a waiting call lets its ledger answer on a kept reading', () => {
  it('re-checks after a wait may rest on a reading up to twice maxDelayMs old; the first admission and the one before an explained wait may not', async () => {
    const nova = await startNova({ maxTotalCores: 2, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 50 });
    const client = clientFor(nova);
    const { ledger, asked } = recording(client.clock);
    const blocker = await settle(client.createServer(body('blocker')));
    const causes: unknown[] = [];
    const guard = guardFor(nova, { ledger, minDelayMs: 100, baseDelayMs: 100, maxDelayMs: 400, maxWaitMs: 60_000, onWait: (w) => causes.push(w.shortfallCause) }, client);
    const created = guard.createServer(body('waiter'));
    // Waits 1..6 (the 5th explained, for onWait), then the blocker's confirmed deletion admits it.
    await runUntil(() => asked.length >= 7);
    await settle(client.deleteServer(blocker.id, { wait: true, intervalMs: 50 }));
    await settle(created);
    expect(posts(nova).length).toBe(2);
    // First admission: fresh. Re-checks: 800 (2 x maxDelayMs), except the admission before wait 5 (explained).
    expect(asked.slice(0, 7)).toEqual([0, 800, 800, 800, 0, 800, 800]);
    expect(causes[4]).toBe('busy-fleet');
    expect(nova.requestsTo('GET', '/servers/detail').length).toBeGreaterThanOrEqual(1);
    await guard.close();
  });

  it('without an onWait hook no wait is explained: no listing of the project and no fresh reading for it while the call waits', async () => {
    const nova = await startNova({ maxTotalCores: 2, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 50 });
    const client = clientFor(nova);
    const { ledger, asked } = recording(client.clock);
    const blocker = await settle(client.createServer(body('blocker')));
    const guard = guardFor(nova, { ledger, minDelayMs: 100, baseDelayMs: 100, maxDelayMs: 400, maxWaitMs: 60_000 }, client);
    const created = guard.createServer(body('waiter'));
    await runUntil(() => asked.length >= 12);
    expect(asked.slice(0, 12)).toEqual([0, ...Array(11).fill(800)]);
    expect(nova.requestsTo('GET', '/servers/detail')).toHaveLength(0);
    await settle(client.deleteServer(blocker.id, { wait: true, intervalMs: 50 }));
    await settle(created);
    expect(posts(nova).length).toBe(2);
    await guard.close();
  });

  it('asks for a fresh reading for the last admission before maxWaitMs (explainShortfall off: every other re-check may rest on a kept reading)', async () => {
    const nova = await startNova({ maxTotalCores: 2, maxTotalInstances: -1, maxTotalRAMSize: -1 });
    const client = clientFor(nova);
    await settle(client.createServer(body('blocker')));
    const a = recording(client.clock);
    const guard = guardFor(nova, { ledger: a.ledger, minDelayMs: 100, baseDelayMs: 100, maxDelayMs: 400, maxWaitMs: 1000, explainShortfall: false }, client);
    const err = await settle(guard.createServer(body('waiter')).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(a.asked[0]).toBe(0);
    expect(a.asked.at(-1)).toBe(0);
    expect(a.asked.slice(1, -1).every((v) => v === 800)).toBe(true);
    expect(a.asked.length).toBeGreaterThanOrEqual(4);
    await guard.close();

  });
});
