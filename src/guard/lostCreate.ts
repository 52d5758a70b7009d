/**
 * A create whose answer was lost: the guard never leaves a server behind because it could not read
 * Nova's answer to `POST /servers` (Nova API reference, "Create Server").
 *
 * Every POST of a guarded call carries the call's claim tag: server metadata
 * `nova-guard-claim: <uuid>` (Nova API reference, "Create Server", `metadata`), next to the caller's
 * name, and the ledger claim's `nova-guard-claim-id`, `nova-guard-token` and `nova-guard-holder`. When the outcome of a POST is unknown ({@link isAmbiguousCreateError}: no answer (reset,
 * request timeout), a 5xx, a 2xx without a `server` object, or a 429 that is not Nova's own
 * `overLimit`, which a proxy may send after forwarding the request), the guard searches for the
 * server, keeping its claim on the quota meanwhile:
 *
 * - `GET /servers/detail?name=^<name>$` (Nova API reference, "List Servers Detailed": `name` is a
 *   regular expression), filtered by the tag on the client side: Nova silently ignores the filters a
 *   non-admin may not use, `metadata` among them (Nova API reference, "List Servers");
 * - a search that finds the server adopts it: the call goes on as if the POST had answered 202
 *   (further servers with the same tag, from an earlier lost POST of the call, are deleted);
 * - the rule for "nothing was created": two searches that both succeed and find nothing, the first
 *   right after the answer and the next at least `lostCreateIntervalMs` later (Nova lists a server
 *   from the moment its create is accepted, as a build request). Then the POST is re-sent once (a
 *   proxy's 429 goes back to the rate-limit path instead: re-sent after Retry-After); a second
 *   unknown outcome with nothing created is thrown as the POST's error;
 * - after `lostCreateSearches` searches that neither found it nor made sure (listings failing):
 *   {@link CreateOutcomeUnknownError} naming the tag. A server that shows up later carries the tag:
 *   `reapServers({ metadataKey: 'nova-guard-claim', metadataValue: tag })` or a search by the tag
 *   finds it.
 *
 * The searches and the POST never take the caller's AbortSignal: an abort must not hide a server.
 *
 * @module
 */
import { InvalidResponseError, NovaApiError, NovaNetworkError, RateLimitError } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import type { CreateServerBody, Server } from '../core/types.js';
import { CreateOutcomeUnknownError } from './errors.js';
import type { Claim, GuardState, GuardedCall } from './state.js';
import type { LedgerClaim } from './ledger.js';
import { claimMetadata } from './ledgerUse.js';

/** The metadata key of the guard's claim tag. */
export const CLAIM_TAG_KEY = 'nova-guard-claim';

/**
 * True when a failed `POST /servers` may have created the server all the same: no answer (except a
 * refused connection), a 5xx, a 2xx of another shape, or a rate limit that is not Nova's own
 * `overLimit` fault (a proxy's 429 may come after it forwarded the request).
 */
export function isAmbiguousCreateError(error: unknown): boolean {
  if (error instanceof RateLimitError) return error.fault !== 'overLimit';
  if (error instanceof NovaNetworkError) return error.code !== 'ECONNREFUSED';
  if (error instanceof InvalidResponseError) return true;
  return error instanceof NovaApiError && error.status >= 500;
}

/**
 * `body` with the claim tag added to its metadata, and with `claim` the claim's id, fencing token
 * and holder (`claimMetadata`).
 */
export function tagBody(body: CreateServerBody, tag: string, claim?: LedgerClaim): CreateServerBody {
  const tags = claim ? claimMetadata(CLAIM_TAG_KEY, tag, claim) : { [CLAIM_TAG_KEY]: tag };
  return { ...body, metadata: { ...(body.metadata ?? {}), ...tags } };
}

