/**
 * `client.deleteServer(id, options)` and `client.deleteServers(ids, options)`: delete servers and,
 * with `wait: true`, wait until Nova has really deleted them.
 *
 * Behaviour (field cases BUG-01, 03, 04, 05, 06 in `../shared/reference/field-cases.md`):
 * - `DELETE /servers/{id}` (Nova API reference, "Delete Server"): 404 means already gone; 409 (locked)
 *   throws {@link ConflictError} at once; 5xx and no response are retried a bounded number of times,
 *   then {@link DeleteFailedError} with no polling.
 * - With `wait`, {@link waitForDelete}; after a `DELETED` status, up to `confirmGoneMs` more of
 *   50 ms polls until the 404, when Nova's usage drops; `timeout` becomes {@link DeleteTimeoutError}; `error` re-issues
 *   the DELETE once, then {@link DeleteFailedError} with Nova's fault message.
 * - If no poll shows the delete under way (task_state `deleting`, DELETED, 404) within
 *   `redeleteAfterMs`, the DELETE is re-issued once: Nova's 204 is a promise, not a delete (otter's
 *   "verified delete").
 * - `forceSoftDeleted`: a SOFT_DELETED server is force-deleted (`forceDelete` action) and waited for
 *   until 404; a 403 on the force-delete resolves `'soft-deleted'` with a warning.
 * - Nothing is forgotten: every server passed to `deleteServer` stays in the client's ledger
 *   (`client.unconfirmedDeletes()`, `src/deleteLedger.ts`) until its deletion is confirmed.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { NovaClient, RequestOptions } from '../nova/client.js';
import {
  AbortError,
  ConflictError,
  DeleteFailedError,
  DeleteTimeoutError,
  ForbiddenError,
  NovaApiError,
  NovaNetworkError,
  ValidationError,
  throwIfAborted,
} from '../errors/index.js';
import { goneConfirmerOf } from './goneConfirmer.js';
import { settleDelete, trackDelete } from './ledger.js';
import type { Server } from '../core/types.js';
import { checkDurationMs, checkPathId } from '../core/validate.js';
import { validateWaitOptions, waitForDeleteWithHooks, type Observation, type WaitForDeleteOptions, type WaitHooks } from './waitForDelete.js';
import { isServerNotFound } from '../transport/http.js';

/** Options of {@link deleteServer}. */
export interface DeleteServerOptions extends WaitForDeleteOptions {
  /** Wait until Nova has deleted the server. Default false. */
  wait?: boolean;
  /**
   * With `wait`: re-issue the DELETE once if no poll has shown the delete under way (task_state
   * `deleting`, status DELETED, 404) within this time, in ms. Default 30000. 0 disables.
   */
  redeleteAfterMs?: number;
  /** With `wait`: force-delete a SOFT_DELETED server and wait for its 404. Default false. */
  forceSoftDeleted?: boolean;
  /**
   * With `wait`: after a poll shows status `DELETED`, keep polling `GET /servers/{id}` every 50 ms for
   * at most this long, in ms, until it answers 404, then resolve `'deleted'` either way. Nova frees the
   * server's cores, RAM and instance only at the 404 (observed on Nova 26.2: the `DELETED` window
   * lasts 20–105 ms and a create in it can get a quota 403), so by default the next create fits.
   * Default 2000; 0 resolves at the first `DELETED`.
   */
  confirmGoneMs?: number;
  /** Retries of the DELETE request after 5xx or no response. Default 3. */
  deleteRetries?: number;
  /** Send `forceDelete` instead of `DELETE` (hard delete even with soft-delete configured). Default false. */
  force?: boolean;
}

/** How a deletion ended. */
export type DeleteOutcome = 'delete-requested' | 'already-gone' | 'deleted' | 'soft-deleted';

/** What {@link deleteServer} resolves. */
export interface DeleteServerResult {
  serverId: string;
  /**
   * `'delete-requested'` (no wait, 204), `'already-gone'` (404 on DELETE), `'deleted'` (404 or status
   * DELETED seen), `'soft-deleted'` (status SOFT_DELETED: its cores no longer count under legacy counting).
   */
  outcome: DeleteOutcome;
  /** DELETE (or forceDelete) requests sent, retries included. */
  deleteAttempts: number;
  /** Polls made while waiting (0 without wait). */
  polls: number;
  /** Wall-clock time spent, in ms. */
  elapsedMs: number;
  /** Last server body seen while waiting, if any. */
  server?: Server | undefined;
  /** Warnings, e.g. a force-delete refused by policy. */
  warnings: string[];
}

/**
 * Delete one server. See the module description for the exact behaviour.
 *
 * @throws {@link ValidationError} for a bad id or options (before any request); {@link ConflictError}
 * on 409; {@link DeleteFailedError} when the DELETE keeps failing or the server ends in ERROR twice;
 * {@link DeleteTimeoutError} when the wait times out; {@link AbortError} when `signal` aborts;
 * other {@link NovaApiError}s (401, 403) as they come.
 */
