/**
 * A create whose answer was lost: the guard never leaves a server behind because it could not read
 * Nova's answer to `POST /servers` (Nova API reference, "Create Server").
 *
 * Every POST of a guarded call carries the call's claim tag: server metadata
 * `nova-guard-claim: <uuid>` (`claimTag.ts`), next to the caller's name, and the ledger claim's
 * `nova-guard-claim-id`, `nova-guard-token` and `nova-guard-holder`. When the outcome of a POST is
 * unknown ({@link isAmbiguousCreateError}: no answer (reset, request timeout), a 5xx, a 2xx without
 * a `server` object, or a 429 that is not Nova's own `overLimit`, which a proxy may send after
 * forwarding the request), the call's tag is watched (`lateCreates.ts`) and the guard searches for
 * the server, keeping its claim on the quota meanwhile:
 *
 * - a search that finds the server adopts it: the call goes on as if the POST had answered 202
 *   (further servers with the same tag, from an earlier lost POST of the call, are deleted);
 * - after the first unknown outcome of an attempt, one search that succeeds and finds nothing lets
 *   the POST go again at once, with the same tag (and the same claim). The lost POST may still
 *   land: its server is then a twin of the re-sent one's, found by the tag and deleted by the watch
 *   (`lateCreates.ts`), and until the watch ends the guard holds one more claim for it, so that the
 *   ledger counts it while it may live (when that search started once the POST's bound below had
 *   passed, as after Nova's own 5xx answer, nothing of it can land: no twin is watched for). A search that fails (Nova erroring) is not a clean one: the
 *   guard waits and searches again, `lostCreateIntervalMs` apart and doubling, never past the POST's
 *   bound (below) nor the call's `maxWaitMs`; a slow Nova gets fewer requests, never more. The POST is
 *   sent on a connection of its own (`src/transport`), never on a kept-alive one that sat idle, so a
 *   reset is a real fault, not a stale socket's;
 * - the rule for "nothing was created", for the call's final answer after a second unknown outcome
 *   (the POST is then not re-sent): two searches that both succeed and find nothing, the last one
 *   started after the POST's time surely passed (`sent + client.requestTimeoutMs +
 *   novaApiTimeoutMs`; at Nova's own 5xx answer, nova-api is done with it at once). The searches
 *   are spaced as above, the last landing on that bound, within the call's `maxWaitMs`; then the
 *   POST's error is thrown. A proxy's 429 goes back to the rate-limit path instead: re-sent after
 *   Retry-After once two searches found nothing, its tag still watched;
 * - after `lostCreateSearches` failed searches, when the call's `maxWaitMs` runs out before a
 *   search settled it, or on an abort: {@link CreateOutcomeUnknownError} naming the tag. The guard goes on
 *   watching the tag after the call and deletes a server that shows up with it (`lateCreates.ts`);
 *   `reapServers({ metadataKey: 'nova-guard-claim', metadataValue: tag })` finds one later still.
 *
 * Nova's own `overLimit` (429, or 413 with Retry-After) is re-sent after Retry-After without a
 * search, its tag watched in the same way.
 *
 * The listings and the POST never take the caller's AbortSignal (an abort must not hide a server);
 * an abort ends the wait between searches, and a clean search after it does not send the POST
 * again: {@link CreateOutcomeUnknownError} (unless that search already settled the lost POST's fate).
 *
 * @module
 */
import { InvalidResponseError, NovaApiError, NovaNetworkError, RateLimitError } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import type { CreateServerBody, Server } from '../core/types.js';
import { CreateOutcomeUnknownError } from './errors.js';
import type { Claim, GuardState } from './state.js';
import type { GuardedCall } from './guardedCall.js';
import type { LedgerClaim } from '../ledger/index.js';
import { claimMetadata } from './ledgerUse.js';
import { CLAIM_TAG_KEY, isDeletedStatus, listTagged } from './claimTag.js';
import { claimForTwin, deleteExtra, fateKnown, noteNothingMore, noteServer, noteUncertainPost, type LateCreateWatch } from './lateCreates.js';

