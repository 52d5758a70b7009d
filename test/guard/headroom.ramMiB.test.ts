/**
 * One spelling of RAM in the guard's public shapes (issue 32 item 7): `guard.headroom()` says
 * `ramMiB`, as the guard's needs, claims and the audit do; `ram` stays, the same object, as a
 * deprecated alias.
 */
import { describe, expect, it } from 'vitest';
import { QuotaGuard } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

describe('guard.headroom() RAM spelling', () => {
  it('ramMiB carries the RAM numbers in MiB; ram is the same object (deprecated alias)', async () => {
    const nova = await startNova({ maxTotalRAMSize: 4096 });
    nova.addServer({ flavorId: '2' }); // 2 vCPUs, 2048 MiB
    const guard = new QuotaGuard(clientFor(nova));

    const h = await guard.headroom();

    expect(h.ramMiB).toEqual({ max: 4096, used: 2048, inFlight: 0, headroom: 2048 });
    expect(h.ram).toBe(h.ramMiB);
    expect(JSON.parse(JSON.stringify(h)).ramMiB.headroom).toBe(2048);
  });
});
