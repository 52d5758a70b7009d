/**
 * `deleteServer(client, id, options)` and `deleteServers(client, ids, options)`: delete servers and,
 * with `wait: true`, wait until Nova has deleted them (its 404, when it frees their cores).
 *
 * - `DELETE /servers/{id}` (Nova API reference, "Delete Server"): 204 is accepted; Nova's 404 for this
 *   server means already gone once a listing (`GET /servers`) confirms it (while that listing fails it
 *   is sent again, until `timeoutMs`); 409 (locked) throws {@link ConflictError} at once; transient failures
 *   are retried (`deleteRetries`), then {@link DeleteFailedError}. Any other 2xx (a proxy's page) is
 *   not taken as accepted.
 * - With `wait`, the client's delete engine watches the server. `error` (ERROR with no task) sends the
 *   DELETE once more, then {@link DeleteFailedError} with Nova's fault message. If no look shows the
 *   delete under way within `redeleteAfterMs`, the DELETE is sent once more: a 204 is a promise, not
 *   a delete. `forceSoftDeleted` force-deletes a `SOFT_DELETED` server (Nova API reference,
 *   "Force-Delete Server (forceDelete Action)") and waits for its 404.
 * - `timeoutMs` bounds the whole call, DELETE included; when the call settles nothing it started is
 *   left running. Every server stays in `client.unconfirmedDeletes()` until Nova confirms it.
 *
 * Source: osc-lib `compute` `server delete --wait` (DELETE, then `wait_for_delete`); openstacksdk
 * `delete_server(wait=True)`; otter's "verified delete" (send the DELETE again when nothing happens).
 *
 * @module
 */
import { traceDeleteWait } from '../core/telemetry.js';
import pLimit from 'p-limit';
import { timeoutSignal, untilSettledOrAborted, type TimerHandle } from '../core/clock.js';
import { startCall, type Call } from './call.js';
import { canonicalServerId, normaliseServerId } from '../core/validate.js';
import { isDeleting } from '../core/counting.js';
import { AbortError, AuthError, ConflictError, DeleteFailedError, DeleteTimeoutError, ForbiddenError, type FailureSummary } from '../errors/index.js';
import { InvalidResponseError, NovaApiError, OrphanedServerError } from '../errors/index.js';
import { isServerNotFound, isTransient } from '../transport/http.js';
import { retryAfterOf, withRetry } from '../transport/retry.js';
import { FailureLog } from './failureLog.js';
import type { DeleteEngine } from './engine.js';
import { DELETE_DEFAULTS, checkDeleteManyOptions, checkDeleteOptions } from './options.js';
import { lookById, type Observation } from './observe.js';
import type { DeleteServerOptions, DeleteServerResult, DeleteServersOptions, DeleteServersResult, DeleteSettled } from './types.js';
import { aboutServer, progressReporter, watchSpec, type DeleteCapable } from './waitForDelete.js';

/**
 * Delete one server; see the module description for the exact behaviour.
 * The id is taken in any case, with or without dashes, and sent, compared and reported (`serverId`)
 * in Nova's canonical form (lower case, 8-4-4-4-12 dashes: `canonicalServerId`).
 *
 * @throws {@link ValidationError} for a bad id or options (before any request); {@link ConflictError}
 * on 409; {@link DeleteFailedError} when the DELETE keeps failing or the server ends in ERROR twice;
 * {@link OrphanedServerError} (a DeleteFailedError) when Nova answers 404 for it yet still lists it;
 * {@link DeleteTimeoutError} when `timeoutMs` passes (DELETE phase included, and, with or without `wait`,
 * a 404 no successful listing could confirm by then); {@link AbortError} (its `serverId` set) when
 * `signal` aborts; {@link AuthError} and {@link ForbiddenError} as they come.
 */
export async function deleteServer(client: DeleteCapable, id: string, options: DeleteServerOptions = {}): Promise<DeleteServerResult> {
  const serverId = normaliseServerId('server id', id);
  try {
    checkDeleteOptions(options);
  } catch (error) {
    throw aboutServer(error, serverId, 'Deletion');
  }
  return deleteChecked(client.deleteEngine, serverId, options, alone);
}

/**
 * How one deletion of a batch goes through its first DELETE: `gate` bounds the DELETEs in flight (the
 * concurrency of `deleteServers`); `waitAfter` settles when the batch's DELETEs have all been
 * answered, so the waits start together.
 */
