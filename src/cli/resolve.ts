/**
 * Finding servers by name or id the way `openstack server delete` does (osc-lib
 * `utils.find_resource`): by id first; when no server has that id, `GET /servers/detail?name=^x$`
 * (Nova's name filter is a regular expression, so `x` is escaped) and an exact match of the name.
 *
 * - A UUID is taken as an id without a lookup (its DELETE and the delete's own check tell whether
 *   a server has that id), so deleting 40 ids costs no 40 extra GETs. When the delete finds no
 *   server with that id (`already-gone`), the CLI looks the string up as a name
 *   ({@link resolveByName}), as openstack does after its GET's 404: a server whose *name* looks like
 *   a UUID is found and deleted.
 * - Anything else cannot be a Nova server id (Nova answers 404 for a string that is not a UUID, and
 *   the library refuses one): it is looked up by name at once, with no `GET /servers/{x}`.
 *
 * @module
 */
import pLimit from 'p-limit';
import type { NovaClient } from '../nova/client.js';
import { canonicalServerId, checkPathId, isServerId } from '../core/validate.js';

/** A server that could not be found (or not uniquely). */
export class ServerLookupError extends Error {}

/** What {@link resolveServers} found. */
export interface Resolved {
  /** Server ids, in the order given, each once. */
  ids: string[];
  /** The name or id each server id was given as (the first, when given twice). */
  givenAs: Map<string, string>;
  /** Names or ids that matched several servers, or were not found (as a name either) and cannot be ids. */
  failures: Array<{ nameOrId: string; error: Error }>;
  /**
   * UUIDs, taken as ids without a lookup: the delete tells whether a server has that id
   * (`already-gone` means none has: the string is then looked up as a name, and only when no server
   * has that name either is it openstack's "No server with a name or ID" failure;
   * `OrphanedServerError` means Nova still lists and counts it under an orphaned instance mapping).
   */
  unverified: Set<string>;
}

/** openstack's message for a server that does not exist. */
export function notFound(nameOrId: string): ServerLookupError {
  return new ServerLookupError(`No server with a name or ID of '${nameOrId}' exists.`);
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** True when `id` can be a server id in a URL path (see `checkPathId`). */
export function isPathId(id: string): boolean {
  try {
    checkPathId('server id', id);
    return true;
  } catch {
    return false;
  }
}

/**
 * Find one server by its exact name (`GET /servers/detail?name=^x$`, then an exact match).
 * @returns its id, or undefined when no server has that name.
 * @throws {@link ServerLookupError} when several have it; API errors as they are.
 */
export async function resolveByName(client: NovaClient, name: string): Promise<string | undefined> {
  const listed = await client.listServers({ name: `^${escapeRegExp(name)}$` });
  const exact = listed.filter((s) => s.name === name);
  if (exact.length > 1) throw new ServerLookupError(`More than one server exists with the name '${name}'.`);
  return exact[0]?.id;
}

/**
 * Find one server by id, else by exact name. A UUID is taken as an id without a request
 * (`unverified`, see {@link Resolved.unverified}); any other string is looked up by name only (it
 * cannot be a Nova server id).
 * @throws {@link ServerLookupError}; API errors as they are.
 */
export async function resolveServer(client: NovaClient, nameOrId: string): Promise<{ id: string; unverified: boolean } | undefined> {
  if (isServerId(nameOrId)) return { id: canonicalServerId(nameOrId), unverified: true }; // Nova's form (lower case, dashed)
  const id = await resolveByName(client, nameOrId);
  return id === undefined ? undefined : { id, unverified: false };
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
          const found = await resolveServer(client, x);
          if (found === undefined && !options.ignoreMissing) return { x, error: notFound(x) };
          return { x, id: found?.id, unverified: found?.unverified === true };
        } catch (e) {
          return { x, error: e as Error };
        }
      }),
    ),
  );
  const givenAs = new Map<string, string>();
  const failures: Resolved['failures'] = [];
  const unverified = new Set<string>();
  for (const r of results) {
    if ('error' in r && r.error) failures.push({ nameOrId: r.x, error: r.error });
    else if ('id' in r && r.id !== undefined && !givenAs.has(r.id)) {
      givenAs.set(r.id, r.x);
      if (r.unverified) unverified.add(r.id);
    }
  }
  return { ids: [...givenAs.keys()], givenAs, failures, unverified };
}