export { CLAIM_TAG_KEY, exactNamePattern } from './claimTag.js';

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

/** What the searches after one lost answer found. */
export type SearchResult =
  | { kind: 'found'; servers: Server[]; searches: number }
  /** `pastBound`: the clean search that settled it started once the watch's bound had passed. */
  | { kind: 'absent'; searches: number; pastBound: boolean }
  | { kind: 'unknown'; searches: number; lastError: Error | undefined };

/**
 * When {@link searchLostCreate} calls it absent:
 * - `'first-clean'`: at the first search that succeeds and finds nothing (the POST may be sent again:
 *   a server of the lost one that lands later is a twin, deleted by the watch);
 * - `'two-clean'`: at the second such search (a proxy's 429: the rate-limit path re-sends it);
 * - `'bound'`: at the second such search, the last one started once the watch's bound passed
 *   (nothing was created, for the call's final answer).
 */
export type SearchUntil = 'first-clean' | 'two-clean' | 'bound';

/** How {@link searchLostCreate} searches. */
export interface SearchRule {
  /** When a clean search settles it: see {@link SearchUntil}. */
  until: SearchUntil;
  /** The caller's signal: ends the wait between searches (never a listing). */
  signal: AbortSignal | undefined;
}

/**
 * Search for the servers of `name` tagged `w.tag` that no earlier POST of the call accounts for.
 * See the module description for the rule. Between searches (after a failed one, or for a second
 * clean one): `lostCreateIntervalMs`, doubling after each while the watch's bound is ahead (never
 * past it, nor past the call's `maxWaitMs`), `lostCreateIntervalMs` once it has passed.
 */
export async function searchLostCreate(g: GuardState, call: GuardedCall, w: LateCreateWatch, name: string, rule: SearchRule): Promise<SearchResult> {
  let clean = 0;
  let failed = 0;
  let lastError: Error | undefined;
  let waitMs = g.opts.lostCreateIntervalMs;
  const stop = rule.signal ? AbortSignal.any([rule.signal, g.closing.signal]) : g.closing.signal;
  for (let i = 1; ; i++) {
    if (i > 1) {
      let delayMs = g.opts.lostCreateIntervalMs;
      const toBound = w.untilMs - g.clock.now();
      if (rule.until !== 'two-clean' && toBound > 0) {
        delayMs = waitMs > 0 ? Math.min(waitMs, toBound) : toBound;
        waitMs *= 2;
        // Never past the call's maxWaitMs: the watch goes on after the call instead.
        const left = call.remainingMs();
        if (left <= 0) return { kind: 'unknown', searches: i - 1, lastError };
        delayMs = Math.min(delayMs, left);
      }
      try {
        await sleep(g.clock, delayMs, stop);
      } catch {
        return { kind: 'unknown', searches: i - 1, lastError };
      }
    }
    const startedAt = g.clock.now();
    try {
      const tagged = await listTagged(g, name, w.tag);
      const mine = tagged.filter((s) => !isDeletedStatus(s) && !w.seen.has(s.id));
      if (mine.length > 0) return { kind: 'found', servers: mine, searches: i };
      clean++;
      const pastBound = startedAt >= w.untilMs;
      if (rule.until === 'first-clean' || (clean >= 2 && (rule.until === 'two-clean' || pastBound))) return { kind: 'absent', searches: i, pastBound };
    } catch (e) {
      lastError = e instanceof Error ? e : new Error(String(e));
      g.log.warn({ claimTag: w.tag, err: lastError.message, search: i }, 'search for a create of unknown outcome failed');
      if (++failed >= g.opts.lostCreateSearches) return { kind: 'unknown', searches: i, lastError };
    }
  }
}