interface Batch {
  gate: <T>(fn: () => Promise<T>) => Promise<T>;
  waitAfter?: Promise<unknown> | undefined;
}

const alone: Batch = { gate: (fn) => fn() };

/** {@link deleteServer} after its checks, as part of `batch`. */
async function deleteChecked(
  engine: DeleteEngine,
  serverId: string,
  options: DeleteServerOptions,
  batch: Batch,
): Promise<DeleteServerResult> {
  engine.ledger.track(serverId);
  const call = startCall(engine, options);
  try {
    const r = await traceDeleteWait(serverId, () => engine.clock.now(), () => deleteOne(engine, serverId, options, call, batch));
    engine.ledger.settle(serverId, r.outcome === 'delete-requested' ? 'delete-requested' : 'confirmed');
    return r;
  } catch (e) {
    const error = aboutServer(e, serverId, 'Deletion');
    engine.ledger.settle(serverId, { error });
    throw error;
  } finally {
    call.dispose();
  }
}

async function deleteOne(
  engine: DeleteEngine,
  serverId: string,
  options: DeleteServerOptions,
  call: Call,
  batch: Batch,
): Promise<DeleteServerResult> {
  const log = engine.api.logger.child({ serverId });
  const result: DeleteServerResult = { serverId, outcome: 'delete-requested', deleteAttempts: 0, polls: 0, elapsedMs: 0, warnings: [] };
  const done = (outcome: DeleteServerResult['outcome']): DeleteServerResult => ({ ...result, outcome, elapsedMs: call.elapsedMs() });
  // What failed on the way: the DELETEs and looks of this call, and (merged in) those of its waits.
  const failures = new FailureLog(serverId, options.onFailure, log);
  let waitFailures: FailureSummary | undefined;
  const timeout = (): DeleteTimeoutError =>
    new DeleteTimeoutError({
      serverId,
      lastStatus: result.server?.status,
      lastTaskState: result.server?.['OS-EXT-STS:task_state'],
      polls: result.polls,
      elapsedMs: call.elapsedMs(),
      timeoutMs: call.timeoutMs,
      failures: failures.summary(waitFailures),
    });
  // Nova asked for a pause longer than the call has left: no request can go out in time; the
  // timeout names the Retry-After (its latest failure).
  const pausedPastDeadline = (e: unknown): boolean => Number.isFinite(call.timeoutMs) && retryAfterOf(e) >= call.startedAt + call.timeoutMs - engine.clock.now();
  const send = (kind: 'delete' | 'force'): Promise<'accepted' | 'already-gone'> =>
    sendDelete(engine, serverId, kind, call, options.deleteRetries ?? DELETE_DEFAULTS.deleteRetries, () => result.deleteAttempts++, failures).catch((e: unknown) => {
      if (call.timedOut() || pausedPastDeadline(e)) throw timeout();
      if (e instanceof NovaApiError && !(e instanceof ConflictError || e instanceof ForbiddenError || e instanceof AuthError)) {
        throw new DeleteFailedError({ serverId, faultMessage: e.message, deleteAttempts: result.deleteAttempts, cause: e, failures: failures.summary() });
      }
      throw e;
    });

  const kind = options.force ? 'force' : 'delete';
  // With `wait`, a DELETE that keeps failing with 5xx (one racing a create can) is no final failure
  // while the server may exist: look at it, then send the DELETE again with backoff, until timeoutMs.
  const first = await batch.gate(() =>
    options.wait
      ? deleteUntilAnswered(engine, serverId, call, () => send(kind), failures, options.intervalMs, (obs) => {
          result.polls++;
          result.server = obs.gone ? undefined : obs.server;
        }).catch((e: unknown) => {
          if (call.timedOut() || pausedPastDeadline(e)) throw timeout();
          if (options.signal?.aborted) throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: options.signal.reason, serverId });
          throw e;
        })
      : send(kind),
  );
  log.debug({ outcome: first, attempts: result.deleteAttempts }, 'delete requested');
  if (first !== 'accepted') {
    // Nova's 404 before anything showed the server: a listing that still shows it means an orphaned mapping.
    // While that listing fails nothing is confirmed: it is sent again until the call's deadline (then
    // DeleteTimeoutError, wait or not), never "already gone" on an unchecked 404.
    await engine.confirmGone(serverId, call.signal, result.deleteAttempts, options.intervalMs ?? DELETE_DEFAULTS.intervalMs).catch((e: unknown) => {
      if (call.timedOut()) throw timeout();
      if (e instanceof AbortError) throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: options.signal?.reason, serverId });
      throw e;
    });
    return done(first === 'already-gone' ? 'already-gone' : 'deleted');
  }
  if (!options.wait) return (engine.follows.follow(serverId, options), done('delete-requested')); // followed to its 404 while a guard listens
  if (batch.waitAfter) {
    // The other DELETEs of the batch first: no listing competes with them, and all waits start together.
    // Not past one interval before this call's deadline: a wait held until its deadline would end
    // "timed out" for a server gone long before, never looked at.
    const lastChanceMs = call.startedAt + call.timeoutMs - (options.intervalMs ?? DELETE_DEFAULTS.intervalMs) - engine.clock.now();
    const lastChance = Number.isFinite(lastChanceMs) ? timeoutSignal(engine.clock, Math.max(0, lastChanceMs), () => undefined) : undefined;
    const held = lastChance ? Promise.race([batch.waitAfter, new Promise((resolve) => lastChance.signal.addEventListener('abort', resolve, { once: true }))]) : batch.waitAfter;
    try {
      await untilSettledOrAborted(held, call.signal).catch((e: unknown) => {
        if (call.timedOut()) throw timeout();
        throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: e, serverId });
      });
    } finally {
      lastChance?.dispose();
    }
  }

  const redeleteAfterMs = options.redeleteAfterMs ?? DELETE_DEFAULTS.redeleteAfterMs;
  let underway = false;
  let redeleted = false;
  const progress = progressReporter(serverId, options, call.elapsedMs);
  const onObservation = (obs: Observation, polls: number): void => {
    progress?.(obs, polls);
    if (obs.gone || isDeleting(obs.server)) underway = true;
    if (!underway && !redeleted && redeleteAfterMs > 0 && call.elapsedMs() >= redeleteAfterMs) {
      redeleted = true;
      log.warn({ afterMs: call.elapsedMs() }, 'no sign of deletion: sending the DELETE again');
      // Not awaited by the wait; cancelled with the call.
      send('delete').catch((e: unknown) => log.debug({ err: (e as Error).message }, 'repeated DELETE failed'));
    }
  };

  let errorRedeleted = false;
  for (;;) {
    let end;
    try {
      end = await engine.watch(serverId, watchSpec(engine, options, call.startedAt, onObservation));
    } catch (e) {
      if (call.timedOut()) throw timeout();
      if (options.signal?.aborted) throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: options.signal.reason, serverId });
      if (e instanceof OrphanedServerError) throw new OrphanedServerError({ serverId, deleteAttempts: result.deleteAttempts, evidence: e.evidence, lastStatus: e.lastStatus });
      throw e;
    }
    result.polls += end.polls;
    result.server = end.server;
    waitFailures = end.failures ?? waitFailures;
    if (end.outcome === 'deleted') return done('deleted');
    if (end.outcome === 'timeout') throw timeout();
    if (end.outcome === 'soft-deleted') {
      if (!options.forceSoftDeleted) return done('soft-deleted');
      try {
        if ((await send('force')) === 'already-gone') return done('deleted');
      } catch (e) {
        if (!(e instanceof ForbiddenError)) throw e;
        const warning = `force-delete of soft-deleted server ${serverId} refused (403): ${e.message}`;
        log.warn({ requestId: e.requestId }, warning);
        result.warnings.push(warning);
        return done('soft-deleted');
      }
      continue; // wait for the 404 after the force-delete
    }
    // 'error': ERROR with no task in progress (sent once more), or a failed terminate (ERROR, still
    // task_state deleting, a new fault), which Nova would not retry: a repeated DELETE is ignored.
    const faultMessage = end.server?.fault?.message;
    if (errorRedeleted || end.lastTaskState === 'deleting') throw new DeleteFailedError({ serverId, faultMessage, deleteAttempts: result.deleteAttempts, lastStatus: end.lastStatus });
    errorRedeleted = true;
    log.warn({ fault: faultMessage }, 'server in ERROR while deleting: sending the DELETE once more');
    if ((await send('delete')) === 'already-gone') return done('deleted');
    underway = false;
  }
}

