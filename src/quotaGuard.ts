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
import type { NovaClient } from './client.js';
import type { DeleteServerOptions } from './deleteServer.js';
import {
  AbortError,
  ForbiddenError,
  NotFoundError,
  NovaApiError,
  NovaNetworkError,
  QuotaExceededError,
  QuotaWaitTimeoutError,
  RateLimitError,
  ServerBuildError,
  ValidationError,
  isAbortError,
  throwIfAborted,
} from './errors.js';
import {
  checkFit,
  computeHeadroom,
  describeShortfalls,
  shortfallResources,
  type Headroom,
  type QuotaNeeds,
  type Shortfall,
} from './headroom.js';
import { componentLogger, type Logger } from './logger.js';
import { Backoff } from './quotaBackoff.js';
import { ClaimLedger, type Claim } from './quotaClaims.js';
import { parseQuotaMessage } from './quotaMessage.js';
import { withRetry } from './retry.js';
import type { CreateServerBody, Server } from './types.js';
import { checkMs } from './waitForDelete.js';
import { waitForActive } from './waitForActive.js';

export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall } from './headroom.js';

/** One wait for headroom, passed to {@link QuotaGuardOptions.onWait}. */
export interface QuotaWaitInfo {
  /** What the create needs. */
  needs: QuotaNeeds;
  /** The resources that do not fit, each with needed, max, used, inFlight and headroom. */
  shortfalls: Shortfall[];
  /** The headroom just read. */
  headroom: Headroom;
  /** How long the guard waits before the next `/limits` read, in ms. */
  delayMs: number;
  /** Waits of this call so far, this one included. */
  waits: number;
  /** POSTs this call has made so far. */
  posts: number;
  /** Time since the call started, in ms. */
  elapsedMs: number;
}

/** Why the guard retries. */
export type QuotaRetryReason =
  /** Nova answered the POST with a quota 403 (or legacy 413 quota). */
  | 'quota'
  /** The server went to ERROR with a quota fault; the guard deleted it. */
  | 'late-quota-fault'
  /** A rate limit (413 overLimit with Retry-After, 429): re-POST without using an attempt. */
  | 'rate-limit';

/** One retry, passed to {@link QuotaGuardOptions.onRetry}. */
export interface QuotaRetryInfo {
  reason: QuotaRetryReason;
  /** The error that caused the retry. */
  error: Error;
  /** Attempts (quota-counted POSTs) made so far. */
  attempt: number;
  /** Attempts left after this retry's. */
  attemptsLeft: number;
  /** Delay before the retry, in ms (for `'rate-limit'`: the Retry-After part; p-retry adds its backoff). */
  delayMs: number;
  /** Time since the call started, in ms. */
  elapsedMs: number;
  /** For `'late-quota-fault'`: the deleted server. */
  serverId?: string | undefined;
}

/** Options of {@link QuotaGuard}. Every duration is in milliseconds. */
export interface QuotaGuardOptions {
  /**
   * Longest time one guarded create may spend waiting for headroom and retrying quota errors, in
   * ms, from the call's start. Default 600000 (10 min). 0: never wait.
   */
  maxWaitMs?: number;
  /** Most POSTs that count as attempts (rate-limited POSTs do not count). Default 8. */
  maxAttempts?: number;
  /** Floor of every backoff delay, in ms, also when Nova sends `Retry-After: 0`. Default 1000. */
  minDelayMs?: number;
  /** First backoff delay before jitter, in ms; doubles with every wait of the call. Default 2000. */
  baseDelayMs?: number;
  /** Ceiling of every backoff delay, in ms. Default 60000. */
  maxDelayMs?: number;
  /** Jitter: each delay is multiplied by a random factor in [1 - jitter, 1 + jitter]. Default 0.2. */
  jitter?: number;
  /** Called before each wait for headroom. Exceptions are logged and ignored. */
  onWait?: ((info: QuotaWaitInfo) => void) | undefined;
  /** Called before each retry; returning `false` vetoes it (the error is thrown). Exceptions are logged and ignored. */
  onRetry?: ((info: QuotaRetryInfo) => boolean | void) | undefined;
  /**
   * What to do when `maxWaitMs` runs out and `/limits` still says the create does not fit:
   * `'throw'` a {@link QuotaWaitTimeoutError} (default), or `'attempt'` the create anyway and let
   * Nova's own check decide (reported usage can be wrong: BUG-13; nodepool `ignore-provider-quota`).
   */
  onStaleLimits?: 'throw' | 'attempt';
  /** Wait for a created server to leave BUILD (late quota faults, cleanup). Default true. */
  waitForActive?: boolean;
  /** How long a server may stay in BUILD, in ms. Default 600000. */
  activeTimeoutMs?: number;
  /** Time between polls of a building server, in ms. Default 2000. */
  activeIntervalMs?: number;
  /**
   * Options of the guard's own deletes of servers it created and gave up on (always with `wait`).
   * Default `{ intervalMs: activeIntervalMs }` and `deleteServer`'s other defaults.
   */
  deleteOptions?: Omit<DeleteServerOptions, 'wait' | 'signal'>;
  /** pino logger; default silent. Logs waits (info), retries and cleanups (warn), never request bodies. */
  logger?: Logger;
}

