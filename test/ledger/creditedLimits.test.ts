/**
 * `creditedLimits` (`src/ledger/headroom.ts`): a kept reading's usage less a credited deletion
 * (`FreedCredit`). Odd readings: totals absent, not finite, below what is credited; limits untouched.
 */
import { describe, expect, it } from 'vitest';
import { creditedLimits } from '../../src/ledger/index.js';

const freed = { cores: 2, ramMiB: 2048, instances: 1 };

describe('creditedLimits', () => {
  it('subtracts the freed amounts from the used totals and leaves the limits as they are', () => {
    const out = creditedLimits({ maxTotalCores: 10, totalCoresUsed: 6, maxTotalRAMSize: 8192, totalRAMUsed: 4096, maxTotalInstances: 5, totalInstancesUsed: 3 }, freed);
    expect(out).toEqual({ maxTotalCores: 10, totalCoresUsed: 4, maxTotalRAMSize: 8192, totalRAMUsed: 2048, maxTotalInstances: 5, totalInstancesUsed: 2 });
  });

  it('a total the reading does not give stays absent; none of the three: undefined (no credit, the reading goes stale)', () => {
    expect(creditedLimits({ maxTotalCores: 10, totalCoresUsed: 6 }, freed)).toEqual({ maxTotalCores: 10, totalCoresUsed: 4 });
    expect(creditedLimits({ maxTotalCores: 10 }, freed)).toBeUndefined();
    expect(creditedLimits({}, freed)).toBeUndefined();
  });

  it('a used total that is not a finite number is left as it is (Infinity, NaN); unlimited limits (-1) are kept', () => {
    const out = creditedLimits({ maxTotalCores: -1, totalCoresUsed: Number.POSITIVE_INFINITY, totalRAMUsed: Number.NaN, totalInstancesUsed: 3 } as never, freed);
    expect(out).toMatchObject({ maxTotalCores: -1, totalCoresUsed: Number.POSITIVE_INFINITY, totalInstancesUsed: 2 });
    expect(Number.isNaN((out as Record<string, number>).totalRAMUsed)).toBe(true);
  });

  it('no credit (undefined) when a total is below what is credited: such a reading did not count the server (the Redis script refuses it too)', () => {
    expect(creditedLimits({ totalCoresUsed: 1, totalRAMUsed: 0, totalInstancesUsed: 0 }, freed)).toBeUndefined();
    expect(creditedLimits({ maxTotalCores: 10, totalCoresUsed: 6, totalRAMUsed: 4096, totalInstancesUsed: 0 }, freed)).toBeUndefined();
  });
});
