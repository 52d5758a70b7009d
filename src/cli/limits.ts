/**
 * `nova-guard limits show --absolute` (and the older `nova-guard limits [--json]`): the absolute
 * limits of `GET /limits` (Nova API reference, "Limits").
 *
 * `limits show --absolute` prints what `openstack limits show --absolute` prints for compute: a list
 * with the columns `Name` and `Value`, one row per absolute limit in Nova's order, unlimited as -1,
 * in the formats of `-f table|json|value|yaml`. `limits` without `show` prints the core, RAM (MiB)
 * and instance headroom as a list (columns `Resource`, `Max`, `Used`, `Headroom`) in the same
 * formats, with `-c`; `--json` keeps its older JSON object.
 *
 * @module
 */
import type { Command } from 'commander';
import { ValidationError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';
import { withWaitNotice } from './waitNotice.js';
import { addFormatOptions, checkFormatFlags, formatList, type Cell, type FormatFlags } from './format.js';

/** Unlimited as Nova writes it: -1. */
const nova = <T>(n: T): T | -1 => (n === Number.POSITIVE_INFINITY ? -1 : n);

/** Register `limits` (and `limits show`) on the root program. */
export function registerLimitsCommand(program: Command, getClient: () => Promise<NovaClient>): void {
  const limits = addFormatOptions(
    program
      .command('limits')
      .description('show the core, RAM (MiB) and instance headroom (columns Resource, Max, Used, Headroom; -1 unlimited in json/yaml); `limits show --absolute` prints the absolute limits as openstack does')
      .option('--json', 'print the old JSON object (max, used and headroom per resource, and every absolute limit)'),
  ).action(async (flags: FormatFlags & { json?: boolean }) => {
      checkFormatFlags(flags);
      const client = await getClient();
      const limits = await withWaitNotice(client, (hooks) => client.getLimits(hooks));
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
          rows.map(([name, max, used]) => [name.split(' ')[0], { max: nova(max), used, headroom: nova(headroom(max, used)) }]),
        );
        console.log(JSON.stringify({ ...json, absolute: Object.fromEntries(Object.entries(a).map(([k, v]) => [k, nova(v)])), requestId: limits.requestId }, null, 2));
        return;
      }
      // Table and value: 'unlimited' and '-' as before; json and yaml: numbers, -1 unlimited, null unknown.
      const words = (flags.format ?? 'table') === 'table' || flags.format === 'value';
      const c = (n: number | undefined): Cell => (n === undefined ? (words ? '-' : null) : n === Number.POSITIVE_INFINITY ? (words ? 'unlimited' : -1) : n);
      console.log(formatList(['Resource', 'Max', 'Used', 'Headroom'], rows.map(([name, max, used]) => [name, c(max), c(used), c(headroom(max, used))]), flags));
    });
  const show = addFormatOptions(
    limits
      .command('show')
      .description('show compute limits (like `openstack limits show --absolute`)')
      .option('--absolute', 'show absolute limits')
      .option('--rate', 'show rate limits (Nova has none since the v2.1 API; an empty list)'),
  ).action(async (own: FormatFlags & { absolute?: boolean; rate?: boolean }) => {
    // `limits show --absolute -f json`: commander hands -f/-c after an unknown flag to `limits`, which
    // has them too; a format flag given on the command line is show's wherever it landed.
    const flags = { ...own };
    for (const k of ['format', 'column', 'noindent', 'maxWidth', 'quote'] as const) {
      if (show.getOptionValueSource(k) !== 'cli' && limits.getOptionValueSource(k) === 'cli') (flags as Record<string, unknown>)[k] = limits.getOptionValue(k);
    }
    // openstack: "--absolute" and "--rate" are a required, mutually exclusive group (argparse, exit 2).
    if (Boolean(flags.absolute) === Boolean(flags.rate)) throw new ValidationError('one of the arguments --absolute --rate is required');
    checkFormatFlags(flags);
    const client = await getClient();
    if (flags.rate) {
      console.log(formatList(['Verb', 'URI', 'Value', 'Remain', 'Unit', 'Next Available'], [], flags));
      return;
    }
    const { absolute } = await withWaitNotice(client, (hooks) => client.getLimits(hooks));
    const rows = Object.entries(absolute)
      .filter((e): e is [string, number] => typeof e[1] === 'number')
      .map(([k, v]) => [k, nova(v)] as const);
    console.log(formatList(['Name', 'Value'], rows, flags));
  });
}