/**
 * Send the DELETE (`send`, with its own retries) until Nova answers it; after a DELETE that failed
 * with 5xx or no answer, look at the server: Nova's 404 for it means it is gone (`'gone'`); otherwise
 * the DELETE is sent again after p-retry's backoff (from `intervalMs`), within the call's time.
 */
function deleteUntilAnswered(
  engine: DeleteEngine,
  serverId: string,
  call: Call,
  send: () => Promise<'accepted' | 'already-gone'>,
  failures: FailureLog,
  intervalMs: number = DELETE_DEFAULTS.intervalMs,
  onLook: (obs: Observation) => void = () => undefined,
): Promise<'accepted' | 'already-gone' | 'gone'> {
  // 5xx or no answer, a 2xx other than 204 (a proxy's page) or an unreadable answer: the DELETE may
  // not have reached Nova, or may have.
  const unanswered = (e: unknown): boolean =>
    e instanceof DeleteFailedError &&
    (isTransient(e.cause) || e.cause instanceof InvalidResponseError || (e.cause instanceof NovaApiError && e.cause.status >= 200 && e.cause.status < 300)) &&
    !call.signal.aborted;
  return withRetry(
    async () => {
      try {
        return await send();
      } catch (e) {
        if (!unanswered(e)) throw e;
        // Nova asked for a pause (Retry-After): no look now; the DELETE goes again after the pause.
        if (retryAfterOf(e) > 0) throw e;
        const look = await engine
          .send(() => lookById(engine.api, serverId, call.signal, Math.min(engine.api.requestTimeoutMs, call.timeLeftMs())), call.signal)
          .catch((lookError: unknown) => void failures.note('look', lookError));
        if (look) {
          failures.answered();
          onLook(look);
        }
        if (look?.gone) return 'gone';
        throw e;
      }
    },
    {
      retries: Number.POSITIVE_INFINITY,
      minDelayMs: intervalMs,
      maxDelayMs: Math.max(intervalMs, 60_000),
      maxRetryTimeMs: call.timeLeftMs(),
      shouldRetry: unanswered,
      signal: call.signal,
      clock: engine.clock,
    },
  );
}

