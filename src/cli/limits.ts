/**
 * `nova-guard limits show --absolute` (and the older `nova-guard limits [--json]`): the absolute
 * limits of `GET /limits` (Nova API reference, "Limits").
 *
 * `limits show --absolute` prints what `openstack limits show --absolute` prints for compute: a list
 * with the columns `Name` and `Value`, one row per absolute limit in Nova's order, unlimited as -1,
 * in the formats of `-f table|json|value|yaml`. `limits` without `show` keeps its table of the core,
 * RAM (MiB) and instance headroom.
 *
 * @module
 */
import type { Command } from 'commander';
import { ValidationError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';
import { withWaitNotice } from './waitNotice.js';
import { addFormatOptions, checkFormatFlags, formatList, type FormatFlags } from './format.js';

function fmt(n: number | undefined): string {
  if (n === undefined) return '-';
  return n === Number.POSITIVE_INFINITY ? 'unlimited' : String(n);
}

const nova = (n: number): number => (n === Number.POSITIVE_INFINITY ? -1 : n);

/** Register `limits` (and `limits show`) on the root program. */
export function registerLimitsCommand(program: Command, getClient: () => Promise<NovaClient>): void {
  const limits = program
    .command('limits')
    .description('show absolute limits and the core, RAM (MiB) and instance headroom; `limits show --absolute` prints them as openstack does')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }) => {
      const client = await getClient();
      const limits = await withWaitNotice(client, (onAttempt) => client.getLimits({ onAttempt }));
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
  addFormatOptions(
    limits
      .command('show')
      .description('show compute limits (like `openstack limits show --absolute`)')
      .option('--absolute', 'show absolute limits')
      .option('--rate', 'show rate limits (Nova has none since the v2.1 API; an empty list)'),
  ).action(async (flags: FormatFlags & { absolute?: boolean; rate?: boolean }) => {
    // openstack: "--absolute" and "--rate" are a required, mutually exclusive group (argparse, exit 2).
    if (Boolean(flags.absolute) === Boolean(flags.rate)) throw new ValidationError('one of the arguments --absolute --rate is required');
    checkFormatFlags(flags);
    const client = await getClient();
    if (flags.rate) {
      console.log(formatList(['Verb', 'URI', 'Value', 'Remain', 'Unit', 'Next Available'], [], flags));
      return;
    }
    const { absolute } = await withWaitNotice(client, (onAttempt) => client.getLimits({ onAttempt }));
    const rows = Object.entries(absolute)
      .filter((e): e is [string, number] => typeof e[1] === 'number')
      .map(([k, v]) => [k, nova(v)] as const);
    console.log(formatList(['Name', 'Value'], rows, flags));
  });
}
