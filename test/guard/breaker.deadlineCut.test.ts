/**
 * A healthy ledger that is a little slow (tens of ms a call), at the end of a call's `maxWaitMs`:
 * its last call is cut to what is left of `maxWaitMs` (never past it). That cut is the call's
 * deadline, not a ledger failure: no "quota ledger failed" warning for a ledger that answers. Fake
 * timers, FakeNova, the in-process ledger behind the test ledger's delay.
 */
import { describe, expect, it } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';
import { faulty, warnLog } from './support/testLedger.js';

useFakeClock();

describe("a ledger call cut by the call's maxWaitMs", () => {
  it.each([
    [68, 1052],
    [75, 1065],
  ])('ledger %s ms a call, maxWaitMs %s: QuotaWaitTimeoutError naming the shortfall, no ledger warning', async (lagMs, maxWaitMs) => {
    const nova = await startNova({ maxTotalCores: 2 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => lagMs);
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger, maxWaitMs, ledgerTimeoutMs: 2000 });
    const err = (await settle(guard.createServer(body('x', '2')).catch((e: unknown) => e))) as Error;
    expect(err.name).toBe('QuotaWaitTimeoutError');
    expect(err.message).toMatch(/cores: maxTotalCores=2 totalCoresUsed=2 requested=2/);
    expect(warnings().filter((m) => /quota ledger/.test(m))).toEqual([]);
    await guard.close();
  });
});
