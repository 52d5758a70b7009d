/**
 * One guarded create attempt of `QuotaGuard.createServer`, after the headroom check has claimed:
 * the POST, the wait for the server to leave BUILD, and the deletion of a server the guard gives up
 * on.
 *
 * - `POST /servers` (Nova API reference, "Create Server") never takes the caller's AbortSignal: an
 *   abort must not hide a server Nova created. A rate limit (413 `overLimit` with Retry-After, 429)
 *   or a refused connection is re-sent through `withRetry` (p-retry + Retry-After, floor
 *   `minDelayMs`) without using a guard attempt (field case BUG-08a).
 * - With `waitForActive`: poll until the server leaves BUILD ({@link waitForActive}). ERROR with a
 *   quota fault ({@link parseQuotaMessage} on `fault.message`: Nova's recheck text, or a
 *   build-aborted fault naming another quota) → delete with wait, then a retryable
 *   {@link QuotaExceededError} whose `cause` is a {@link ServerBuildError}. Other ERROR, BUILD past
 *   `activeTimeoutMs`, an abort or a failed poll → delete with wait, then throw.
 * - Deletion uses `client.deleteServer(id, { ...deleteOptions, wait: true })` without the caller's
 *   signal, so an abort still cleans up.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { AbortError, ForbiddenError, NovaNetworkError, QuotaExceededError, RateLimitError, ServerBuildError, isAbortError } from '../errors/index.js';
import type { Logger } from '../core/logger.js';
import type { Claim, ClaimLedger } from './claims.js';
import type { QuotaGuardStats, QuotaRetryInfo, ResolvedOptions } from './options.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import { withRetry } from '../transport/retry.js';
import type { CreateServerBody, Server } from '../core/types.js';
import { waitForActive } from './waitForActive.js';

/** What a create attempt needs from its guard. */
export interface CreateContext {
  client: NovaClient;
  opts: ResolvedOptions;
  ledger: ClaimLedger;
  log: Logger;
  stats: QuotaGuardStats;
  /** The guard's `onRetry` hook, exceptions already caught; `false` vetoes. */
  onRetry: (info: QuotaRetryInfo) => boolean | void;
}

/** The calling guarded call's clock and counters. */
export interface CallClock {
  /** Attempts (quota-counted POSTs) made so far, this one included. */
  readonly posts: number;
  elapsedMs(): number;
  /** Time left until `maxWaitMs` runs out, in ms (may be negative). */
  remainingMs(): number;
}

/**
 * POST, then (with `waitForActive`) wait for the server to leave BUILD. Ends `claim` on every path.
 * See the module description.
 */
export async function createAttempt(ctx: CreateContext, body: CreateServerBody, claim: Claim, signal: AbortSignal | undefined, call: CallClock): Promise<Server> {
  let created: Server | undefined;
  try {
    await withRetry(
      async () => {
        // The POST itself never takes the signal: an abort must not hide a server Nova created.
        created = await ctx.client.createServer(body, { retry: false });
        return created;
      },
      {
        retries: Number.POSITIVE_INFINITY,
        minDelayMs: ctx.opts.minDelayMs,
        maxDelayMs: ctx.opts.maxDelayMs,
        maxRetryTimeMs: Math.max(1, call.remainingMs()),
        signal,
        shouldRetry: (e) => e instanceof RateLimitError || (e instanceof NovaNetworkError && e.code === 'ECONNREFUSED'),
        onRetry: (error, _attempt, retryAfterMs) => {
          if (!(error instanceof RateLimitError)) return;
          const info: QuotaRetryInfo = {
            reason: 'rate-limit',
            error,
            attempt: call.posts,
            attemptsLeft: ctx.opts.maxAttempts - call.posts,
            delayMs: retryAfterMs,
            elapsedMs: call.elapsedMs(),
          };
          if (ctx.onRetry(info) === false) throw error;
          ctx.stats.rateLimitRetries++;
          ctx.log.warn({ retryAfterMs, requestId: error.requestId }, 'create rate-limited: re-sending after Retry-After (no attempt used)');
        },
      },
    );
  } catch (e) {
    if (created) return abandon(ctx, created, claim, e, call);
    ctx.ledger.release(claim, 'not-created');
    if (e instanceof QuotaExceededError) {
      ctx.stats.quota403s++;
      if (e.permanent) ctx.log.warn({ requestId: e.requestId, resources: e.resources }, 'permanent quota error: the request exceeds the limit itself');
    } else if (e instanceof ForbiddenError) {
      ctx.log.warn({ requestId: e.requestId, status: e.status }, 'create forbidden (not a quota error): not retried');
    }
    throw e;
  }
  const server = created!;
  claim.serverId = server.id;
  if (signal?.aborted) return abandon(ctx, server, claim, new AbortError(undefined, { cause: signal.reason }), call);
  if (!ctx.opts.waitForActive) {
    claim.unwatched = true;
    return server;
  }
  return settle(ctx, server, claim, signal, call);
}