/** A regular expression that matches exactly `name` (Nova's `name` filter is a regular expression). */
export function exactNamePattern(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

/** What the searches after one lost answer found. */
export type SearchResult =
  | { kind: 'found'; servers: Server[]; searches: number }
  | { kind: 'absent'; searches: number }
  | { kind: 'unknown'; searches: number; lastError: Error | undefined };

/** Search for the servers of `name` tagged `tag`. See the module description for the rule. */
export async function searchLostCreate(g: GuardState, name: string, tag: string): Promise<SearchResult> {
  let clean = 0;
  let lastError: Error | undefined;
  for (let i = 1; i <= g.opts.lostCreateSearches; i++) {
    if (i > 1) await sleep(g.clock, g.opts.lostCreateIntervalMs);
    try {
      const servers = await g.client.listServers({ name: exactNamePattern(name) });
      const mine = servers.filter((s) => s.metadata?.[CLAIM_TAG_KEY] === tag && !/^(SOFT_)?DELETED$/i.test(String(s.status ?? '')));
      if (mine.length > 0) return { kind: 'found', servers: mine, searches: i };
      if (++clean >= 2) return { kind: 'absent', searches: i };
    } catch (e) {
      lastError = e instanceof Error ? e : new Error(String(e));
      g.log.warn({ claimTag: tag, err: lastError.message, search: i }, 'search for a create of unknown outcome failed');
    }
  }
  return { kind: 'unknown', searches: g.opts.lostCreateSearches, lastError };
}

/**
 * `POST /servers` with the call's claim tag; after an unknown outcome, search (see the module
 * description). Resolves the server the POST answered or the search adopted.
 * @throws the POST's error when it created nothing; {@link CreateOutcomeUnknownError} when the
 * search could not settle it (the claim is then the caller's to end as counted).
 */
export async function postOrAdopt(g: GuardState, call: GuardedCall, body: CreateServerBody, claim?: Claim): Promise<Server> {
  const request = tagBody(body, call.claimTag, claim?.lc);
  let lost = 0;
  for (;;) {
    try {
      return await g.client.createServer(request, { retry: false });
    } catch (e) {
      if (!isAmbiguousCreateError(e)) throw e;
      lost++;
      g.stats.ambiguousCreates++;
      const requestId = e instanceof NovaApiError ? e.requestId : undefined;
      g.log.warn({ claimTag: call.claimTag, name: body.name, err: (e as Error).message, requestId }, 'create answer lost or garbled: searching for the server by its claim tag');
      const found = await searchLostCreate(g, body.name, call.claimTag);
      if (found.kind === 'found') return adopt(g, call, found.servers);
      if (found.kind === 'unknown') {
        g.log.error({ claimTag: call.claimTag, name: body.name, searches: found.searches }, 'create outcome unknown: a server may exist with this claim tag');
        throw new CreateOutcomeUnknownError({ claimTag: call.claimTag, serverName: body.name, posts: lost, searches: found.searches, cause: e, lastSearchError: found.lastError });
      }
      // Nothing was created.
      if (e instanceof RateLimitError || lost > 1) throw e;
      call.posts++;
      g.log.warn({ claimTag: call.claimTag, name: body.name, searches: found.searches }, 'nothing was created: re-sending the POST once');
    }
  }
}

/** Adopt the first server found; delete any other with the same tag (an earlier lost POST of the call). */
async function adopt(g: GuardState, call: GuardedCall, servers: Server[]): Promise<Server> {
  const [server, ...extra] = servers as [Server, ...Server[]];
  g.stats.adoptedServers++;
  g.log.warn({ claimTag: call.claimTag, serverId: server.id, status: server.status }, 'found the server of a lost create answer: adopted');
  for (const s of extra) {
    g.stats.cleanups++;
    try {
      await g.client.deleteServer(s.id, { intervalMs: g.opts.activeIntervalMs, ...g.opts.deleteOptions, wait: true });
    } catch (e) {
      g.log.error({ serverId: s.id, claimTag: call.claimTag, err: (e as Error)?.message }, 'could not delete a duplicate server of a lost create: it is left behind');
    }
  }
  return server;
}