/**
 * `POST /servers` with the call's claim tag; after an unknown outcome, search (see the module
 * description). Resolves the server the POST answered or the search adopted.
 * @throws the POST's error when it created nothing; {@link CreateOutcomeUnknownError} when the
 * search could not settle it (the claim is then the caller's to end as counted).
 */
export async function postOrAdopt(g: GuardState, call: GuardedCall, body: CreateServerBody, claim?: Claim, signal?: AbortSignal): Promise<Server> {
  const request = tagBody(body, call.claimTag, claim?.lc);
  let lost = 0;
  for (;;) {
    const sentAtMs = g.clock.now();
    try {
      const server = await g.client.createServer(request, { retry: false });
      noteServer(g, call, server.id, true);
      return server;
    } catch (e) {
      const rateLimited = e instanceof RateLimitError;
      if (!isAmbiguousCreateError(e) && !rateLimited) throw e;
      // From here on, the call's tag is watched until every POST's fate is known.
      const w = noteUncertainPost(g, call, body.name, sentAtMs, e);
      // Nova's own overLimit: re-sent after Retry-After by the rate-limit path, the tag watched.
      if (!isAmbiguousCreateError(e)) throw e;
      lost++;
      g.stats.ambiguousCreates++;
      const requestId = e instanceof NovaApiError ? e.requestId : undefined;
      g.log.warn({ claimTag: call.claimTag, name: body.name, err: (e as Error).message, requestId }, 'create answer lost or garbled: searching for the server by its claim tag');
      // The first lost answer: one clean search lets the POST go again. The second: only the bound
      // says that nothing was created, for the call's final answer.
      const until: SearchUntil = rateLimited ? 'two-clean' : lost === 1 ? 'first-clean' : 'bound';
      const found = await searchLostCreate(g, call, w, body.name, { until, signal });
      if (found.kind === 'found') return adopt(g, call, w, found.servers);
      const unknown = (searches: number, lastError: Error | undefined): CreateOutcomeUnknownError => {
        g.log.error({ claimTag: call.claimTag, name: body.name, searches }, 'create outcome unknown: a server may exist with this claim tag (watched after the call)');
        return new CreateOutcomeUnknownError({ claimTag: call.claimTag, serverName: body.name, posts: lost, searches, cause: e, lastSearchError: lastError });
      };
      if (found.kind === 'unknown') throw unknown(found.searches, found.lastError);
      // A clean search that started once the bound passed: nothing more of the POSTs so far will
      // land. Before it (a rate limit, or the first lost answer), the watch goes on.
      const settled = found.pastBound && until !== 'two-clean';
      if (settled) noteNothingMore(w);
      if (rateLimited || lost > 1) throw e;
      // An abort (or the guard's close) sends no POST again: the lost one's fate stays unknown
      // unless that search settled it.
      if (signal?.aborted === true || g.closing.signal.aborted) throw settled ? e : unknown(found.searches, undefined);
      call.posts++;
      // The lost POST may still land (a twin): the ledger counts it while it may live.
      if (!fateKnown(w)) await claimForTwin(g, w, claim);
      g.log.warn({ claimTag: call.claimTag, name: body.name, searches: found.searches, twinWatched: !fateKnown(w) }, 'no server found for the lost create answer: re-sending the POST with the same claim tag (a server of the lost POST that lands later is deleted)');
    }
  }
}

/** Adopt the first server found; delete any other with the same tag (an earlier lost POST of the call). */
async function adopt(g: GuardState, call: GuardedCall, w: LateCreateWatch, servers: Server[]): Promise<Server> {
  const [server, ...extra] = servers as [Server, ...Server[]];
  g.stats.adoptedServers++;
  noteServer(g, call, server.id, false);
  g.log.warn({ claimTag: call.claimTag, serverId: server.id, status: server.status }, 'found the server of a lost create answer: adopted');
  for (const s of extra) await deleteExtra(g, w, s.id);
  return server;
}