/** Wait for the new server to leave BUILD; delete it when the guard gives up on it. */
async function settle(ctx: CreateContext, created: Server, claim: Claim, signal: AbortSignal | undefined, call: CallClock): Promise<Server> {
  const id = created.id;
  let res;
  try {
    res = await waitForActive(ctx.client, id, {
      timeoutMs: ctx.opts.activeTimeoutMs,
      intervalMs: ctx.opts.activeIntervalMs,
      signal,
    });
  } catch (e) {
    return abandon(ctx, created, claim, e, call);
  }
  if (res.outcome === 'active') {
    ctx.ledger.release(claim, 'counted');
    return { ...created, ...res.server } as Server;
  }
  if (res.outcome === 'gone') {
    ctx.ledger.release(claim, 'not-created');
    throw new ServerBuildError({ serverId: id, reason: 'gone', lastStatus: res.lastStatus, elapsedMs: res.elapsedMs, deleted: true });
  }
  const fault = res.server?.fault;
  const cleanupError = await deleteCreated(ctx, id, claim);
  const buildError = new ServerBuildError({
    serverId: id,
    reason: res.outcome,
    lastStatus: res.lastStatus,
    faultMessage: fault?.message,
    faultCode: fault?.code,
    elapsedMs: res.elapsedMs,
    deleted: cleanupError === undefined,
    cleanupError,
  });
  const parsed = res.outcome === 'error' ? parseQuotaMessage(fault?.message) : undefined;
  if (parsed && cleanupError === undefined) {
    ctx.stats.lateQuotaFaults++;
    ctx.log.warn({ serverId: id, fault: fault?.message }, 'server went to ERROR with a quota fault: deleted it');
    throw new QuotaExceededError({
      status: 0,
      message: `Server ${id} went to ERROR with a quota fault and was deleted: ${fault?.message ?? ''}`,
      serverId: id,
      resources: parsed.resources,
      permanent: parsed.permanent,
      cause: buildError,
    });
  }
  ctx.log.warn({ serverId: id, outcome: res.outcome, fault: fault?.message, deleted: cleanupError === undefined }, 'server did not become ACTIVE');
  throw buildError;
}

/** The guard gives up on a created server (abort, failed poll): delete it, then throw. */
async function abandon(ctx: CreateContext, created: Server, claim: Claim, error: unknown, call: CallClock): Promise<never> {
  const id = created.id;
  const cleanupError = await deleteCreated(ctx, id, claim);
  ctx.log.warn({ serverId: id, deleted: cleanupError === undefined, posts: call.posts }, 'giving up on a created server');
  if (isAbortError(error) || error instanceof AbortError) {
    throw new AbortError(
      cleanupError === undefined
        ? `The operation was aborted; server ${id} was deleted`
        : `The operation was aborted; server ${id} could NOT be deleted: ${cleanupError.message}`,
      { cause: (error as Error).cause ?? error },
    );
  }
  throw error;
}

/** Delete a server the guard created, with wait, ignoring the caller's signal. Returns the failure, if any. */
async function deleteCreated(ctx: CreateContext, id: string, claim: Claim): Promise<Error | undefined> {
  ctx.stats.cleanups++;
  try {
    await ctx.client.deleteServer(id, { intervalMs: ctx.opts.activeIntervalMs, ...ctx.opts.deleteOptions, wait: true });
    ctx.ledger.release(claim, 'not-created');
    return undefined;
  } catch (e) {
    ctx.ledger.release(claim, 'counted');
    ctx.log.error({ serverId: id, err: (e as Error)?.message }, 'could not delete a server the guard created: it is left behind');
    return e instanceof Error ? e : new Error(String(e));
  }
}
