/**
 * Headroom computation, the fit verdict and the claim ledger of the in-process ledger: plain
 * functions, exact values (docs/field-cases.md: "Unlimited, zero, and usage above the limit", "Reported usage is
 * wrong or stale", "Several workers, one quota").
 */
import { describe, expect, it } from 'vitest';
import { parseAbsoluteLimits } from '../../src/nova/client.js';
import { checkFit, computeHeadroom, describeShortfalls, shortfallResources, NO_NEEDS } from '../../src/ledger/headroom.js';
import { ClaimLedger } from '../../src/ledger/claims.js';

const meta = { requestId: 'req-1', readAtMs: 1000 };

describe('computeHeadroom', () => {
  it('-1 (unlimited) gives Infinity, never negative or NaN', () => {
    const abs = parseAbsoluteLimits({
      maxTotalCores: -1,
      totalCoresUsed: 514,
      maxTotalInstances: -1,
      totalInstancesUsed: 257,
      maxTotalRAMSize: -1,
      totalRAMUsed: 1052672,
    });
    const h = computeHeadroom(abs, NO_NEEDS, meta);
    expect(h).toEqual({
      cores: { max: Infinity, used: 514, inFlight: 0, headroom: Infinity },
      instances: { max: Infinity, used: 257, inFlight: 0, headroom: Infinity },
      ramMiB: { max: Infinity, used: 1052672, inFlight: 0, headroom: Infinity },
      ram: { max: Infinity, used: 1052672, inFlight: 0, headroom: Infinity },
      source: 'limits',
      requestId: 'req-1',
      readAtMs: 1000,
    });
    expect(checkFit({ cores: 2, ramMiB: 2048, instances: 1 }, h)).toEqual({ verdict: 'fits', shortfalls: [] });
  });

  it('a limit of 0 is a real limit: needing 2 cores can never fit', () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 0, totalCoresUsed: 0 }), NO_NEEDS, meta);
    expect(h.cores).toEqual({ max: 0, used: 0, inFlight: 0, headroom: 0 });
    const fit = checkFit({ cores: 2, ramMiB: 0, instances: 0 }, h);
    expect(fit.verdict).toBe('never');
    expect(fit.shortfalls).toEqual([{ resource: 'cores', needed: 2, max: 0, used: 0, inFlight: 0, headroom: 0 }]);
  });

  it('used above max (quota lowered) clamps headroom to 0 and is short, not permanent', () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 400, totalCoresUsed: 514 }), NO_NEEDS, meta);
    expect(h.cores.headroom).toBe(0);
    expect(checkFit({ cores: 2, ramMiB: 0, instances: 0 }, h).verdict).toBe('short');
  });

  it('missing fields are unknown (undefined) and never block', () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 10 }), NO_NEEDS, meta);
    expect(h.cores).toEqual({ max: 10, used: undefined, inFlight: 0, headroom: undefined });
    expect(h.ram).toEqual({ max: undefined, used: undefined, inFlight: 0, headroom: undefined });
    expect(checkFit({ cores: 4, ramMiB: 4096, instances: 1 }, h).verdict).toBe('fits');
  });

  it('subtracts in-flight claims per resource', () => {
    const abs = parseAbsoluteLimits({ maxTotalCores: 10, totalCoresUsed: 2, maxTotalRAMSize: 8192, totalRAMUsed: 2048, maxTotalInstances: 5, totalInstancesUsed: 1 });
    const h = computeHeadroom(abs, { cores: 4, ramMiB: 4096, instances: 2 }, meta);
    expect([h.cores.headroom, h.ram.headroom, h.instances.headroom]).toEqual([4, 2048, 2]);
    expect(checkFit({ cores: 4, ramMiB: 2048, instances: 1 }, h).verdict).toBe('fits');
    expect(checkFit({ cores: 5, ramMiB: 2048, instances: 1 }, h).shortfalls.map((s) => s.resource)).toEqual(['cores']);
  });

  it("needs exactly the headroom fits (Nova: used + requested <= limit)", () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 515, totalCoresUsed: 513 }), NO_NEEDS, meta);
    expect(checkFit({ cores: 2, ramMiB: 0, instances: 0 }, h).verdict).toBe('fits');
    expect(checkFit({ cores: 3, ramMiB: 0, instances: 0 }, h).verdict).toBe('short');
  });

  it("'never' wins over 'short' and lists only the impossible resources", () => {
    const abs = parseAbsoluteLimits({ maxTotalCores: 20, totalCoresUsed: 0, maxTotalRAMSize: 51200, totalRAMUsed: 51200 });
    const fit = checkFit({ cores: 32, ramMiB: 98304, instances: 1 }, computeHeadroom(abs, NO_NEEDS, meta));
    expect(fit.verdict).toBe('never');
    expect(fit.shortfalls.map((s) => s.resource)).toEqual(['cores', 'ram']);
  });
});

