/**
 * `QuotaGuard`: create servers only when they fit in the quota, wait while they do not, absorb
 * transient quota 403s and late quota faults, and never leave a server it created behind.
 *
 * What one guarded create does (field cases BUG-08, 09, 10, 11, 13, 14 in
 * `../shared/reference/field-cases.md`; Nova facts §6.2–6.4 in `../shared/reference/nova-facts.md`):
 *
 * 1. Needs: vCPUs, RAM (MiB) and instances from the flavor (`GET /flavors/{id}`, cached by the
 *    client) or as given.
 * 2. Before every attempt, a fresh `GET /limits` (Nova API reference, "Limits"); headroom = max -
 *    used - in-flight claims of this guard (see {@link ClaimLedger}), -1 = unlimited, used above max
 *    = 0, missing = unknown (Nova decides). Needed above the limit itself: permanent
 *    {@link QuotaExceededError} at once, 0 POSTs (nodepool's `hasProviderQuota`).
 * 3. While short: wait with exponential backoff and jitter, re-reading `/limits`, reporting each wait
 *    through `onWait` and the logger, up to `maxWaitMs`; then {@link QuotaWaitTimeoutError}, or with
 *    `onStaleLimits: 'attempt'` the create is tried anyway and Nova's own check decides.
 * 4. `POST /servers` (Nova API reference, "Create Server"): a quota 403 (or the legacy 413 quota,
 *    every shape of {@link parseQuotaMessage}) is retried by p-retry after a backoff of at least
 *    `minDelayMs` (also on `Retry-After: 0`), re-reading `/limits` first, bounded by `maxAttempts`
 *    POSTs and `maxWaitMs`; `onRetry` may veto. A permanent quota 403 (requested above the limit)
 *    is thrown at once. Any other 403 ({@link ForbiddenError}: policy, proxy page) and a 413 that is
 *    too large ({@link RequestTooLargeError}) are thrown at once after exactly one POST. A rate
 *    limit (413 `overLimit` with Retry-After, 429) waits Retry-After and re-POSTs without using an
 *    attempt.
 * 5. With `waitForActive`, poll the server until it leaves BUILD (osc-lib `wait_for_status`). ERROR
 *    with a quota fault (Nova's recheck race, or a build-aborted fault naming another service's
 *    quota: nodepool's "exceeds" + "quota" rule): delete it with wait (it holds quota too) and retry.
 *    Any other ERROR, BUILD past `activeTimeoutMs`, or an abort while waiting: delete it with wait
 *    and throw.
 *
 * Fairness: the calls of one guard that wait for headroom are served first come, first served (a call
 * takes headroom only if what is left still serves every call queued before it), and a deletion
 * confirmed by the guard's own client wakes them at once instead of after their backoff.
 *
 * In-flight claims (one {@link ClaimLedger} per guard): a claim is taken in the same tick as the
 * check that passed, and ends
 * - when the POST fails (nothing was created), or when the guard has deleted the server again;
 * - when the server has left BUILD (`waitForActive`): Nova counts it by then; reads already in
 *   flight at that moment still subtract it;
 * - with `waitForActive: false`, at the guard's next `/limits` read after a `GET /servers/{id}`
 *   shows the server out of BUILD (or gone), or after `activeTimeoutMs` at the latest;
 * - in {@link QuotaGuard.withQuotaGuard}, when `fn` settles.
 * A server in BUILD may be counted both by Nova and by its claim: the guard then waits a little
 * more than needed, never less.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import type { NovaClient } from '../nova/client.js';
import { AbortError, NotFoundError, NovaApiError, QuotaExceededError, QuotaWaitTimeoutError, ServerBuildError, ValidationError, isAbortError, throwIfAborted } from '../errors/index.js';
import { createAttempt, type CreateContext } from './guardedCreate.js';
import { checkFit, computeHeadroom, describeShortfalls, shortfallResources, type Headroom, type QuotaNeeds } from './headroom.js';
import { componentLogger, type Logger } from '../core/logger.js';
import { Backoff } from './backoff.js';
import { ClaimLedger, type Claim } from './claims.js';
import { onDeleteConfirmed } from '../delete/index.js';
import {
  flavorIdOf,
  isFullNeeds,
  validateNeeds,
  validateOptions,
  type GuardedCallOptions,
  type GuardedCreateOptions,
  type QuotaGuardOptions,
  type QuotaGuardStats,
  type QuotaNeedsSpec,
  type QuotaRetryInfo,
  type QuotaRetryReason,
  type QuotaWaitInfo,
  type ResolvedOptions,
} from './options.js';
import { parseQuotaMessage } from '../errors/quotaMessage.js';
import type { CreateServerBody, Server } from '../core/types.js';

export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall } from './headroom.js';
export type {
  QuotaWaitInfo,
  QuotaRetryReason,
  QuotaRetryInfo,
  QuotaGuardOptions,
  GuardedCallOptions,
  GuardedCreateOptions,
  QuotaNeedsSpec,
  QuotaGuardStats,
  ResolvedOptions,
} from './options.js';
export { QUOTA_GUARD_DEFAULTS } from './options.js';

/** State of one guarded call. */
class CallState {
  readonly startedMs = performance.now();
  readonly deadlineMs: number;
  readonly backoff: Backoff;
  /** The last wait ran up to the deadline: the next short read ends the wait. */
  deadlineReached = false;
  pendingDelayMs = 0;
  waits = 0;
  posts = 0;
  limitsReads = 0;
  constructor(opts: ResolvedOptions) {
    this.deadlineMs = this.startedMs + opts.maxWaitMs;
    this.backoff = new Backoff(opts);
  }
  elapsedMs(): number {
    return Math.round(performance.now() - this.startedMs);
  }
  remainingMs(): number {
    return this.deadlineMs - performance.now();
  }
}