/**
 * One `DELETE /servers/{id}` (or the `forceDelete` action) under the engine's rate limit, retried on
 * transient failures within the call's time. Resolves `'accepted'` (its `Date` is the server's
 * `changes-since` anchor) or `'already-gone'` (Nova's 404 for this server).
 */
async function sendDelete(
  engine: DeleteEngine,
  serverId: string,
  kind: 'delete' | 'force',
  call: Call,
  deleteRetries: number,
  onAttempt: () => void,
  failures: FailureLog,
): Promise<'accepted' | 'already-gone'> {
  const path = `/servers/${encodeURIComponent(serverId)}${kind === 'force' ? '/action' : ''}`;
  try {
    // In a slot of the engine's DELETE window (the DELETEs in flight follow their latency), then under the rate limit.
    const res = await engine.outbound.delete(
      () =>
        engine.api.request({
          method: kind === 'force' ? 'POST' : 'DELETE',
          path,
          ...(kind === 'force' ? { body: { forceDelete: null } } : {}),
          serverId,
          signal: call.signal,
          requestTimeoutMs: Math.min(engine.api.requestTimeoutMs, call.timeLeftMs()),
          retry: kind === 'force' ? false : { retries: deleteRetries, maxRetryTimeMs: call.timeLeftMs() },
          onAttempt,
          // Each failed attempt is recorded (and told to `onFailure`) at once, not after the last retry;
          // Nova's 404 for this server is its answer, not a failure.
          onFailedAttempt: (error) => {
            if (!isServerNotFound(error, serverId)) failures.note('delete', error);
          },
        }),
      call.signal,
    );
    if (kind === 'delete' && res.status !== 204) {
      const notNova = new NovaApiError({
        status: res.status,
        message: `DELETE ${path} answered ${res.status}, not Nova's 204: the request may not have reached Nova (a proxy?)`,
        requestId: res.requestId,
        method: 'DELETE',
        serverId,
      });
      failures.note('delete', notNova);
      throw notNova;
    }
    if (kind === 'delete') engine.noteNovaDate(res.serverDateMs, serverId);
    failures.answered();
    engine.ledger.accepted(serverId);
    return 'accepted';
  } catch (e) {
    if (isServerNotFound(e, serverId)) {
      failures.answered();
      return 'already-gone';
    }
    if (call.signal.aborted && !(e instanceof NovaApiError && e.status > 0)) throw new AbortError(`Deletion of server ${serverId} was aborted`, { cause: call.signal.reason, serverId });
    throw e;
  }
}

