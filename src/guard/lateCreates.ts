/**
 * The watch on a guarded call's claim tag after a POST whose fate is not known: no server of the
 * call is left behind, whenever Nova makes it.
 *
 * Why: a `POST /servers` may be handled by nova-api after the guard stopped waiting for it. A proxy
 * gives up at its own timeout (504, a reset, the client's request time limit) while nova-api goes on
 * working (its WSGI handling does not stop when the client leaves: the build request and the server
 * appear later); a 429 may come from something in front of Nova after the request was forwarded
 * (Nova itself has sent no 429 since its rate limiter was removed). The call's two searches then
 * find nothing, and a re-sent POST made a second server with the same tag.
 *
 * The rule:
 * - A POST is *uncertain* when it got no answer (except a refused connection), an answer that is not
 *   Nova's own (a 502, 503 or 504, which come from proxies, or a 5xx without Nova's fault body or
 *   without a request id of Nova's form `req-<uuid>`, a 2xx without a `server` object), or a rate limit (any 429, or a 413 `overLimit`). Its time *surely passes* at
 *   `sent + client.requestTimeoutMs + novaApiTimeoutMs` (on the guard's clock): it reached nova-api
 *   within the client's request time limit at the latest, and nova-api is done with it
 *   `novaApiTimeoutMs` later. A 500 with Nova's fault body and a `req-<uuid>` request id is Nova's own answer:
 *   nova-api is done with that POST at the answer.
 * - The POST's fate is *known* once every POST of the call that may have made a server is
 *   accounted for: a server answered (202) or found by the tag (adopted or deleted), one per POST.
 * - From the first uncertain POST, the call's tag is watched (listed by {@link watchedCreates})
 *   until its fate is known, or until a search that started after the last uncertain POST's time
 *   surely passed succeeded.
 * - While the call runs, after the first uncertain POST of an attempt, one search that succeeds
 *   and finds nothing lets the POST go again at once, with the same tag (`lostCreate.ts`): the lost
 *   POST may still land, and its server is then a *twin*. The call keeps one server, the first it
 *   found or was answered; a twin is found by the tag and deleted, with wait. Until the watch ends,
 *   the guard holds one more claim for the twin ({@link claimForTwin}: same needs, on the claim's
 *   ledger, taken before the POST is re-sent, lease renewed), so that the ledger counts a twin
 *   while it may live, whatever the call's own claim does. It is released when the watch ends: as
 *   `'not-created'` when every server of the tag is the kept one or was deleted (their 404 seen), else
 *   as `'counted'` (a server left behind, the watch given up or the guard closed). After a second
 *   uncertain POST of the attempt the POST is not re-sent: the call waits for the bound to say that
 *   nothing was created (then throws the POST's error) or finds a server. A rate limit is re-sent
 *   after the limiter's `Retry-After`, the watch going on. After the call returned or threw, the
 *   watch goes on in the background: every server that carries the tag, except the one the call
 *   returned, is deleted (with wait) and logged.
 * - The searches are `GET /servers/detail?name=^<name>$`, filtered by the tag on the client side
 *   (`lostCreate.ts`), spaced `lostCreateIntervalMs` apart and doubling after each,
 *   the last one landing where the bound passes: a slow Nova gets fewer requests, never more. After
 *   the bound, `lostCreateSearches` failed searches in a row end the watch with an error log (the
 *   reaper finds the server by its tag: `nova-guard-claim`).
 * - `QuotaGuard.close()` ends every watch (its sleep and its delete wait are aborted; a DELETE
 *   already sent stays sent) and logs each unsettled tag. Watch timers are not `unref`'d: a process
 *   stays up until its watches end or the guard is closed.
 *
 * @module
 */
