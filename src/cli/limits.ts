/**
 * `nova-guard limits [--json]`: the absolute limits of `GET /limits` with the core, RAM and instance
 * headroom (Nova API reference, "Limits"), like `openstack limits show --absolute`.
 *
 * @module
 */
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';

function fmt(n: number | undefined): string {
  if (n === undefined) return '-';
  return n === Number.POSITIVE_INFINITY ? 'unlimited' : String(n);
}

/** Register `limits` on the root program. */
export function registerLimitsCommand(program: Command, getClient: () => Promise<NovaClient>): void {
  program
    .command('limits')
    .description('show absolute limits and the core, RAM (MiB) and instance headroom')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => {
      const client = await getClient();
      const limits = await client.getLimits();
      const a = limits.absolute;
      const rows: Array<[string, number | undefined, number | undefined]> = [
        ['cores', a.maxTotalCores, a.totalCoresUsed],
        ['ram (MiB)', a.maxTotalRAMSize, a.totalRAMUsed],
        ['instances', a.maxTotalInstances, a.totalInstancesUsed],
      ];
      const headroom = (max: number | undefined, used: number | undefined): number | undefined =>
        max === undefined || used === undefined ? undefined : Math.max(0, max - used);
      if (flags.json) {
        const json = Object.fromEntries(
          rows.map(([name, max, used]) => [name.split(' ')[0], { max: max === Infinity ? -1 : max, used, headroom: ((h) => (h === Infinity ? -1 : h))(headroom(max, used)) }]),
        );
        console.log(JSON.stringify({ ...json, absolute: Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v === Infinity ? -1 : v])), requestId: limits.requestId }, null, 2));
        return;
      }
      console.log('resource     max         used        headroom');
      for (const [name, max, used] of rows) {
        console.log(`${name.padEnd(12)} ${fmt(max).padEnd(11)} ${fmt(used).padEnd(11)} ${fmt(headroom(max, used))}`);
      }
    });
}