/** Why an attempt's error is retried, or undefined when it is not. */
function retryReasonOf(error: unknown): Exclude<QuotaRetryReason, 'rate-limit'> | undefined {
  if (error instanceof QuotaWaitTimeoutError) return undefined;
  if (error instanceof QuotaExceededError) {
    if (error.permanent) return undefined;
    return error.cause instanceof ServerBuildError ? 'late-quota-fault' : 'quota';
  }
  // A plain Error from a caller's own create (withQuotaGuard) whose text is a quota message.
  if (error instanceof Error && !(error instanceof NovaApiError) && !(error instanceof ServerBuildError) && !(error instanceof TypeError) && !isAbortError(error)) {
    const parsed = parseQuotaMessage(error.message);
    if (parsed && !parsed.permanent) return 'quota';
  }
  return undefined;
}

/**
 * Guards server creation against the project's quota. One guard per process (or per worker pool)
 * is the intended use: its in-flight claims are what keep its concurrent callers from all passing
 * the same headroom check.
 *
 * @example
 * ```ts
 * const guard = new QuotaGuard(nova, { maxWaitMs: 300000, logger });
 * const server = await guard.createServer({ name: 'ci-1', flavorRef: '2', imageRef, networks: 'none' });
 * ```
 */
export class QuotaGuard {
  /** The client the guard uses. */
  readonly client: NovaClient;
  /** Counters. */
  readonly stats: QuotaGuardStats = {
    succeeded: 0,
    failed: 0,
    waits: 0,
    attempts: 0,
    quota403s: 0,
    quotaRetries: 0,
    lateQuotaFaults: 0,
    rateLimitRetries: 0,
    cleanups: 0,
  };
  readonly #opts: ResolvedOptions;
  readonly #log: Logger;
  readonly #ledger = new ClaimLedger();
  readonly #createContext: CreateContext;
  /**
   * Calls of this guard that are waiting for headroom, oldest first (FIFO fairness): a call may
   * only take headroom that is left after the needs of every call queued before it, so a worker
   * that just freed cores cannot take them again ahead of workers that were already waiting.
   */
  readonly #queue: Array<{ needs: QuotaNeeds }> = [];