import { NovaApiError, RateLimitError } from '../errors/index.js';
import { sleep } from '../core/clock.js';
import { isOpenStackRequestId } from '../core/validate.js';
import type { ClaimEnd } from '../ledger/index.js';
import { CLAIM_TAG_KEY, isDeletedStatus, listTagged } from './claimTag.js';
import { CLAIM_ID_KEY, holdClaim, releaseClaim } from './ledgerUse.js';
import { keepLease } from './leases.js';
import { warnOnce, type Claim, type GuardState, type LateCreateWatch } from './state.js';
import type { GuardedCall } from './guardedCall.js';

export type { LateCreateWatch } from './state.js';

/** A claim tag the guard still watches (see the module description). */
export interface UnsettledCreate {
  /** The call's claim tag: the value of the server metadata `nova-guard-claim`. */
  readonly claimTag: string;
  /** The server name the call's POSTs asked for. */
  readonly serverName: string;
  /** POSTs of the call that may have made a server (uncertain ones, and those answered 202 after the first uncertain one). */
  readonly posts: number;
  /** Servers with the tag seen so far (answered, adopted or deleted). */
  readonly serversSeen: number;
  /** The server the call returned, once it did. */
  readonly keptServerId: string | undefined;
  /** Servers with the tag the guard deleted. */
  readonly deletedServerIds: readonly string[];
  /** True while the call is running; false once the watch goes on after it. */
  readonly callRunning: boolean;
  /** Time until the last uncertain POST's time surely passes, in ms (0 once it has). */
  readonly boundInMs: number;
}

/**
 * 5xx statuses that are never nova-api's own answer to a POST: a proxy's or load balancer's (bad
 * gateway, unavailable, gateway timeout). nova-api answers an exception with 500; the POST it was
 * handed may still make a server after a 502, 503 or 504.
 */