export async function deleteServer(client: NovaClient, serverId: string, options: DeleteServerOptions = {}): Promise<DeleteServerResult> {
  validateDelete(serverId, options);
  trackDelete(client, serverId);
  try {
    const r = await deleteOne(client, serverId, options);
    settleDelete(client, serverId, r.outcome === 'delete-requested' ? 'delete-requested' : 'confirmed');
    return r;
  } catch (error) {
    settleDelete(client, serverId, { error });
    throw error;
  }
}

/** Everything `deleteServer` checks before its DELETE: the id, its own options and the wait's. */
function validateDelete(serverId: string, options: DeleteServerOptions): void {
  checkPathId('server id', serverId);
  checkDeleteOptions(options);
}

/**
 * Check the options of {@link deleteServer} (the wait's too) without an id: what the reaper checks
 * before its first listing.
 * @throws {@link ValidationError}; {@link AbortError} when `signal` is already aborted.
 */
export function checkDeleteOptions(options: DeleteServerOptions): void {
  validateWaitOptions(options);
  checkDurationMs('redeleteAfterMs', options.redeleteAfterMs, { allowZero: true });
  checkDurationMs('confirmGoneMs', options.confirmGoneMs, { allowZero: true });
  const deleteRetries = options.deleteRetries ?? 3;
  if (!Number.isInteger(deleteRetries) || deleteRetries < 0) throw new ValidationError(`deleteRetries must be a non-negative integer, got ${String(deleteRetries)}`);
  throwIfAborted(options.signal);
}

async function deleteOne(client: NovaClient, serverId: string, options: DeleteServerOptions): Promise<DeleteServerResult> {
  const deleteRetries = options.deleteRetries ?? 3;

  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const timeoutMs = options.timeoutMs ?? 300000;
  const log = client.logger.child({ serverId });
  const result: DeleteServerResult = { serverId, outcome: 'delete-requested', deleteAttempts: 0, polls: 0, elapsedMs: 0, warnings: [] };
  const reqOpts: RequestOptions = {
    signal: options.signal,
    requestTimeoutMs: options.requestTimeoutMs,
    retry: { retries: deleteRetries },
    retryOn: (e) => e instanceof NovaNetworkError || (e instanceof NovaApiError && (e.status >= 500 || e.status === 429)),
    onAttempt: () => {
      result.deleteAttempts++;
    },
  };

  const sendDelete = async (kind: 'delete' | 'force'): Promise<'delete-requested' | 'already-gone'> => {
    try {
      if (kind === 'force') {
        await client.forceDeleteServer(serverId, { ...reqOpts, retry: false });
        return 'delete-requested';
      }
      return await client.requestDelete(serverId, reqOpts);
    } catch (e) {
      if (isServerNotFound(e, serverId)) return 'already-gone';
      if (e instanceof ConflictError || e instanceof ForbiddenError || e instanceof AbortError || (e instanceof Error && e.name === 'AuthError')) throw e;
      if (e instanceof NovaApiError) {
        throw new DeleteFailedError({ serverId, faultMessage: e.message, deleteAttempts: result.deleteAttempts, cause: e });
      }
      throw e;
    }
  };

  const first = await sendDelete(options.force ? 'force' : 'delete');
  log.debug({ outcome: first, attempts: result.deleteAttempts }, 'delete requested');
  if (first === 'already-gone' || !options.wait) {
    return { ...result, outcome: first, elapsedMs: elapsed() };
  }

  let underway = false;
  let redeleted = false;
  const redeleteAfterMs = options.redeleteAfterMs ?? 30000;
  const hooks: WaitHooks = {
    afterObservation: async (obs: Observation) => {
      if (obs.gone || obs.server['OS-EXT-STS:task_state'] === 'deleting') underway = true;
      if (!underway && !redeleted && redeleteAfterMs > 0 && elapsed() >= redeleteAfterMs) {
        redeleted = true;
        log.warn({ afterMs: elapsed() }, 'no sign of deletion: re-issuing DELETE');
        await sendDelete('delete');
      }
    },
  };

  const wait = async (): Promise<ReturnType<typeof waitForDeleteWithHooks>> => {
    const left = timeoutMs - elapsed();
    const waited = await waitForDeleteWithHooks(client, serverId, { ...options, timeoutMs: Math.max(1, left) }, hooks);
    result.polls += waited.polls;
    result.server = waited.server;
    return waited;
  };

  let errorRedeleted = false;
  for (;;) {
    const waited = await wait();
    if (waited.outcome === 'deleted') {
      if (waited.server) await confirmGone(client, serverId, options, result, Math.min(options.confirmGoneMs ?? 2000, timeoutMs - elapsed()));
      return { ...result, outcome: 'deleted', elapsedMs: elapsed() };
    }
    if (waited.outcome === 'timeout') {
      throw new DeleteTimeoutError({
        serverId,
        lastStatus: waited.lastStatus,
        lastTaskState: waited.lastTaskState,
        polls: result.polls,
        elapsedMs: elapsed(),
        timeoutMs,
      });
    }
    if (waited.outcome === 'soft-deleted') {
      if (!options.forceSoftDeleted) return { ...result, outcome: 'soft-deleted', elapsedMs: elapsed() };
      try {
        const forced = await sendDelete('force');
        if (forced === 'already-gone') return { ...result, outcome: 'deleted', elapsedMs: elapsed() };
      } catch (e) {
        if (e instanceof ForbiddenError) {
          const warning = `force-delete of soft-deleted server ${serverId} refused (403): ${e.message}`;
          log.warn({ requestId: e.requestId }, warning);
          result.warnings.push(warning);
          return { ...result, outcome: 'soft-deleted', elapsedMs: elapsed() };
        }
        throw e;
      }
      continue; // wait for the 404 after the force-delete
    }
    // outcome 'error': ERROR with no task in progress
    const faultMessage = waited.server?.fault?.message;
    if (errorRedeleted) {
      throw new DeleteFailedError({ serverId, faultMessage, deleteAttempts: result.deleteAttempts, lastStatus: waited.lastStatus });
    }
    errorRedeleted = true;
    log.warn({ fault: faultMessage }, 'server in ERROR while deleting: re-issuing DELETE once');
    const again = await sendDelete('delete');
    if (again === 'already-gone') return { ...result, outcome: 'deleted', elapsedMs: elapsed() };
    underway = false;
  }
}

