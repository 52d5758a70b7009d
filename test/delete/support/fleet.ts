/**
 * A fleet of one process (`InProcessFleet`) whose first client is the watcher and whose others consume,
 * for the tests of what a watcher's looks prove to the other hosts.
 */
import { expect, vi } from 'vitest';
import { InProcessFleet, type NovaClient } from '../../../src/index.js';

/**
 * Join `watcher` then each of `consumers` to a new fleet (on fake timers: the first round runs) and
 * check the roles: the first client watches, every other consumes.
 */
export async function joinedFleet<C extends NovaClient[]>(
  watcher: NovaClient,
  ...consumers: C
): Promise<{ fleet: InProcessFleet; watcher: InProcessFleet.Member; consumers: { [K in keyof C]: InProcessFleet.Member } }> {
  const fleet = new InProcessFleet();
  const first = await fleet.join(watcher);
  const rest: InProcessFleet.Member[] = [];
  for (const client of consumers) rest.push(await fleet.join(client));
  await vi.advanceTimersByTimeAsync(0);
  expect([first.watching, ...rest.map((m) => m.consuming)]).toEqual([true, ...rest.map(() => true)]);
  return { fleet, watcher: first, consumers: rest as { [K in keyof C]: InProcessFleet.Member } };
}