/** Options of one guarded call. */
export interface GuardedCallOptions {
  /** Abort at any point: rejects with {@link AbortError}; a server already created is deleted first. */
  signal?: AbortSignal | undefined;
}

/** Options of {@link QuotaGuard.createServer}. */
export interface GuardedCreateOptions extends GuardedCallOptions {
  /** Needs to use instead of the flavor's (missing fields come from the flavor). */
  needs?: Partial<QuotaNeeds> | undefined;
}

/** What {@link QuotaGuard.withQuotaGuard} accepts as needs: numbers, or a flavor and a server count. */
export type QuotaNeedsSpec = QuotaNeeds | { flavorRef: string; count?: number };

/** Counters of one guard, for summaries (e.g. the demo). */
export interface QuotaGuardStats {
  /** Guarded calls that resolved. */
  succeeded: number;
  /** Guarded calls that rejected. */
  failed: number;
  /** Waits for headroom. */
  waits: number;
  /** POSTs (or `fn` calls) that counted as attempts. */
  attempts: number;
  /** Quota 403s (and legacy 413 quotas) answered to the guard's POSTs. */
  quota403s: number;
  /** Retries after a quota error. */
  quotaRetries: number;
  /** Servers that went to ERROR with a quota fault and were deleted. */
  lateQuotaFaults: number;
  /** Rate-limited POSTs re-sent. */
  rateLimitRetries: number;
  /** Servers the guard deleted because it gave up on them. */
  cleanups: number;
}

/** Defaults of {@link QuotaGuardOptions}. */
export const QUOTA_GUARD_DEFAULTS = Object.freeze({
  maxWaitMs: 600000,
  maxAttempts: 8,
  minDelayMs: 1000,
  baseDelayMs: 2000,
  maxDelayMs: 60000,
  jitter: 0.2,
  onStaleLimits: 'throw' as const,
  waitForActive: true,
  activeTimeoutMs: 600000,
  activeIntervalMs: 2000,
});

type ResolvedOptions = Required<Omit<QuotaGuardOptions, 'onWait' | 'onRetry' | 'logger' | 'deleteOptions'>> &
  Pick<QuotaGuardOptions, 'onWait' | 'onRetry' | 'deleteOptions'>;

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

function validateOptions(o: QuotaGuardOptions): ResolvedOptions {
  if (o === null || typeof o !== 'object') throw new ValidationError('QuotaGuard options must be an object');
  checkMs('maxWaitMs', o.maxWaitMs, { allowZero: true });
  checkMs('minDelayMs', o.minDelayMs, { allowZero: true });
  checkMs('baseDelayMs', o.baseDelayMs, { allowZero: true });
  checkMs('maxDelayMs', o.maxDelayMs, { allowZero: true });
  checkMs('activeTimeoutMs', o.activeTimeoutMs);
  checkMs('activeIntervalMs', o.activeIntervalMs);
  const r: ResolvedOptions = {
    ...QUOTA_GUARD_DEFAULTS,
    ...Object.fromEntries(Object.entries(o).filter(([k, v]) => v !== undefined && k !== 'logger')),
  } as ResolvedOptions;
  if (!Number.isInteger(r.maxAttempts) || r.maxAttempts < 1) throw new ValidationError(`maxAttempts must be a positive integer, got ${String(r.maxAttempts)}`);
  if (typeof r.jitter !== 'number' || !(r.jitter >= 0 && r.jitter < 1)) throw new ValidationError(`jitter must be a number in [0, 1), got ${String(r.jitter)}`);
  if (r.maxDelayMs < r.minDelayMs) throw new ValidationError(`maxDelayMs (${r.maxDelayMs}) must not be below minDelayMs (${r.minDelayMs})`);
  if (r.onStaleLimits !== 'throw' && r.onStaleLimits !== 'attempt') {
    throw new ValidationError(`onStaleLimits must be 'throw' or 'attempt', got ${JSON.stringify(r.onStaleLimits)}`);
  }
  if (typeof r.waitForActive !== 'boolean') throw new ValidationError('waitForActive must be a boolean');
  for (const hook of ['onWait', 'onRetry'] as const) {
    if (r[hook] !== undefined && typeof r[hook] !== 'function') throw new ValidationError(`${hook} must be a function`);
  }
  return r;
}