/**
 * After status DELETED: poll every 50 ms, for at most `budgetMs`, until the GET answers 404 (the
 * moment Nova's usage drops). Transient failures only end this early; it never throws for them.
 * On a coalescing client the confirmations of all pending deletions share one listing per tick
 * (`src/coalesce/goneConfirmer.ts`).
 */
async function confirmGone(client: NovaClient, serverId: string, options: DeleteServerOptions, result: DeleteServerResult, budgetMs: number): Promise<void> {
  if (client.coalesce) {
    // Shared with every other confirmation pending on this client: one plain listing per tick.
    result.polls++;
    if (await goneConfirmerOf(client).confirm(serverId, budgetMs, options.signal)) result.server = undefined;
    return;
  }
  const end = performance.now() + budgetMs;
  while (performance.now() + CONFIRM_INTERVAL_MS <= end) {
    await sleep(CONFIRM_INTERVAL_MS, undefined, options.signal ? { signal: options.signal } : undefined).catch(() => {
      throw new AbortError(`Wait for deletion of server ${serverId} was aborted`, { cause: options.signal?.reason });
    });
    result.polls++;
    try {
      const server = await client.getServer(serverId, { signal: options.signal, retry: false, requestTimeoutMs: Math.max(1, end - performance.now()) });
      result.server = server;
      if (String(server.status ?? '').toUpperCase() !== 'DELETED') return;
    } catch (e) {
      if (isServerNotFound(e, serverId)) {
        result.server = undefined;
        return;
      }
      if (e instanceof AbortError) throw e;
      return;
    }
  }
}

const CONFIRM_INTERVAL_MS = 50;

/** Options of {@link deleteServers}. */
export interface DeleteServersOptions extends DeleteServerOptions {
  /** How many deletions run at once. Default 10. */
  concurrency?: number;
}

/** One server's settled result in {@link DeleteServersResult}. */
export type DeleteSettled =
  | { serverId: string; status: 'fulfilled'; value: DeleteServerResult }
  | { serverId: string; status: 'rejected'; reason: Error };

/** What {@link deleteServers} resolves: every server's own result, in input order. */
export interface DeleteServersResult {
  results: DeleteSettled[];
  /** Ids whose deletion succeeded (any outcome). */
  succeeded: string[];
  /** Ids whose deletion failed, with the error. */
  failed: Array<{ serverId: string; error: Error }>;
}

/**
 * Delete many servers at bounded concurrency; each settles on its own (`Promise.allSettled`
 * semantics): one failure never hides the others' results. Duplicate ids are deleted once.
 *
 * @throws {@link ValidationError} before any request when an id or option is bad.
 */
export async function deleteServers(client: NovaClient, ids: readonly string[], options: DeleteServersOptions = {}): Promise<DeleteServersResult> {
  if (!Array.isArray(ids)) throw new ValidationError('deleteServers needs an array of server ids');
  // Every id and option is checked before the first DELETE: a bad one never leaves the others half done.
  for (const id of ids) validateDelete(id, options);
  const concurrency = options.concurrency ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new ValidationError(`concurrency must be a positive integer, got ${String(concurrency)}`);
  const unique = [...new Set(ids)];
  const limit = pLimit(concurrency);
  const settled = await Promise.allSettled(unique.map((id) => limit(() => deleteServer(client, id, options))));
  const results: DeleteSettled[] = settled.map((s, i) =>
    s.status === 'fulfilled'
      ? { serverId: unique[i]!, status: 'fulfilled', value: s.value }
      : { serverId: unique[i]!, status: 'rejected', reason: s.reason instanceof Error ? s.reason : new Error(String(s.reason)) },
  );
  return {
    results,
    succeeded: results.filter((r) => r.status === 'fulfilled').map((r) => r.serverId),
    failed: results.flatMap((r) => (r.status === 'rejected' ? [{ serverId: r.serverId, error: r.reason }] : [])),
  };
}
