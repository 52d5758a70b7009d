// Who wakes when quota is freed (src/guard/wakeUps.ts): with a ledger that addresses wake-ups to
// places, a confirmed deletion wakes the head of the fleet's queue only, and the head leaving wakes
// the next; the others sleep their backoff (found by the fleet simulation: every freed server woke
// every waiting call of every host, about 36 admissions per job). On fake timers through FakeNova.
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { AcquireRequest, LimitsRead, QuotaLedger } from '../../src/ledger/index.js';
import { runUntil, settle, useFakeClock } from '../helpers.js';
import { FAST, body, clientFor, startNova } from './fixtures.js';

useFakeClock();

const SLOW_BACKOFF = { ...FAST, minDelayMs: 10_000, baseDelayMs: 10_000, maxDelayMs: 10_000, jitter: 0, maxWaitMs: 600_000 };

describe('wake-ups of the calls waiting for headroom', () => {
  it('a confirmed deletion wakes the head of the queue across hosts, the head admitted wakes the next, the third sleeps its backoff', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const ledger = new InProcessQuotaLedger();
    const [c1, c2] = [clientFor(nova), clientFor(nova)];
    const host1 = new QuotaGuard(c1, { ...SLOW_BACKOFF, ledger });
    const host2 = new QuotaGuard(c2, { ...SLOW_BACKOFF, ledger });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const w1 = host1.createServer(body('w1'));
    await runUntil(() => host1.stats.waits === 1);
    const w2 = host2.createServer(body('w2'));
    await runUntil(() => host2.stats.waits === 1);
    const w3 = host1.createServer(body('w3'));
    await runUntil(() => host1.stats.waits === 2);
    const limitsBefore = nova.requestsTo('GET', '/limits').length;
    expect(limitsBefore).toBe(3);

    await settle(c2.deleteServer(holder, { wait: true, intervalMs: 5 }));
    const gone = nova.requestsTo('GET', `/servers/${holder}`).at(-1)!;
    expect(gone.status).toBe(404);
    const s1 = await settle(w1);
    expect(nova.getServerState(s1.id)?.name).toBe('w1');
    // w1 (the head, on host 1) was woken by host 2's deletion and POSTed in the ms of the 404
    expect(nova.requestsTo('POST', '/servers').map((r) => [r.status, r.timeMs])).toEqual([[202, gone.timeMs]]);
    // Two admissions: w1's, and w2's (woken when w1 left the queue; short: w1's server holds the
    // cores). w3 is not woken: under first come, first served it could not be admitted.
    await runUntil(() => nova.requestsTo('GET', '/limits').length >= limitsBefore + 2);
    const after = nova.requestsTo('GET', '/limits').slice(limitsBefore);
    expect(after).toHaveLength(2);
    expect(after.every((r) => r.timeMs - gone.timeMs < 100)).toBe(true);
    const waitsThen = host1.stats.waits + host2.stats.waits;
    // The next admission is a backoff step (10 s after the last wait began), not a wake-up.
    await runUntil(() => nova.requestsTo('GET', '/limits').length > limitsBefore + 2);
    const next = nova.requestsTo('GET', '/limits').at(-1)!;
    expect(next.timeMs - gone.timeMs).toBeGreaterThanOrEqual(9_000);
    expect(host1.stats.waits + host2.stats.waits).toBeGreaterThanOrEqual(waitsThen);

    // Deleting w1's server wakes w2 (now the head), not w3.
    const posts = nova.requestsTo('POST', '/servers').length;
    await settle(c1.deleteServer(s1.id, { wait: true, intervalMs: 5 }));
    const s2 = await settle(w2);
    expect(nova.getServerState(s2.id)?.name).toBe('w2');
    const gone1 = nova.requestsTo('GET', `/servers/${s1.id}`).at(-1)!;
    expect(nova.requestsTo('POST', '/servers').slice(posts).map((r) => r.timeMs)).toEqual([gone1.timeMs]);
    await settle(c1.deleteServer(s2.id, { wait: true, intervalMs: 5 }));
    const s3 = await settle(w3);
    expect(nova.getServerState(s3.id)?.name).toBe('w3');
    await Promise.all([host1.close(), host2.close()]);
  });

  it('a call that holds no place (its ledger did not queue it): every such waiting call wakes on a confirmed deletion (onFreed)', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const inner = new InProcessQuotaLedger();
    // The same ledger, except that its acquire never queues a call (as a Redis answer given up while
    // another holder refreshed): no place, so no wake-up addressed to it.
    const ledger = Object.fromEntries(
      ['leave', 'peek', 'claimAnyway', 'renew', 'bind', 'release', 'publishFreed', 'keptSeen', 'onFreed', 'onWake', 'close', 'bindScope', 'callBudgetMs', 'probe', 'everReached'].map((m) => [
        m,
        (inner as unknown as Record<string, (...a: unknown[]) => unknown>)[m]!.bind(inner),
      ]),
    ) as unknown as QuotaLedger;
    Object.assign(ledger, {
      kind: 'no-place',
      holder: inner.holder,
      scope: undefined,
      acquire: (request: AcquireRequest, read: LimitsRead, signal: AbortSignal | undefined) => inner.acquire({ ...request, joinIfShort: false }, read, signal),
    });
    const client = clientFor(nova);
    const guard = new QuotaGuard(client, { ...SLOW_BACKOFF, ledger });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const calls = [guard.createServer(body('a')), guard.createServer(body('b')), guard.createServer(body('c'))];
    await runUntil(() => guard.stats.waits === 3);
    const limitsBefore = nova.requestsTo('GET', '/limits').length;
    await settle(client.deleteServer(holder, { wait: true, intervalMs: 5 }));
    await settle(calls[0]!);
    await runUntil(() => nova.requestsTo('GET', '/limits').length >= limitsBefore + 3);
    const gone = nova.requestsTo('GET', `/servers/${holder}`).at(-1)!;
    expect(nova.requestsTo('GET', '/limits').slice(limitsBefore, limitsBefore + 3).every((r) => r.timeMs - gone.timeMs < 100)).toBe(true);
    for (const s of [await settle(calls[0]!)]) await settle(client.deleteServer(s.id, { wait: true, intervalMs: 5 }));
    for (const p of calls.slice(1)) {
      const s = await settle(p);
      await settle(client.deleteServer(s.id, { wait: true, intervalMs: 5 }));
    }
    await guard.close();
  });
});