function validateNeeds(n: Partial<QuotaNeeds>, what: string): void {
  for (const k of ['cores', 'ramMiB', 'instances'] as const) {
    const v = n[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ValidationError(`${what}.${k} must be a non-negative number, got ${String(v)}`);
  }
  if (n.instances !== undefined && !Number.isInteger(n.instances)) throw new ValidationError(`${what}.instances must be an integer, got ${n.instances}`);
}

function isFullNeeds(n: Partial<QuotaNeeds> | undefined): n is QuotaNeeds {
  return !!n && n.cores !== undefined && n.ramMiB !== undefined && n.instances !== undefined;
}

/** `flavorRef` may be an id or a URL (`.../flavors/{id}`): the id. */
function flavorIdOf(ref: string): string {
  const s = String(ref);
  if (/^https?:\/\//i.test(s)) return decodeURIComponent(s.replace(/\/+$/, '').split('/').pop() ?? s);
  return s;
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

  /**
   * @throws {@link ValidationError} when `client` is missing or an option is out of range (a
   * negative duration, `maxAttempts` < 1, `jitter` outside [0, 1), `maxDelayMs` < `minDelayMs`).
   */
  constructor(client: NovaClient, options: QuotaGuardOptions = {}) {
    if (!client || typeof client.getLimits !== 'function') throw new ValidationError('QuotaGuard needs a NovaClient');
    this.client = client;
    this.#opts = validateOptions(options);
    this.#log = componentLogger(options.logger, 'quota-guard');
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
    return this.#guarded(needs, (claim, signal, call) => this.#createAttempt(body, claim, signal, call), options.signal);
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
    for (;;) {
      const { headroom, claim, fit } = await this.#readHeadroom(signal, needs);
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
      await sleep(delayMs, undefined, signal ? { signal } : undefined);
    }
  }

  /**
   * Fresh `/limits` → headroom; when `needs` is given, check and (if it fits) claim, all in the same
   * tick as the computation so no other caller of this guard can pass on the same numbers.
   */
  async #readHeadroom(
    signal: AbortSignal | undefined,
    needs: QuotaNeeds | undefined,
  ): Promise<{ headroom: Headroom; claim?: Claim | undefined; fit?: ReturnType<typeof checkFit> | undefined }> {
    await this.#refreshUnwatched(signal);
    const token = this.#ledger.beginRead();
    try {
      const limits = await this.client.getLimits({ signal });
      // Synchronous from here to the claim.
      const headroom = computeHeadroom(limits.absolute, this.#ledger.inFlight(token), { requestId: limits.requestId, readAtMs: Date.now() });
      if (!needs) return { headroom };
      const fit = checkFit(needs, headroom);
      return { headroom, fit, claim: fit.verdict === 'fits' ? this.#ledger.claim(needs) : undefined };
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

  /** One POST; rate limits (and refused connections) re-sent by withRetry without using an attempt. */
  async #createAttempt(body: CreateServerBody, claim: Claim, signal: AbortSignal | undefined, call: CallState): Promise<Server> {
    let created: Server | undefined;
    try {
      await withRetry(
        async () => {
          // The POST itself never takes the signal: an abort must not hide a server Nova created.
          created = await this.client.createServer(body, { retry: false });
          return created;
        },
        {
          retries: Number.POSITIVE_INFINITY,
          minDelayMs: this.#opts.minDelayMs,
          maxDelayMs: this.#opts.maxDelayMs,
          maxRetryTimeMs: Math.max(1, call.remainingMs()),
          signal,
          shouldRetry: (e) => e instanceof RateLimitError || (e instanceof NovaNetworkError && e.code === 'ECONNREFUSED'),
          onRetry: (error, _attempt, retryAfterMs) => {
            if (!(error instanceof RateLimitError)) return;
            const info: QuotaRetryInfo = {
              reason: 'rate-limit',
              error,
              attempt: call.posts,
              attemptsLeft: this.#opts.maxAttempts - call.posts,
              delayMs: retryAfterMs,
              elapsedMs: call.elapsedMs(),
            };
            if (this.#callOnRetry(info) === false) throw error;
            this.stats.rateLimitRetries++;
            this.#log.warn({ retryAfterMs, requestId: error.requestId }, 'create rate-limited: re-sending after Retry-After (no attempt used)');
          },
        },
      );
    } catch (e) {
      if (created) return this.#abandon(created, claim, e, call);
      this.#ledger.release(claim, 'not-created');
      if (e instanceof QuotaExceededError) {
        this.stats.quota403s++;
        if (e.permanent) this.#log.warn({ requestId: e.requestId, resources: e.resources }, 'permanent quota error: the request exceeds the limit itself');
      } else if (e instanceof ForbiddenError) {
        this.#log.warn({ requestId: e.requestId, status: e.status }, 'create forbidden (not a quota error): not retried');
      }
      throw e;
    }
    const server = created!;
    claim.serverId = server.id;
    if (signal?.aborted) return this.#abandon(server, claim, new AbortError(undefined, { cause: signal.reason }), call);
    if (!this.#opts.waitForActive) {
      claim.unwatched = true;
      return server;
    }
    return this.#settle(server, claim, signal, call);
  }

  /** Wait for the new server to leave BUILD; delete it when the guard gives up on it. */
  async #settle(created: Server, claim: Claim, signal: AbortSignal | undefined, call: CallState): Promise<Server> {
    const id = created.id;
    let res;
    try {
      res = await waitForActive(this.client, id, {
        timeoutMs: this.#opts.activeTimeoutMs,
        intervalMs: this.#opts.activeIntervalMs,
        signal,
      });
    } catch (e) {
      return this.#abandon(created, claim, e, call);
    }
    if (res.outcome === 'active') {
      this.#ledger.release(claim, 'counted');
      return { ...created, ...res.server } as Server;
    }
    if (res.outcome === 'gone') {
      this.#ledger.release(claim, 'not-created');
      throw new ServerBuildError({ serverId: id, reason: 'gone', lastStatus: res.lastStatus, elapsedMs: res.elapsedMs, deleted: true });
    }
    const fault = res.server?.fault;
    const cleanup = await this.#cleanup(id, claim);
    const buildError = new ServerBuildError({
      serverId: id,
      reason: res.outcome,
      lastStatus: res.lastStatus,
      faultMessage: fault?.message,
      faultCode: fault?.code,
      elapsedMs: res.elapsedMs,
      deleted: cleanup === undefined,
      cleanupError: cleanup,
    });
    const parsed = res.outcome === 'error' ? parseQuotaMessage(fault?.message) : undefined;
    if (parsed && cleanup === undefined) {
      this.stats.lateQuotaFaults++;
      this.#log.warn({ serverId: id, fault: fault?.message }, 'server went to ERROR with a quota fault: deleted it');
      throw new QuotaExceededError({
        status: 0,
        message: `Server ${id} went to ERROR with a quota fault and was deleted: ${fault?.message ?? ''}`,
        serverId: id,
        resources: parsed.resources,
        permanent: parsed.permanent,
        cause: buildError,
      });
    }
    this.#log.warn({ serverId: id, outcome: res.outcome, fault: fault?.message, deleted: cleanup === undefined }, 'server did not become ACTIVE');
    throw buildError;
  }

  /** The guard gives up on a created server (abort, failed poll): delete it, then throw. */
  async #abandon(created: Server, claim: Claim, error: unknown, call: CallState): Promise<never> {
    const id = created.id;
    const cleanup = await this.#cleanup(id, claim);
    this.#log.warn({ serverId: id, deleted: cleanup === undefined, posts: call.posts }, 'giving up on a created server');
    if (isAbortError(error) || error instanceof AbortError) {
      throw new AbortError(
        cleanup === undefined
          ? `The operation was aborted; server ${id} was deleted`
          : `The operation was aborted; server ${id} could NOT be deleted: ${cleanup.message}`,
        { cause: (error as Error).cause ?? error },
      );
    }
    throw error;
  }

  /** Delete a server the guard created, with wait, ignoring the caller's signal. Returns the failure, if any. */
  async #cleanup(id: string, claim: Claim): Promise<Error | undefined> {
    this.stats.cleanups++;
    try {
      await this.client.deleteServer(id, { intervalMs: this.#opts.activeIntervalMs, ...this.#opts.deleteOptions, wait: true });
      this.#ledger.release(claim, 'not-created');
      return undefined;
    } catch (e) {
      this.#ledger.release(claim, 'counted');
      this.#log.error({ serverId: id, err: (e as Error)?.message }, 'could not delete a server the guard created: it is left behind');
      return e instanceof Error ? e : new Error(String(e));
    }
  }
}

/**
 * `quotaGuard(client, options)`: the same as `new QuotaGuard(client, options)`.
 * @throws {@link ValidationError} as the constructor.
 */
export function quotaGuard(client: NovaClient, options: QuotaGuardOptions = {}): QuotaGuard {
  return new QuotaGuard(client, options);
}
