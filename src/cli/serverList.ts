/**
 * `nova-guard server list [--name REGEX] [--status STATUS] [--long] [-f table|json|value|yaml|csv] [-c ...]`: `openstack server list`
 * (python-openstackclient `ListServer`): `GET /servers/detail` (all pages) with Nova's `name` filter
 * (a regular expression, matched by Nova as openstack's `--name` is) and `status`, printed with the
 * columns `ID`, `Name`, `Status`, `Networks`, `Image`, `Flavor`, image and flavor by name where Nova
 * lists them (`GET /images` at 2.1, `GET /flavors`; an unreadable list leaves the ids). `--long` adds
 * the columns of `openstack server list --long` (`LONG_COLUMNS`: task and power state, image and
 * flavor by name and id, availability zone, host, properties).
 *
 * @module
 */
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import type { ListServersQuery } from '../nova/options.js';
import type { Server } from '../core/types.js';
import { withWaitNotice } from './waitNotice.js';
import { addFormatOptions, checkFormatFlags, formatList, type FormatFlags } from './format.js';
import { listFlavors, listImages, type Named } from './serverLookup.js';
import { LIST_COLUMNS, LONG_COLUMNS, serverLongRow, serverRow, type Names } from './serverView.js';

/** Names of the flavors and images `servers` use, where Nova lists them (a failed list: ids stay). */
export async function namesFor(client: NovaClient, servers: readonly Server[]): Promise<Names> {
  const needFlavors = servers.some((s) => typeof s.flavor?.original_name !== 'string' && s.flavor?.id !== undefined);
  const needImages = servers.some((s) => s['image'] && typeof s['image'] === 'object');
  const toMap = (xs: Named[]): Map<string, string> => new Map(xs.map((x) => [x.id, x.name]));
  const [flavors, images] = await Promise.all([
    needFlavors ? listFlavors(client).then(toMap, () => undefined) : undefined,
    needImages ? listImages(client).then(toMap, () => undefined) : undefined,
  ]);
  return { ...(flavors ? { flavors } : {}), ...(images ? { images } : {}) };
}

/** Register `list` under the `server` command. */
export function registerServerListCommand(server: Command, getClient: () => Promise<NovaClient>): void {
  addFormatOptions(
    server
      .command('list')
      .description('list servers (like `openstack server list`)')
      .option('--name <name-regex>', 'regular expression to match names against (Nova matches it)')
      .option('--status <status>', 'search by server status, e.g. ACTIVE, BUILD, ERROR')
      .option('--long', `list additional fields in output: ${LONG_COLUMNS.join(', ')}`),
  ).action(async (flags: FormatFlags & { name?: string; status?: string; long?: boolean }) => {
    checkFormatFlags(flags);
    const client = await getClient();
    const query: ListServersQuery = {};
    if (flags.name !== undefined) query.name = flags.name;
    if (flags.status !== undefined) query.status = flags.status.toUpperCase();
    const servers = await withWaitNotice(client, (hooks) => client.listServers(query, hooks));
    const names = await namesFor(client, servers);
    console.log(flags.long ? formatList(LONG_COLUMNS, servers.map((s) => serverLongRow(s, names)), flags) : formatList(LIST_COLUMNS, servers.map((s) => serverRow(s, names)), flags));
  });
}
