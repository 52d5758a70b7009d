/**
 * The public shape of the fake's usage numbers ({@link FakeUsage}: `ramMiB`, with `ram` its
 * deprecated old name) from and to its own counts ({@link UsageCounts}).
 *
 * @module
 */
import { ValidationError } from '../../errors/index.js';
import type { FakeUsage, UsageCounts } from './types.js';

/**
 * A {@link FakeUsage} reading of the fake's counts: `ramMiB`, and `ram` (its deprecated old name)
 * with the same number.
 */
export function usageReading(u: UsageCounts): FakeUsage {
  return { cores: u.cores, instances: u.instances, ramMiB: u.ram, ram: u.ram };
}

/**
 * The RAM (MiB) of a {@link FakeUsage} input: `ramMiB`, or `ram` (its old name); undefined when neither.
 * @throws {@link ValidationError} naming `where` when both are given with different values.
 */
export function ramMiBOf(where: string, u: Partial<FakeUsage>): number | undefined {
  if (u.ramMiB !== undefined && u.ram !== undefined && !Object.is(u.ramMiB, u.ram)) {
    throw new ValidationError(`${where}: ramMiB (${String(u.ramMiB)}) and its old name ram (${String(u.ram)}) differ: give ramMiB only`);
  }
  return u.ramMiB ?? u.ram;
}
