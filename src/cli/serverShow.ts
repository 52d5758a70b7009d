/**
 * `nova-guard server show SERVER [-f ...] [-c ...]`: `openstack server show` (python-openstackclient
 * `ShowServer`): the server found by id or name as `openstack server delete` finds it
 * (`resolve.ts`: a UUID by `GET /servers/{id}`, then as a name when no server has that id; any other
 * string by exact name), printed as a Field/Value table (`serverView.ts`). None is `No server with a
 * name or ID of 'x' exists.`, several `More than one server exists with the name 'x'.` (exit 1).
 *
 * @module
 */
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import type { Server } from '../core/types.js';
import { NotFoundError } from '../errors/index.js';
import { withWaitNotice } from './waitNotice.js';
import { addFormatOptions, checkFormatFlags, formatOne, type FormatFlags } from './format.js';
import { notFound, resolveByName, resolveServer } from './resolve.js';
import { namesFor } from './serverList.js';
import { serverFields } from './serverView.js';

/** The server `nameOrId` names. @throws `ServerLookupError` when none or several; API errors as they are. */
async function findServer(client: NovaClient, nameOrId: string): Promise<Server> {
  const found = await resolveServer(client, nameOrId);
  if (found === undefined) throw notFound(nameOrId);
  try {
    return await withWaitNotice(client, (hooks) => client.getServer(found.id, hooks));
  } catch (e) {
    // A UUID no server has as its id may be a server's name (openstack's find_resource).
    if (!found.unverified || !(e instanceof NotFoundError)) throw e;
    const byName = await resolveByName(client, nameOrId);
    if (byName === undefined) throw notFound(nameOrId);
    return client.getServer(byName);
  }
}

/** Register `show` under the `server` command. */
export function registerServerShowCommand(server: Command, getClient: () => Promise<NovaClient>): void {
  addFormatOptions(
    server
      .command('show')
      .description('show a server (like `openstack server show`); exit 1 when no server (or several) has that name or id')
      .argument('<server>', 'server to show (name or ID)'),
    { shell: true },
  ).action(async (nameOrId: string, flags: FormatFlags) => {
    checkFormatFlags(flags);
    const client = await getClient();
    const s = await findServer(client, nameOrId);
    console.log(formatOne(serverFields(s, await namesFor(client, [s])), flags));
  });
}
