/**
 * `onWait`'s `reason` (QuotaWaitInfo): every wait for headroom says why it waits, so that a user (and
 * the CLI's wait line) never sees a wait with nothing after "for quota headroom:". Fake timers,
 * FakeNova, the in-process ledger. (`'ledger-out-of-reach'`: test/guard/ledgerOutage.test.ts;
 * `'ledger-settling'` on a real Redis within restartGraceMs: test/redis/newcomerVet.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { QuotaWaitInfo } from '../../src/guard/options.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';
import { faulty } from './support/testLedger.js';

useFakeClock();

describe("onWait's reason", () => {
  it("'short' when the quota lacks the create's cores; 'queued' for a create that fits alone behind one queued ahead", async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const held = nova.addServer({ flavorId: '2', status: 'ACTIVE' }); // 2 of 4 cores used
    const client = clientFor(nova);
    const ledger = new InProcessQuotaLedger({ clock: client.clock });
    const a: QuotaWaitInfo[] = [];
    const b: QuotaWaitInfo[] = [];
    const ga = guardFor(nova, { ledger, maxWaitMs: 400, onWait: (w) => void a.push(w) }, client);
    const gb = guardFor(nova, { ledger, maxWaitMs: 400, onWait: (w) => void b.push(w) }, client);
    const first = ga.createServer(body('a', '3')).catch((e: unknown) => e as Error); // 4 cores: short by 2
    await Promise.resolve();
    const second = gb.createServer(body('b', '2')).catch((e: unknown) => e as Error); // 2 cores: fits alone, not after a's 4
    await settle(Promise.all([first, second]));
    expect(a.length).toBeGreaterThan(0);
    expect(a.every((w) => w.reason === 'short' && w.shortfalls[0]?.needed === 4)).toBe(true);
    expect(b.length).toBeGreaterThan(0);
    expect(b[0]!.reason).toBe('queued');
    expect(b[0]!.shortfalls.map((s) => [s.resource, s.needed, s.headroom])).toEqual([['cores', 6, 2]]);
    expect(held.id).toBeTruthy();
    await ga.close();
    await gb.close();
  });

  it("'ledger-settling' when the reading and the claims leave room but the ledger admits nothing, never an empty 'short'", async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    const client = clientFor(nova);
    const inner = new InProcessQuotaLedger({ clock: client.clock });
    // A ledger that settles: it answers every admission "not admitted" (as Redis within restartGraceMs).
    const ledger = faulty(inner, () => 'ok');
    ledger.admit = async (request) => {
      const r = await inner.admit(request);
      if (r.admitted) await inner.release(r.claim, 'not-created');
      return { admitted: false, inFlight: r.inFlight, ahead: r.ahead };
    };
    const waits: QuotaWaitInfo[] = [];
    const guard = guardFor(nova, { ledger, maxWaitMs: 300, onWait: (w) => void waits.push(w) }, client);
    const err = await settle(guard.createServer(body('x')).catch((e: unknown) => e as Error));
    expect(err.name).toBe('QuotaWaitTimeoutError');
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.map((w) => [w.reason, w.shortfalls.length])).toEqual(waits.map(() => ['ledger-settling', 0]));
    await guard.close();
  });
});