/**
 * A batch's waits start once no DELETE was answered for this many times its slowest DELETE so far (and
 * for its `intervalMs`): see {@link deleteServers}.
 * @default 2
 */
const STALL_SLOWEST_FACTOR = 2;

/**
 * The longest a batch's accepted servers wait for its other DELETEs to be answered, in its
 * `intervalMs` (a DELETE retried with backoff counts as slow: it must not hold the others long).
 * @default 4
 */
const STALL_MAX_INTERVALS = 4;

/**
 * Delete many servers: the DELETEs go out paced by the client's rate limit, at most `concurrency` in
 * flight, and each server's wait starts as soon as its DELETE is accepted, so all of them are waited
 * for together (one shared listing a tick). Each settles on its own (`Promise.allSettled`): one
 * failure never hides the others. Ids are put in Nova's canonical form (lower case, 8-4-4-4-12
 * dashes: `canonicalServerId`) before any request, and results name that form; duplicate ids (in any
 * spelling) are deleted once.
 *
 * @throws {@link ValidationError} before any request when an id or option is bad.
 */
export async function deleteServers(client: DeleteCapable, ids: readonly string[], options: DeleteServersOptions = {}): Promise<DeleteServersResult> {
  checkDeleteManyOptions(ids, options);
  const { concurrency, onSettled, ...one } = options;
  const unique = [...new Set(ids.map(canonicalServerId))]; // Nova's form: `A…` and `a…` are one server
  const limit = pLimit(concurrency ?? DELETE_DEFAULTS.concurrency);
  const firstDeletes: Array<Promise<unknown>> = [];
  // The waits start when every first DELETE has been answered, or when no answer came for `intervalMs`
  // and for twice the slowest DELETE of the batch so far, at most 4 intervals (a DELETE that hangs must not hold the waits of
  // the servers already accepted; a Nova that answers each DELETE in a second is not hanging, and looks
  // sent while it still works through the batch's DELETEs find every server there: osc-lib's loop
  // sends none then). Before any answer there is nothing to wait for, so a slow Nova's first answers
  // start their waits together instead of one alone with its own GET. No wait is held past one
  // interval before its own deadline (`deleteOne`).
  const clock = client.deleteEngine.clock;
  const intervalMs = one.intervalMs ?? DELETE_DEFAULTS.intervalMs;
  let slowestMs = 0;
  let stall: TimerHandle | undefined;
  let released = false;
  let resolveWaits: () => void = () => undefined;
  const releaseWaits = (): void => {
    if (released) return;
    released = true;
    clock.clearTimeout(stall);
    resolveWaits();
  };
  const progress = (): void => {
    if (released) return;
    clock.clearTimeout(stall);
    stall = clock.setTimeout(releaseWaits, Math.max(intervalMs, Math.min(STALL_SLOWEST_FACTOR * slowestMs, STALL_MAX_INTERVALS * intervalMs)));
  };
  const batch: Batch = {
    gate: (fn) => {
      const p = limit(async () => {
        const startedAt = clock.now();
        try {
          return await fn();
        } finally {
          slowestMs = Math.max(slowestMs, clock.now() - startedAt);
        }
      });
      firstDeletes.push(p);
      p.then(progress, progress);
      if (firstDeletes.length === unique.length) void Promise.allSettled(firstDeletes).then(releaseWaits);
      return p;
    },
    waitAfter: new Promise<void>((resolve) => (resolveWaits = resolve)),
  };
  const results: DeleteSettled[] = await Promise.all(
    unique.map((serverId) =>
      deleteChecked(client.deleteEngine, serverId, one, batch).then(
        (value): DeleteSettled => ({ serverId, status: 'fulfilled', value }),
        (reason: unknown): DeleteSettled => ({ serverId, status: 'rejected', reason: reason instanceof Error ? reason : new Error(String(reason)) }),
      ).then((settled) => {
        try {
          onSettled?.(settled);
        } catch {
          // a callback must not break the others
        }
        return settled;
      }),
    ),
  );
  return {
    results,
    succeeded: results.filter((r) => r.status === 'fulfilled').map((r) => r.serverId),
    failed: results.flatMap((r) => (r.status === 'rejected' ? [{ serverId: r.serverId, error: r.reason }] : [])),
  };
}
