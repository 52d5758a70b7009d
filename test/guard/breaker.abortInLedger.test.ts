/**
 * An abort while the ledger's one-call admission (`acquire`) is in flight, after it has read
 * `/limits`: the claim that admission takes when it answers late is given back at once, not left
 * to its lease (`leaseTtlMs`, 2 min), which would hold the headroom from every other caller. Fake
 * timers; the ledger is the in-process one behind a slow link (its answer 300 ms after the read).
 */
import { describe, expect, it } from 'vitest';
import { AbortError } from '../../src/errors/index.js';
import { rawHeadroomOf } from '../../src/ledger/headroom.js';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import type { AcquireRequest, Acquisition, LimitsReading, QuotaLedger } from '../../src/ledger/port.js';
import { settle, useFakeClock } from '../helpers.js';
import { faulty } from './support/testLedger.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `inner` (through the test ledger) with an `acquire` whose check and claim answer `lagMs` after its `/limits` read (a slow link to the store). */
function laggingAcquire(inner: InProcessQuotaLedger, lagMs: number): QuotaLedger {
  const ledger = faulty(inner);
  ledger.acquire = async (request: AcquireRequest, read: (s: AbortSignal | undefined) => Promise<LimitsReading>, signal: AbortSignal | undefined): Promise<Acquisition> => {
    const reading = await inner.limits(read, signal);
    await sleep(lagMs);
    const admission = await inner.admit({ place: request.place, needs: request.needs, headroom: rawHeadroomOf(reading.absolute), stamp: reading.stamp, ttlMs: request.ttlMs });
    const place = !admission.admitted && request.joinIfShort && !request.place ? await inner.join(request.needs) : request.place;
    return { ...admission, reading, place };
  };
  return ledger;
}

describe('abort while the ledger call is in flight', () => {
  it('the late claim of an aborted acquire is released: the next caller is admitted at once, not after the 2 min lease', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const guard = guardFor(nova, { ledger: laggingAcquire(inner, 300), ledgerTimeoutMs: 5000, maxWaitMs: 60_000 });
    const a = new AbortController();
    const first = guard.createServer(body('a', '2'), { signal: a.signal }).catch((e: unknown) => e);
    setTimeout(() => a.abort(), 100); // after the read, before the claim answers
    expect(await settle(first)).toBeInstanceOf(AbortError);
    await settle(sleep(400)); // the late answer has come and been undone
    expect(inner.liveClaimIds()).toEqual([]);
    const t0 = Date.now();
    const second = await settle(guard.createServer(body('b', '2')));
    expect(second.status).toBe('ACTIVE');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(posts(nova)).toHaveLength(1);
    await guard.close();
  });
});