  /**
   * @throws {@link ValidationError} when `client` is missing or an option is out of range (a
   * negative duration, `maxAttempts` < 1, `jitter` outside [0, 1), `maxDelayMs` < `minDelayMs`).
   */
  constructor(client: NovaClient, options: QuotaGuardOptions = {}) {
    if (!client || typeof client.getLimits !== 'function') throw new ValidationError('QuotaGuard needs a NovaClient');
    this.client = client;
    this.#opts = validateOptions(options);
    this.#log = componentLogger(options.logger, 'quota-guard');
    this.#createContext = {
      client,
      opts: this.#opts,
      ledger: this.#ledger,
      log: this.#log,
      stats: this.stats,
      onRetry: (info) => this.#callOnRetry(info),
    };
  }

  /** The resolved options (defaults filled in). */
  get options(): Readonly<ResolvedOptions> {
    return this.#opts;
  }

  /** Claims currently held by this guard's creates. */
  get inFlightClaims(): number {
    return this.#ledger.size;
  }

  /**
   * Read `GET /limits` now and return the headroom of cores, RAM (MiB) and instances, minus this
   * guard's in-flight claims. Never cached.
   *
   * @throws the client's {@link NovaApiError} when `/limits` cannot be read; {@link AbortError}.
   */
  async headroom(options: GuardedCallOptions = {}): Promise<Headroom> {
    const { headroom } = await this.#readHeadroom(options.signal, undefined);
    return headroom;
  }

  /**
   * Create one server when it fits (see the module description for the whole behaviour). Resolves
   * the server as last seen (ACTIVE with `waitForActive`), with the POST's fields (`adminPass`).
   *
   * @param body - The `server` member of `POST /servers` (Nova API reference, "Create Server"). One
   *   server per call: `min_count`/`max_count` above 1 are refused (use {@link withQuotaGuard}).
   * @throws {@link ValidationError} for a bad body or needs (before any request);
   * {@link QuotaExceededError} `permanent: true` when the request can never fit (0 POSTs when the
   * guard sees it first, 1 POST when Nova does), `permanent: false` when `maxAttempts` or `maxWaitMs`
   * ran out after quota errors; {@link QuotaWaitTimeoutError} when `maxWaitMs` ran out while
   * `/limits` said it does not fit; {@link ForbiddenError} (policy, proxy), {@link RequestTooLargeError},
   * {@link BadRequestError} at once; {@link ServerBuildError} when the server went to ERROR (not a
   * quota fault), stayed in BUILD past `activeTimeoutMs` or disappeared; {@link AbortError}.
   */
  async createServer(body: CreateServerBody, options: GuardedCreateOptions = {}): Promise<Server> {
    if (!body || typeof body !== 'object') throw new ValidationError('createServer needs the server body');
    if (typeof body.name !== 'string' || body.name.length === 0) throw new ValidationError('createServer: body.name must be a non-empty string');
    if (body.flavorRef === undefined || String(body.flavorRef).length === 0) throw new ValidationError('createServer: body.flavorRef is required');
    for (const k of ['min_count', 'max_count'] as const) {
      if (body[k] !== undefined && body[k] !== 1) {
        throw new ValidationError(`QuotaGuard.createServer creates one server; body.${k} must be 1 or absent (use withQuotaGuard for multi-create)`);
      }
    }
    if (options.needs !== undefined) validateNeeds(options.needs, 'needs');
    throwIfAborted(options.signal);
    const given = options.needs;
    let needs: QuotaNeeds;
    if (isFullNeeds(given)) {
      needs = { ...given };
    } else {
      const flavor = await this.client.getFlavor(flavorIdOf(body.flavorRef), { signal: options.signal });
      needs = { cores: given?.cores ?? flavor.vcpus, ramMiB: given?.ramMiB ?? flavor.ram, instances: given?.instances ?? 1 };
    }
    return this.#guarded(needs, (claim, signal, call) => createAttempt(this.#createContext, body, claim, signal, call), options.signal);
  }

  /**
   * Run your own create under the guard: wait for headroom for `needs`, claim it, call `fn`, and
   * retry `fn` (after backoff and a fresh `/limits` read) when it rejects with a non-permanent
   * {@link QuotaExceededError}, or a plain `Error` whose message is a quota message. The claim ends
   * when `fn` settles, so `fn` should resolve once Nova counts what it created (e.g. after the
   * server is ACTIVE), and clean up after itself when it rejects.
   *
   * @param needs - Numbers, or `{ flavorRef, count }` (count default 1) read from the flavor.
   * @param fn - Your create; receives the call's AbortSignal (never aborted when none was given).
   * @throws as {@link createServer} for waits and quota; whatever `fn` throws otherwise.
   */
  async withQuotaGuard<T>(needs: QuotaNeedsSpec, fn: (signal: AbortSignal) => Promise<T>, options: GuardedCallOptions = {}): Promise<T> {
    if (typeof fn !== 'function') throw new ValidationError('withQuotaGuard needs a function');
    if (!needs || typeof needs !== 'object') throw new ValidationError('withQuotaGuard needs QuotaNeeds or { flavorRef, count }');
    let resolved: QuotaNeeds;
    if ('flavorRef' in needs) {
      const count = needs.count ?? 1;
      if (!Number.isInteger(count) || count < 1) throw new ValidationError(`count must be a positive integer, got ${String(count)}`);
      if (needs.flavorRef === undefined || String(needs.flavorRef).length === 0) throw new ValidationError('flavorRef must be a non-empty string');
      throwIfAborted(options.signal);
      const flavor = await this.client.getFlavor(flavorIdOf(needs.flavorRef), { signal: options.signal });
      resolved = { cores: flavor.vcpus * count, ramMiB: flavor.ram * count, instances: count };
    } else {
      if (!isFullNeeds(needs)) throw new ValidationError('needs must give cores, ramMiB and instances');
      validateNeeds(needs, 'needs');
      resolved = { cores: needs.cores, ramMiB: needs.ramMiB, instances: needs.instances };
    }
    const fnSignal = options.signal ?? new AbortController().signal;
    return this.#guarded(
      resolved,
      async (claim) => {
        try {
          const result = await fn(fnSignal);
          this.#ledger.release(claim, 'counted');
          return result;
        } catch (e) {
          this.#ledger.release(claim, 'not-created');
          if (retryReasonOf(e) === 'quota') this.stats.quota403s++;
          throw e;
        }
      },
      options.signal,
    );
  }

  /** The attempt loop shared by createServer and withQuotaGuard (p-retry, one attempt = one POST). */
  async #guarded<T>(
    needs: QuotaNeeds,
    attempt: (claim: Claim, signal: AbortSignal | undefined, call: CallState) => Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const call = new CallState(this.#opts);
    const sleepOpts = signal ? { signal } : undefined;
    try {
      // No `signal` for p-retry: it would drop a created server when the abort lands just after the
      // POST; every sleep and request below takes the signal instead. minTimeout 0: the guard
      // sleeps its own jittered delay (see quotaBackoff.ts).
      const result = await pRetry(
        async () => {
          if (call.pendingDelayMs > 0) {
            const d = call.pendingDelayMs;
            call.pendingDelayMs = 0;
            await sleep(d, undefined, sleepOpts);
          }
          throwIfAborted(signal);
          const claim = await this.#waitForHeadroom(needs, call, signal);
          call.posts++;
          this.stats.attempts++;
          return attempt(claim, signal, call);
        },
        {
          retries: this.#opts.maxAttempts - 1,
          minTimeout: 0,
          maxTimeout: 0,
          randomize: false,
          shouldRetry: ({ error, retriesLeft }) => this.#shouldRetry(error, call, retriesLeft, signal),
        },
      );
      this.stats.succeeded++;
      return result;
    } catch (e) {
      this.stats.failed++;
      if (signal?.aborted && !(e instanceof AbortError)) throw new AbortError(undefined, { cause: signal.reason });
      throw e;
    }
  }

  #shouldRetry(error: unknown, call: CallState, retriesLeft: number, signal: AbortSignal | undefined): boolean {
    const reason = retryReasonOf(error);
    if (!reason || signal?.aborted) return false;
    const remaining = call.remainingMs();
    if (remaining <= 0) {
      this.#log.warn({ elapsedMs: call.elapsedMs(), posts: call.posts }, 'quota error and maxWaitMs spent: giving up');
      return false;
    }
    const floor = error instanceof NovaApiError ? (error.retryAfterMs ?? 0) : 0;
    const delayMs = Math.max(0, Math.min(call.backoff.next(floor), Math.ceil(remaining)));
    const info: QuotaRetryInfo = {
      reason,
      error: error as Error,
      attempt: call.posts,
      attemptsLeft: retriesLeft,
      delayMs,
      elapsedMs: call.elapsedMs(),
      serverId: reason === 'late-quota-fault' ? (error as QuotaExceededError).serverId : undefined,
    };
    if (this.#callOnRetry(info) === false) {
      this.#log.warn({ reason, attempt: call.posts }, 'retry vetoed by onRetry');
      return false;
    }
    if (delayMs >= remaining) call.deadlineReached = true;
    if (reason === 'quota') this.stats.quotaRetries++;
    this.#log.warn(
      { reason, attempt: call.posts, attemptsLeft: retriesLeft, delayMs, requestId: error instanceof NovaApiError ? error.requestId : undefined },
      `quota error (${(error as Error).message}): retrying after backoff`,
    );
    call.pendingDelayMs = delayMs;
    return true;
  }

  #callOnRetry(info: QuotaRetryInfo): boolean | void {
    try {
      return this.#opts.onRetry?.(info);
    } catch (e) {
      this.#log.warn({ err: (e as Error)?.message }, 'onRetry hook threw (ignored)');
      return undefined;
    }
  }

  /** Read `/limits`, check, and claim in one tick; wait while short. Resolves the claim. */
  async #waitForHeadroom(needs: QuotaNeeds, call: CallState, signal: AbortSignal | undefined): Promise<Claim> {
    const place = { needs };
    try {
      return await this.#waitInQueue(place, call, signal);
    } finally {
      const i = this.#queue.indexOf(place);
      if (i >= 0) this.#queue.splice(i, 1);
    }
  }

  /** Needs of the calls queued before `place` (all queued calls when `place` is not queued yet). */
  #aheadOf(place: { needs: QuotaNeeds }): QuotaNeeds {
    const ahead: QuotaNeeds = { cores: 0, ramMiB: 0, instances: 0 };
    for (const q of this.#queue) {
      if (q === place) break;
      ahead.cores += q.needs.cores;
      ahead.ramMiB += q.needs.ramMiB;
      ahead.instances += q.needs.instances;
    }
    return ahead;
  }

  async #waitInQueue(place: { needs: QuotaNeeds }, call: CallState, signal: AbortSignal | undefined): Promise<Claim> {
    const { needs } = place;
    for (;;) {
      const { headroom, claim, fit } = await this.#readHeadroom(signal, needs, this.#aheadOf(place));
      call.limitsReads++;
      if (claim) return claim;
      const shortfalls = fit!.shortfalls;
      if (fit!.verdict === 'never') {
        throw new QuotaExceededError({
          status: 0,
          message: `Quota can never fit this request (needed above the limit itself): ${describeShortfalls(shortfalls)}`,
          requestId: headroom.requestId,
          resources: shortfallResources(shortfalls),
          permanent: true,
        });
      }
      const remaining = call.remainingMs();
      if (call.deadlineReached || remaining <= 0) {
        if (this.#opts.onStaleLimits === 'attempt') {
          this.#log.warn(
            { shortfalls: describeShortfalls(shortfalls), elapsedMs: call.elapsedMs() },
            'maxWaitMs spent and /limits still reports too little headroom: attempting the create anyway (onStaleLimits: attempt)',
          );
          return this.#ledger.claim(needs);
        }
        throw new QuotaWaitTimeoutError({
          status: 0,
          message: `No quota headroom after waiting ${call.elapsedMs()} ms (maxWaitMs ${this.#opts.maxWaitMs}): ${describeShortfalls(shortfalls)}`,
          requestId: headroom.requestId,
          resources: shortfallResources(shortfalls),
          waitedMs: call.elapsedMs(),
          maxWaitMs: this.#opts.maxWaitMs,
          limitsReads: call.limitsReads,
          headroom,
          needs,
        });
      }
      const delayMs = Math.max(0, Math.min(call.backoff.next(), Math.ceil(remaining)));
      if (delayMs >= remaining) call.deadlineReached = true;
      call.waits++;
      this.stats.waits++;
      const info: QuotaWaitInfo = { needs, shortfalls, headroom, delayMs, waits: call.waits, posts: call.posts, elapsedMs: call.elapsedMs() };
      try {
        this.#opts.onWait?.(info);
      } catch (e) {
        this.#log.warn({ err: (e as Error)?.message }, 'onWait hook threw (ignored)');
      }
      this.#log.info(
        { needs, shortfalls: describeShortfalls(shortfalls), delayMs, waits: call.waits, requestId: headroom.requestId },
        'not enough quota headroom: waiting',
      );
      if (!this.#queue.includes(place)) this.#queue.push(place);
      await this.#sleepUntilFreed(delayMs, signal);
    }
  }

  /**
   * Sleep `delayMs`, or less: a deletion confirmed by this guard's client (Nova has freed quota)
   * ends the sleep at once. Rejects when `signal` aborts.
   */
  async #sleepUntilFreed(delayMs: number, signal: AbortSignal | undefined): Promise<void> {
    const wake = new AbortController();
    const onAbort = (): void => wake.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const unsubscribe = onDeleteConfirmed(this.client, () => wake.abort());
    try {
      await sleep(delayMs, undefined, { signal: wake.signal });
    } catch (e) {
      if (signal?.aborted || !wake.signal.aborted) throw e;
    } finally {
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
    }
    throwIfAborted(signal);
  }

  /**
   * Fresh `/limits` → headroom; when `needs` is given, check and (if it fits) claim, all in the same
   * tick as the computation so no other caller of this guard can pass on the same numbers.
   */
  async #readHeadroom(
    signal: AbortSignal | undefined,
    needs: QuotaNeeds | undefined,
    ahead: QuotaNeeds = { cores: 0, ramMiB: 0, instances: 0 },
  ): Promise<{ headroom: Headroom; claim?: Claim | undefined; fit?: ReturnType<typeof checkFit> | undefined }> {
    await this.#refreshUnwatched(signal);
    const token = this.#ledger.beginRead();
    try {
      const limits = await this.client.getLimits({ signal });
      // Synchronous from here to the claim.
      const headroom = computeHeadroom(limits.absolute, this.#ledger.inFlight(token), { requestId: limits.requestId, readAtMs: Date.now() });
      if (!needs) return { headroom };
      const fit = checkFit(needs, headroom);
      if (fit.verdict !== 'fits') return { headroom, fit };
      // It fits; it may take the headroom only if what is left still serves the calls queued before it.
      const withAhead = checkFit(
        { cores: needs.cores + ahead.cores, ramMiB: needs.ramMiB + ahead.ramMiB, instances: needs.instances + ahead.instances },
        headroom,
      );
      if (withAhead.verdict !== 'fits' && (ahead.cores > 0 || ahead.ramMiB > 0 || ahead.instances > 0)) {
        return { headroom, fit: { verdict: 'short', shortfalls: withAhead.shortfalls } };
      }
      return { headroom, fit, claim: this.#ledger.claim(needs) };
    } finally {
      this.#ledger.endRead(token);
    }
  }

  /** With `waitForActive: false`: end the claims of servers that have left BUILD (or are gone). */
  async #refreshUnwatched(signal: AbortSignal | undefined): Promise<void> {
    const claims = this.#ledger.unwatched();
    if (claims.length === 0) return;
    await Promise.all(
      claims.map(async (c) => {
        if (performance.now() - c.claimedAtMs > this.#opts.activeTimeoutMs) {
          this.#ledger.release(c, 'counted');
          return;
        }
        try {
          const s = await this.client.getServer(c.serverId!, { signal });
          if (String(s.status ?? '').toUpperCase() !== 'BUILD') this.#ledger.release(c, 'counted');
        } catch (e) {
          if (e instanceof NotFoundError) this.#ledger.release(c, 'not-created');
          else if (signal?.aborted) throw e;
          // otherwise keep the claim: it errs on the side of waiting
        }
      }),
    );
  }
}

/**
 * `quotaGuard(client, options)`: the same as `new QuotaGuard(client, options)`.
 * @throws {@link ValidationError} as the constructor.
 */
export function quotaGuard(client: NovaClient, options: QuotaGuardOptions = {}): QuotaGuard {
  return new QuotaGuard(client, options);
}
