/**
 * The claim tag of a guarded call: the server metadata `nova-guard-claim: <uuid>` every POST of the
 * call carries (Nova API reference, "Create Server", `metadata`), and the search for the servers
 * that carry it.
 *
 * The search is `GET /servers/detail?name=^<name>$` (Nova API reference, "List Servers Detailed":
 * `name` is a regular expression), filtered by the tag on the client side: Nova silently ignores
 * the filters a non-admin may not use, `metadata` among them (Nova API reference, "List Servers").
 *
 * @module
 */
import type { Server } from '../core/types.js';
import { statusOf } from '../core/counting.js';
import type { GuardState } from './state.js';

/** The metadata key of the guard's claim tag. */
export const CLAIM_TAG_KEY = 'nova-guard-claim';

/** A regular expression that matches exactly `name` (Nova's `name` filter is a regular expression). */
export function exactNamePattern(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

/** True for a server already deleted (status `DELETED` or `SOFT_DELETED`). */
export function isDeletedStatus(server: Server): boolean {
  const s = statusOf(server);
  return s === 'DELETED' || s === 'SOFT_DELETED';
}

/**
 * The listed servers named `name` that carry the claim tag `tag` (deleted ones included: see
 * {@link isDeletedStatus}).
 * @throws the listing's error.
 */
export async function listTagged(g: Pick<GuardState, 'client'>, name: string, tag: string, signal?: AbortSignal): Promise<Server[]> {
  const servers = await g.client.listServers({ name: exactNamePattern(name) }, signal ? { signal } : {});
  return servers.filter((s) => s.metadata?.[CLAIM_TAG_KEY] === tag);
}
