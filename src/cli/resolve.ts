/**
 * Finding servers by name or id the way `openstack server delete` does (osc-lib
 * `utils.find_resource`): `GET /servers/{x}` first; on a 404, `GET /servers/detail?name=^x$` (Nova's
 * name filter is a regular expression, so `x` is escaped) and an exact match of the name.
 *
 * @module
 */
import pLimit from 'p-limit';
import { NotFoundError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';
import { checkPathId } from '../core/validate.js';

/** A server that could not be found (or not uniquely). */
export class ServerLookupError extends Error {}

/** What {@link resolveServers} found. */
export interface Resolved {
  /** Server ids, in the order given, each once. */
  ids: string[];
  /** The name or id each server id was given as (the first, when given twice). */
  givenAs: Map<string, string>;
  /** Names or ids that were not found (unless ignored) or matched several servers. */
  failures: Array<{ nameOrId: string; error: Error }>;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function isPathId(id: string): boolean {
  try {
    checkPathId('server id', id);
    return true;
  } catch {
    return false;
  }
}

/** Find one server by id, else by exact name. @throws {@link ServerLookupError}; API errors as they are. */
export async function resolveServer(client: NovaClient, nameOrId: string): Promise<string | undefined> {
  if (isPathId(nameOrId)) {
    try {
      return (await client.getServer(nameOrId)).id;
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
    }
  }
  const listed = await client.listServers({ name: `^${escapeRegExp(nameOrId)}$` });
  const exact = listed.filter((s) => s.name === nameOrId);
  if (exact.length === 1) return exact[0]!.id;
  if (exact.length > 1) throw new ServerLookupError(`More than one server exists with the name '${nameOrId}'.`);
  return undefined;
}

/**
 * Resolve each name or id (at most `concurrency` lookups at once). A server that does not exist is a
 * failure `No server with a name or ID of 'x' exists.`, or skipped with `ignoreMissing`.
 */
export async function resolveServers(client: NovaClient, namesOrIds: readonly string[], options: { concurrency: number; ignoreMissing: boolean }): Promise<Resolved> {
  const limit = pLimit(options.concurrency);
  const results = await Promise.all(
    namesOrIds.map((x) =>
      limit(async () => {
        try {
          const id = await resolveServer(client, x);
          if (id === undefined && !options.ignoreMissing) return { x, error: new ServerLookupError(`No server with a name or ID of '${x}' exists.`) };
          return { x, id };
        } catch (e) {
          return { x, error: e as Error };
        }
      }),
    ),
  );
  const givenAs = new Map<string, string>();
  const failures: Resolved['failures'] = [];
  for (const r of results) {
    if ('error' in r && r.error) failures.push({ nameOrId: r.x, error: r.error });
    else if ('id' in r && r.id !== undefined && !givenAs.has(r.id)) givenAs.set(r.id, r.x);
  }
  return { ids: [...givenAs.keys()], givenAs, failures };
}