describe('describeShortfalls / shortfallResources', () => {
  it("the message names Nova's /limits keys and the numbers", () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 10, totalCoresUsed: 8 }), NO_NEEDS, meta);
    const fit = checkFit({ cores: 4, ramMiB: 0, instances: 0 }, h);
    expect(describeShortfalls(fit.shortfalls)).toBe('cores: maxTotalCores=10 totalCoresUsed=8 requested=4 inFlight=0');
    expect(shortfallResources(fit.shortfalls)).toEqual([{ name: 'cores', requested: 4, used: 8, allowed: 10 }]);
  });

  it('ram and instances keys', () => {
    const abs = parseAbsoluteLimits({ maxTotalRAMSize: 4096, totalRAMUsed: 4096, maxTotalInstances: 2, totalInstancesUsed: 2 });
    const fit = checkFit({ cores: 0, ramMiB: 512, instances: 1 }, computeHeadroom(abs, { cores: 0, ramMiB: 0, instances: 0 }, meta));
    expect(describeShortfalls(fit.shortfalls)).toBe(
      'instances: maxTotalInstances=2 totalInstancesUsed=2 requested=1 inFlight=0; ram: maxTotalRAMSize=4096 totalRAMUsed=4096 requested=512 inFlight=0',
    );
  });
});

describe('ClaimLedger', () => {
  it('sums active claims; not-created releases drop at once', () => {
    const l = new ClaimLedger();
    const a = l.claim({ cores: 2, ramMiB: 2048, instances: 1 });
    l.claim({ cores: 4, ramMiB: 4096, instances: 1 });
    expect(l.inFlight()).toEqual({ cores: 6, ramMiB: 6144, instances: 2 });
    l.release(a, 'not-created');
    l.release(a, 'not-created'); // idempotent
    expect(l.inFlight()).toEqual({ cores: 4, ramMiB: 4096, instances: 1 });
    expect(l.size).toBe(1);
  });

  it("a 'counted' release still counts for reads sent before it, not for reads sent after", () => {
    let now = 0;
    const l = new ClaimLedger(() => now);
    const c = l.claim({ cores: 2, ramMiB: 0, instances: 1 });
    now = 10;
    const early = l.beginRead();
    now = 20;
    l.release(c, 'counted');
    now = 30;
    const late = l.beginRead();
    expect(l.inFlight(early)).toEqual({ cores: 2, ramMiB: 0, instances: 1 });
    expect(l.inFlight(late)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
    l.endRead(early);
    l.endRead(late);
    const after = l.beginRead();
    expect(l.inFlight(after)).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });
});

describe('unified limits: a limit of 0 with usage above it', () => {
  it('is a limit not registered in Keystone: headroom unknown (Nova decides), never "never fits"', () => {
    const h = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 0, totalCoresUsed: 12, maxTotalInstances: 10, totalInstancesUsed: 2 }), { cores: 0, ramMiB: 0, instances: 0 }, { readAtMs: 0 });
    expect(h.cores).toMatchObject({ max: undefined, used: 12, headroom: undefined });
    expect(checkFit({ cores: 2, ramMiB: 0, instances: 1 }, h).verdict).toBe('fits');
    // A limit of 0 with nothing used is a real 0: never fits.
    const zero = computeHeadroom(parseAbsoluteLimits({ maxTotalCores: 0, totalCoresUsed: 0 }), { cores: 0, ramMiB: 0, instances: 0 }, { readAtMs: 0 });
    expect(checkFit({ cores: 2, ramMiB: 0, instances: 1 }, zero).verdict).toBe('never');
  });
});