const PROXY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * True when `error` is Nova's own answer to the POST: a 5xx other than 502, 503 or 504 (see
 * {@link PROXY_STATUSES}), with Nova's fault body and a request id of Nova's form (`req-<uuid>`:
 * an empty or other one is not Nova's). nova-api is then done with that POST.
 */
export function isNovasOwnAnswer(error: unknown): boolean {
  return (
    error instanceof NovaApiError &&
    !(error instanceof RateLimitError) &&
    error.status >= 500 &&
    !PROXY_STATUSES.has(error.status) &&
    error.fault !== undefined &&
    isOpenStackRequestId(error.requestId)
  );
}

/**
 * Note an uncertain POST of `call` (sent at `sentAtMs`, failed with `error`): the call's tag is
 * watched until that POST's time surely passes. Returns the watch.
 */
export function noteUncertainPost(g: GuardState, call: GuardedCall, name: string, sentAtMs: number, error: unknown): LateCreateWatch {
  let w = g.watches.get(call.claimTag);
  if (!w) {
    w = { tag: call.claimTag, name, untilMs: g.clock.now(), posts: 0, seen: new Set(), deleted: [], kept: undefined, callRunning: true, done: undefined, twinClaims: [] };
    g.watches.set(call.claimTag, w);
  }
  w.posts++;
  const until = isNovasOwnAnswer(error) ? g.clock.now() : sentAtMs + g.client.requestTimeoutMs + g.opts.novaApiTimeoutMs;
  w.untilMs = Math.max(w.untilMs, until);
  return w;
}

/** Note a server a POST of `call` answered, or a search found: one more POST accounted for. */
export function noteServer(g: GuardState, call: GuardedCall, serverId: string, answered: boolean): void {
  const w = g.watches.get(call.claimTag);
  if (!w) return;
  if (answered) w.posts++;
  w.seen.add(serverId);
}

/** True when every POST of the watch is accounted for by a server. */
export function fateKnown(w: LateCreateWatch): boolean {
  return w.seen.size >= w.posts;
}

/**
 * Stop watching `w` and release its twin claims: `settled` when its fate is known or its time has
 * surely passed (see {@link twinClaimEnd}), else (given up, guard closed) as `'counted'`.
 */
function unwatch(g: GuardState, w: LateCreateWatch, settled: boolean): void {
  if (g.watches.get(w.tag) === w) g.watches.delete(w.tag);
  const end: ClaimEnd = settled ? twinClaimEnd(w) : 'counted';
  for (const claim of w.twinClaims.splice(0)) void releaseClaim(g, claim, end);
}

/**
 * How the twin claims of a settled watch end: `'not-created'` when every server seen with the tag
 * is the kept one or one the guard deleted (Nova no longer counts it), else `'counted'` (a server
 * the guard could not delete, or one the call deleted itself: counted until Nova's next reading).
 */
function twinClaimEnd(w: LateCreateWatch): ClaimEnd {
  return [...w.seen].every((id) => id === w.kept || w.deleted.includes(id)) ? 'not-created' : 'counted';
}

/**
 * Before a POST is re-sent while an earlier POST of the call may still land: hold one more claim
 * for that possible twin, with the needs of `claim`, on `claim`'s ledger (`claimAnyway`: no
 * headroom check, the twin would come from a POST already admitted), its lease renewed, until the
 * watch ends (see the module description). A ledger that fails is logged once and the POST goes on
 * (Nova's own quota check stays the authority), as with any claim the ledger cannot take.
 */
export async function claimForTwin(g: GuardState, w: LateCreateWatch, claim: Claim | undefined): Promise<void> {
  if (!claim) return;
  try {
    const lc = await g.res.boundedOn(claim.ledger, 'claimAnyway', () => claim.ledger.claimAnyway(claim.needs, g.opts.leaseTtlMs));
    const twin = holdClaim(g, lc, claim.ledger);
    // On the fallback in degraded mode: re-claimed on the ledger when it answers, like the call's own.
    twin.degraded = claim.degraded;
    keepLease(g, twin);
    w.twinClaims.push(twin);
  } catch (e) {
    warnOnce(g, 'ledger-twin-claim', { ledger: claim.ledger.kind, claimTag: w.tag, err: (e as Error)?.message }, 'quota ledger could not claim for a possible second server of a lost create: Nova\'s quota check decides for it');
  }
}

/**
 * A search that started after the bound found no server of the watch's POSTs: every POST so far is
 * accounted for (those without a server made none).
 */
export function noteNothingMore(w: LateCreateWatch): void {
  w.posts = w.seen.size;
}

/**
 * The call has ended (returned `keptServerId`, or threw): settle its watch now when its fate is
 * known, else go on watching in the background (see the module description).
 */
export function endCallWatch(g: GuardState, call: GuardedCall, keptServerId: string | undefined): void {
  const w = g.watches.get(call.claimTag);
  if (!w) return;
  w.callRunning = false;
  w.kept = keptServerId;
  if (keptServerId !== undefined) w.seen.add(keptServerId);
  if (fateKnown(w)) {
    unwatch(g, w, true);
    return;
  }
  g.log.warn({ claimTag: w.tag, name: w.name, keptServerId, boundInMs: Math.max(0, Math.round(w.untilMs - g.clock.now())) }, 'a POST of this call may still make a server: watching its claim tag after the call');
  w.done = watchAfterCall(g, w).then(
    (settled) => unwatch(g, w, settled),
    () => unwatch(g, w, false),
  );
}

/** Delete a server with the tag that is not the kept one (with wait, never the caller's signal). */
export async function deleteExtra(g: GuardState, w: LateCreateWatch, serverId: string, signal?: AbortSignal): Promise<boolean> {
  w.seen.add(serverId);
  g.stats.cleanups++;
  try {
    await g.client.deleteServer(serverId, { intervalMs: g.opts.activeIntervalMs, ...g.opts.deleteOptions, wait: true, signal });
    w.deleted.push(serverId);
    g.stats.lateCreatesDeleted++;
    g.log.warn({ serverId, claimTag: w.tag, keptServerId: w.kept }, 'deleted a second server of one guarded call (a POST that landed late)');
    return true;
  } catch (e) {
    g.log.error({ serverId, claimTag: w.tag, err: (e as Error)?.message }, 'could not delete a second server of one guarded call: it is left behind (the reaper finds it by its claim tag)');
    return false;
  }
}

/**
 * The background part of a watch: search, delete what is not kept, until settled (bounded).
 * Resolves true once settled, false when it gave up or the guard was closed.
 */
async function watchAfterCall(g: GuardState, w: LateCreateWatch): Promise<boolean> {
  const signal = g.closing.signal;
  let waitMs = g.opts.lostCreateIntervalMs;
  let roundsAfterBound = 0;
  for (;;) {
    // The call has just searched (or was rate-limited): the first search of the watch waits too.
    const left = w.untilMs - g.clock.now();
    const delay = left > 0 ? (waitMs > 0 ? Math.min(waitMs, left) : left) : g.opts.lostCreateIntervalMs;
    waitMs *= 2;
    try {
      await sleep(g.clock, delay, signal);
    } catch {
      break;
    }
    const startedAt = g.clock.now();
    let failures = 0;
    try {
      const tagged = await listTagged(g, w.name, w.tag, signal);
      for (const s of tagged) {
        if (s.id === w.kept || w.deleted.includes(s.id) || isDeletedStatus(s)) continue;
        if (!(await deleteExtra(g, w, s.id, signal))) failures++;
      }
      if (failures === 0 && (startedAt >= w.untilMs || fateKnown(w))) {
        g.log.info({ claimTag: w.tag, deleted: w.deleted.length }, 'claim tag settled: every POST of the call is accounted for');
        return true;
      }
    } catch (e) {
      if (signal.aborted) break;
      g.log.warn({ claimTag: w.tag, err: (e as Error)?.message }, 'search for a late server of a guarded call failed');
    }
    // Past the bound, a search or a delete that keeps failing ends the watch after lostCreateSearches rounds.
    if (startedAt >= w.untilMs && ++roundsAfterBound >= g.opts.lostCreateSearches) {
      g.log.error({ claimTag: w.tag, rounds: roundsAfterBound }, 'gave up watching a claim tag: a server may exist with it (the reaper finds it by its tag)');
      return false;
    }
  }
  g.log.warn({ claimTag: w.tag, name: w.name }, 'guard closed while a claim tag was watched: a server may still appear with it (the reaper finds it by its tag)');
  return false;
}

/** Server metadata that marks a live claim of the guard: `key` with one of `values`. */
export interface LiveClaimMark {
  readonly key: string;
  readonly values: string[];
}

/**
 * The guard's live claims as metadata marks (the reaper's `liveClaims`): the claims it holds by
 * `nova-guard-claim-id`, the claim tags it watches by `nova-guard-claim`.
 */
export function liveMarks(g: GuardState): LiveClaimMark[] {
  return [
    { key: CLAIM_ID_KEY, values: [...g.claims].map((c) => c.lc.id) },
    { key: CLAIM_TAG_KEY, values: [...g.watches.keys()] },
  ];
}

/** What the guard still watches, oldest first. */
export function watchedCreates(g: GuardState): UnsettledCreate[] {
  const now = g.clock.now();
  return [...g.watches.values()].map((w) => ({
    claimTag: w.tag,
    serverName: w.name,
    posts: w.posts,
    serversSeen: w.seen.size,
    keptServerId: w.kept,
    deletedServerIds: [...w.deleted],
    callRunning: w.callRunning,
    boundInMs: Math.max(0, Math.round(w.untilMs - now)),
  }));
}

/** End every watch (see the module description); resolves once they have stopped. */
export async function closeWatches(g: GuardState): Promise<void> {
  g.closing.abort(new Error('the guard was closed'));
  await Promise.allSettled([...g.watches.values()].map((w) => w.done));
}
