/**
 * `QuotaGuard`: create servers only when they fit in the quota, wait while they do not, absorb
 * transient quota 403s and late quota faults, and never leave a server it created behind.
 *
 * What one guarded create does (docs/field-cases.md: "Rate limits and the other 413s", "Quota
 * messages come in several shapes", "A 403 that is not a quota", "Unlimited, zero, and usage above
 * the limit", "Stale or wrong usage in /limits", "Several workers, one quota"):
 *
 * 1. Needs: vCPUs, RAM (MiB) and instances from the flavor (`GET /flavors/{id}`, cached by the
 *    client) or as given.
 * 2. Before every attempt, a fresh `GET /limits` (Nova API reference, "Limits") through the ledger
 *    (`src/ledger/port.ts`); headroom = max - used - in-flight claims of the ledger, -1 = unlimited, used above max
 *    = 0, missing = unknown (Nova decides). Needed above the limit itself:
 *    {@link QuotaNeverFitsError} at once, 0 POSTs (nodepool's `hasProviderQuota`).
 * 3. While short: wait (`admission.ts`: the call's backoff, first come first served, woken by a
 *    deletion the guard's client confirms), re-reading `/limits`, reporting each wait through
 *    `onWait` and the logger, up to `maxWaitMs`; then {@link QuotaWaitTimeoutError}, or with
 *    `onStaleLimits: 'attempt'` the create is tried anyway and Nova's own check decides.
 * 4. `POST /servers` (Nova API reference, "Create Server"). Retries follow the one policy of
 *    `retryPolicy.ts`, run by p-retry: a transient quota 403 (or legacy 413 quota) is retried after
 *    p-retry's backoff (`retryPolicy.ts`; at least `minDelayMs`, also on `Retry-After: 0`), re-reading
 *    `/limits` first, bounded by `maxAttempts` POSTs and `maxWaitMs` (p-retry's `maxRetryTime`);
 *    `onRetry` may veto. A permanent quota 403 is thrown at once. Any other 403
 *    ({@link ForbiddenError}: policy, proxy page) and a 413 that is too large
 *    ({@link RequestTooLargeError}) are thrown at once after exactly one POST. A rate limit (413
 *    `overLimit` with Retry-After, 429) waits Retry-After and re-POSTs without using an attempt
 *    (p-retry's `shouldConsumeRetry`). Every POST carries the call's claim tag (metadata
 *    `nova-guard-claim`); when its answer is lost (reset, timeout, 5xx, a garbled 2xx, a proxy's
 *    429) the guard searches for the server by name and tag, claim held, and adopts it, re-sends the
 *    POST at once with the same tag when a search finds nothing (a twin that lands later is deleted,
 *    counted by the ledger meanwhile: `lateCreates.ts`), or throws {@link CreateOutcomeUnknownError}.
 * 5. With `waitForActive`, poll the server until it leaves BUILD (osc-lib `wait_for_status`). ERROR
 *    with a quota fault (Nova's recheck race, or a build-aborted fault naming another service's
 *    quota: nodepool's "exceeds" + "quota" rule): delete it with wait (it holds quota too) and retry.
 *    Any other ERROR, BUILD past `activeTimeoutMs`, or an abort while waiting: delete it with wait
 *    and throw.
 *
 * In-flight claims (the `ledger` option; see `ledgerUse.ts` for claims and tags, `leases.ts` for leases, `degradedLedger.ts` for the fallback and degraded mode): a
 * claim is taken by the ledger's atomic `admit`, its lease renewed right before each POST (a lost
 * lease: no POST, back to admission) and while the create is in flight, and ends
 * - when the POST fails (nothing was created), or when the guard has deleted the server again;
 * - when the server has left BUILD (`waitForActive`): Nova counts it by then; reads already in
 *   flight at that moment still subtract it;
 * - with `waitForActive: false`, at the guard's next `/limits` read after a `GET /servers/{id}`
 *   shows the server out of BUILD (or gone), or after `activeTimeoutMs` at the latest;
 * - in {@link QuotaGuard.withQuotaGuard}, when `fn` settles.
 * A server in BUILD may be counted both by Nova and by its claim: the guard then waits a little
 * more than needed, never less.
 *
 * Time: every timer and "now" of the guard is on the client's clock (`client.clock`); p-retry and
 * its `maxRetryTime` read the global timers and `performance.now()`, which the default clock reads
 * too (fake timers drive both).
 *
 * @module
 */
import { withOperation } from '../core/telemetry.js';
import type { NovaClient } from '../nova/client.js';
import { checkCreateServerBody } from '../nova/options.js';
import { AbortError, NovaGuardError, ValidationError, throwIfAborted } from '../errors/index.js';
import { componentLogger, type Logger } from '../core/logger.js';
import { untilSettledOrAborted } from '../core/clock.js';
import { checkOptions } from '../core/options.js';
import type { CreateServerBody, ResourceAmounts, Server } from '../core/types.js';
import { CreateAttempt } from './guardedCreate.js';
import { needsFromFlavor, readFlavor } from './flavorNeeds.js';
import type { Headroom, QuotaNeeds } from '../ledger/index.js';
import { Admission } from './admission.js';
import { readHeadroom } from './limitsRead.js';
import { claimMetadata, releaseClaim } from './ledgerUse.js';
import { CLAIM_TAG_KEY } from './claimTag.js';
import { closeWatches, endCallWatch, liveMarks, watchedCreates, type LiveClaimMark, type UnsettledCreate } from './lateCreates.js';
import { InProcessQuotaLedger, bindLedgerScope, checkScopeNow } from '../ledger/index.js';
import { onDeleteAccepted, onDeleteConfirmed, onDeleteStarted } from '../delete/index.js';
import { quotaRetryReasonOf } from './retryPolicy.js';
import { isThenable, longestLeaseMs, newStats, type Claim, type GuardState } from './state.js';
import { DegradedLedger } from './degradedLedger.js';
import { SignalFanOut } from '../core/signalFanOut.js';
import { LEDGER_WARNING, processWarningSink, warnOncePerCause } from '../core/processWarning.js';
import { GuardedCall } from './guardedCall.js';
import { GUARDED_CALL_SPEC, GUARDED_CREATE_SPEC, NEEDS_OR_FLAVOR_SPEC, flavorIdOf, isFullNeeds, validateNeeds, validateGuardOptions, closeOwnedLedger } from './options.js';
import type { GuardedCallOptions, GuardedCreateOptions, QuotaGuardOptions, QuotaGuardStats, QuotaNeedsSpec, GuardClaimInfo, ResolvedOptions } from './options.js';
import { FreedCredits } from './freedCredits.js';

export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall } from '../ledger/index.js';
export { QUOTA_GUARD_DEFAULTS, QUOTA_LEDGER_DEFAULTS } from './options.js';
export type { QuotaWaitInfo, QuotaRetryReason, QuotaRetryInfo, QuotaGuardOptions, GuardedCallOptions, GuardedCreateOptions, QuotaNeedsSpec, QuotaGuardStats, ResolvedOptions, GuardClaimInfo } from './options.js';
export type { UnsettledCreate, LiveClaimMark } from './lateCreates.js';

/** One attempt of a guarded call, given the claim it may use. */
type Attempt<T> = (claim: Claim, signal: AbortSignal | undefined, call: GuardedCall) => Promise<T>;

/** What `withQuotaGuard`'s `fn` rejected with when it is not an `Error` (a string, `undefined`): carried through p-retry, never seen by the caller. */
class NonErrorRejection extends NovaGuardError {
  constructor(readonly value: unknown) {
    super('withQuotaGuard: fn rejected with a value that is not an Error');
  }
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
  readonly stats: QuotaGuardStats = newStats();
  readonly #state: GuardState;
  readonly #offConfirmed: () => void; // Nova's 404 after a delete of this client frees quota: every holder of the ledger hears of it
  #scopeBound: Promise<void> | undefined;

  /**
   * @throws {@link ValidationError} when `client` is missing, an option is out of range (a negative
   * duration, `maxAttempts` < 1, `jitter` outside [0, 1), `maxDelayMs` < `minDelayMs`), `ledger`
   * (or `NOVA_GUARD_LEDGER`) is a string that names no ledger, or `ledger` serves another project
   * than `client.projectId` (another endpoint: at the first call, before any request; see
   * `src/ledger/scope.ts`). A ledger that cannot work for a reason of its setup (a module missing,
   * an unwritable SQLite path, Redis refusing the credentials) is not known here: the first call
   * rejects with a `LedgerConfigError` (see `ledgerFallback`).
   */
  constructor(client: NovaClient, options: QuotaGuardOptions = {}) {
    if (!client || typeof client.getLimits !== 'function') {
      const promise = typeof (client as { then?: unknown } | null | undefined)?.then === 'function';
      throw new ValidationError(promise ? 'QuotaGuard needs a NovaClient, got a Promise: await it (const nova = await NovaClient.fromEnv())' : 'QuotaGuard needs a NovaClient');
    }
    this.client = client;
    const opts = validateGuardOptions(options, client.clock, client);
    const log = componentLogger(options.logger, 'quota-guard');
    if (opts.ledger) checkScopeNow(opts.ledger, client);
    this.#state = newGuardState(client, opts, log, this.stats);
    const g = this.#state;
    const offStarted = onDeleteStarted(client, (serverId, first) => g.credits.deleting(serverId, g.ledger, first));
    const offAccepted = onDeleteAccepted(client, (serverId) => g.credits.accepted(serverId));
    const offConfirmed = onDeleteConfirmed(client, (serverId) => g.res.publishFreed(serverId, g.credits.take(serverId)));
    this.#offConfirmed = () => {
      offStarted();
      offAccepted();
      offConfirmed();
    };
  }

  /**
   * Before the first request: the ledger serves this client's endpoint and project
   * (`src/ledger/scope.ts`); a refusal stays. The binding is shared by the guard's concurrent callers, so
   * it never takes one caller's signal (one caller's abort would fail them all): each caller waits
   * for it under its own `signal` ({@link AbortError} when that aborts), and the binding itself is
   * bounded by the client's request time limit and ended by {@link close}.
   */
  async #bindScope(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    const bound = (this.#scopeBound ??= bindLedgerScope(this.#state.opts.ledger, this.client, this.#state.closing.signal).catch((e: unknown) => {
      if (!(e instanceof ValidationError)) this.#scopeBound = undefined;
      throw e;
    }));
    if (signal) {
      try {
        await untilSettledOrAborted(bound, signal);
      } catch {
        throwIfAborted(signal);
      }
    }
    return bound;
  }

  /**
   * A call after {@link close} is refused before any request: a closed guard no longer hears the
   * client's confirmed deletions and may have closed its ledger.
   * @throws {@link AbortError} naming the closed guard.
   */
  #throwIfClosed(): void {
    if (this.#state.closing.signal.aborted) throw new AbortError('QuotaGuard is closed: no request sent (make a new QuotaGuard for more creates)');
  }

  /** The resolved options (defaults filled in). */
  get options(): Readonly<ResolvedOptions> {
    return this.#state.opts;
  }

  /** Claims currently held by this guard's creates. */
  get inFlightClaims(): number {
    return this.#state.claims.size;
  }

  /** Claim tags still watched after a POST whose fate is not known, during the call and after (`lateCreates.ts`). */
  unsettledCreates(): UnsettledCreate[] {
    return watchedCreates(this.#state);
  }

  /** For `Reaper`'s `liveClaims`: held claims by `nova-guard-claim-id`, watched tags by `nova-guard-claim`. */
  liveClaims(): LiveClaimMark[] {
    return liveMarks(this.#state);
  }

  /** End the creates waiting for quota headroom (they reject with `AbortError`, no POST sent) and every watch of {@link unsettledCreates} (`lateCreates.ts`); stop hearing the client's confirmed deletions (the last guard off ends the watcher's follows of deletions nobody waits for); wait for the background `publishFreed` calls (bounded): a `ledger` object given stays open and may be closed next, a ledger opened from a string (`'sqlite:…'`, `NOVA_GUARD_LEDGER`) is closed. Idempotent. */
  async close(): Promise<void> {
    const g = this.#state;
    const closeLedger = async (): Promise<void> => {
      await g.res.close();
      g.offDegraded?.();
    };
    await Promise.all([closeWatches(g), closeLedger(), this.#offConfirmed()]).then(() => closeOwnedLedger(g.opts));
  }

  /**
   * Read `GET /limits` now (through the ledger) and return the headroom of cores, RAM (MiB) and
   * instances, minus the ledger's in-flight claims (`QuotaLedger.peek`). Never cached.
   *
   * @throws the client's {@link NovaApiError} when `/limits` cannot be read; {@link AbortError} (also
   * at once, before any request, after {@link close}); `LedgerConfigError` when the ledger cannot
   * work for a reason of its setup (unless `ledgerFallback: 'in-process'`).
   */
  async headroom(options: GuardedCallOptions = {}): Promise<Headroom> {
    checkOptions('headroom options', options, GUARDED_CALL_SPEC);
    this.#throwIfClosed();
    // The read follows the caller's signal through its own (as createServer: one listener per guard).
    return this.#state.signals.run([options.signal], async (own) => {
      const signal = own ?? options.signal;
      await this.#bindScope(signal);
      return readHeadroom(this.#state, signal);
    });
  }

  /**
   * Create one server when it fits (see the module description for the whole behaviour). Resolves
   * the server as last seen (ACTIVE with `waitForActive`), with the POST's fields (`adminPass`).
   *
   * @param body - The `server` member of `POST /servers` (Nova API reference, "Create Server"). One
   *   server per call: `min_count`/`max_count` above 1 are refused (use {@link withQuotaGuard}).
   * @throws {@link ValidationError} for a bad body or needs (before any request);
   * {@link NotFoundError} when `flavorRef` is no flavor id (a flavor name such as `'m1.small'`: the
   * message says so; ids come from `GET /flavors`), before any claim; {@link NovaNetworkError}
   * (`timedOut`) when a read of the wait for headroom (`GET /limits`) is still unanswered at the
   * call's deadline (`maxWaitMs`, at least `finalReadMs` for a read at its end), the call's own or
   * another holder's that its ledger waits for;
   * {@link QuotaNeverFitsError} (the guard's verdict) when `/limits` shows it can never fit (0 POSTs);
   * `QuotaExceededError` (Nova's 403) `permanent: true` when Nova says so (1 POST), `permanent: false`
   * when `maxAttempts` or `maxWaitMs` ran out after quota 403s; {@link QuotaBuildFaultError} (the
   * guard's verdict) when the last attempt's server went to ERROR with a quota fault and was deleted; {@link QuotaWaitTimeoutError} (the guard's verdict, not an HTTP
   * error) when `maxWaitMs` ran out while `/limits` said it does not fit; {@link RateLimitError} when
   * Nova's Retry-After is not shorter than what is left of `maxWaitMs`; {@link ForbiddenError} (policy, proxy), {@link RequestTooLargeError},
   * {@link BadRequestError} at once; {@link ServerBuildError} when the server went to ERROR (not a
   * quota fault), stayed in BUILD past `activeTimeoutMs` or disappeared; {@link CreateOutcomeUnknownError}
   * when a POST's answer was lost and the search by its claim tag could not settle whether a server
   * was created (see `lostCreate.ts`); `LedgerConfigError` (a `ConfigError`), before any POST, when
   * the ledger cannot work for a reason of its setup (a module missing, an unwritable SQLite path,
   * Redis refusing the credentials; unless `ledgerFallback: 'in-process'`); {@link AbortError} (also
   * at once, before any request, after {@link close}).
   */
  async createServer(body: CreateServerBody, options: GuardedCreateOptions = {}): Promise<Server> {
    if (!body || typeof body !== 'object') throw new ValidationError('createServer needs the server body');
    checkOptions('createServer options', options, GUARDED_CREATE_SPEC);
    // The client's own checks of the body (name, flavorRef, keys no microversion accepts), before any wait.
    checkCreateServerBody(body);
    for (const k of ['min_count', 'max_count'] as const) {
      if (body[k] !== undefined && body[k] !== 1) {
        throw new ValidationError(`QuotaGuard.createServer creates one server; body.${k} must be 1 or absent (use withQuotaGuard for multi-create)`);
      }
    }
    if (options.needs !== undefined) validateNeeds(options.needs, 'needs');
    this.#throwIfClosed();
    throwIfAborted(options.signal);
    const given = options.needs;
    // One operation (one X-OpenStack-Request-ID) from the flavor read to the last request of the create.
    // The call follows the caller's signal through its own (one listener on it per guard, however many calls share it).
    return withOperation(() => this.#state.signals.run([options.signal], async (own) => {
      const callSignal = own ?? options.signal;
      await this.#bindScope(callSignal);
      let needs: QuotaNeeds;
      if (isFullNeeds(given)) {
        needs = { ...given };
      } else {
        const flavorId = flavorIdOf(body.flavorRef);
        const flavor = await readFlavor(this.#state, body.flavorRef, flavorId, callSignal);
        needs = needsFromFlavor(this.#state, flavorId, flavor, 1, given);
      }
      // Needs all from the flavor: what Nova counts for the server (its deletion may be credited, `freedCredits.ts`).
      const flavorNeeds = given === undefined;
      return this.#guarded(
        needs,
        (claim, signal, call) => {
          claim.flavorNeeds = flavorNeeds;
          return new CreateAttempt(this.#state, call, body, claim, signal, options.keepOnAbort === true).run();
        },
        callSignal,
      );
    }));
  }

  /**
   * Run your own create under the guard: wait for headroom for `needs`, claim it, call `fn`, and
   * retry `fn` (after backoff and a fresh `/limits` read) when it rejects with a non-permanent
   * `QuotaExceededError`, or a plain `Error` whose message is a quota message. The claim ends
   * when `fn` settles, so `fn` should resolve once Nova counts what it created (e.g. after the
   * server is ACTIVE), and clean up after itself when it rejects.
   *
   * @param needs - Numbers, or `{ flavorRef, count }` (count default 1) read from the flavor
   *   (`flavorRef` is a flavor id or URL, not a name); never both.
   * @param fn - Your create; receives the call's AbortSignal (never aborted when none was given) and
   *   the claim ({@link GuardClaimInfo}: its `metadata` is what the guard's own POSTs carry; add it
   *   to your create's metadata so the audit and the reaper know the server).
   * @throws {@link ValidationError} for bad needs or options, before any request (numbers beside
   * `flavorRef` included); as {@link createServer} for waits and quota; whatever `fn` throws otherwise.
   */
  withQuotaGuard<T>(needs: QuotaNeedsSpec, fn: (signal: AbortSignal, claim: GuardClaimInfo) => Promise<T>, options: GuardedCallOptions = {}): Promise<T> {
    // One request id, flavor read included; the call follows the caller's signal through its own (as createServer).
    return withOperation(() => this.#state.signals.run([options.signal], (signal) => this.#withQuotaGuard(needs, fn, signal === undefined ? options : { ...options, signal })));
  }

  async #withQuotaGuard<T>(needs: QuotaNeedsSpec, fn: (signal: AbortSignal, claim: GuardClaimInfo) => Promise<T>, options: GuardedCallOptions): Promise<T> {
    if (typeof fn !== 'function') throw new ValidationError('withQuotaGuard needs a function');
    if (!needs || typeof needs !== 'object') throw new ValidationError('withQuotaGuard needs QuotaNeeds or { flavorRef, count }');
    checkOptions('withQuotaGuard needs', needs, NEEDS_OR_FLAVOR_SPEC);
    checkOptions('withQuotaGuard options', options, GUARDED_CALL_SPEC);
    let resolved: QuotaNeeds;
    if ('flavorRef' in needs) {
      // Numbers beside a flavor were silently dropped: the claim would not be what the caller wrote.
      const mixed = (['cores', 'ramMiB', 'instances'] as const).filter((k) => (needs as Record<string, unknown>)[k] !== undefined);
      if (mixed.length > 0) throw new ValidationError(`withQuotaGuard needs are numbers ({ cores, ramMiB, instances }) or a flavor ({ flavorRef, count }), not both: ${mixed.join(', ')} given beside flavorRef`);
      const count = needs.count ?? 1;
      if (!Number.isInteger(count) || count < 1) throw new ValidationError(`count must be a positive integer, got ${String(count)}`);
      if (needs.flavorRef === undefined || String(needs.flavorRef).length === 0) throw new ValidationError('flavorRef must be a non-empty string');
      this.#throwIfClosed();
      await this.#bindScope(options.signal);
      throwIfAborted(options.signal);
      const flavorId = flavorIdOf(needs.flavorRef);
      const flavor = await readFlavor(this.#state, needs.flavorRef, flavorId, options.signal);
      resolved = needsFromFlavor(this.#state, flavorId, flavor, count);
    } else {
      if (!isFullNeeds(needs)) throw new ValidationError('needs must give cores, ramMiB and instances');
      validateNeeds(needs, 'needs');
      resolved = { cores: needs.cores, ramMiB: needs.ramMiB, instances: needs.instances };
    }
    this.#throwIfClosed();
    await this.#bindScope(options.signal); // needs checked first: bad input fails before any request
    const fnSignal = options.signal ?? new AbortController().signal;
    const guarded = this.#guarded(
      resolved,
      async (claim, _signal, call) => {
        try {
          const info = { claimId: claim.lc.id, token: claim.lc.token, holder: claim.lc.holder, metadata: claimMetadata(CLAIM_TAG_KEY, call.claimTag, claim.lc) };
          const result = await fn(fnSignal, info);
          await releaseClaim(this.#state, claim, 'counted');
          return result;
        } catch (e) {
          await releaseClaim(this.#state, claim, 'not-created');
          if (quotaRetryReasonOf(e) === 'quota') {
            this.stats.quota403s++;
            call.lastQuotaMessage = (e as Error).message;
          }
          // p-retry replaces a thrown non-Error with its own TypeError: carry it through, give it back below.
          throw e instanceof Error ? e : new NonErrorRejection(e);
        }
      },
      options.signal,
    );
    return guarded.catch((e: unknown) => {
      throw e instanceof NonErrorRejection ? e.value : e;
    });
  }

  /**
   * One guarded call (`guardedCall.ts`): its admissions wait for headroom and claim
   * (`admission.ts`), its attempts are `attempt`, and its claim tag is forgotten at the end
   * unless a POST of unknown fate keeps it watched (`lateCreates.ts`).
   */
  #guarded<T>(needs: ResourceAmounts, attempt: Attempt<T>, signal: AbortSignal | undefined): Promise<T> {
    const g = this.#state;
    const call = new GuardedCall(g);
    const admission = new Admission(g, call, needs);
    return call.run(
      {
        admit: (held, s) => admission.claim(held, s),
        attempt: (claim, s) => attempt(claim, s, call),
        forget: (kept) => endCallWatch(g, call, kept),
      },
      signal,
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

/**
 * Where the guard's ledger came from, as its warnings name it for a host name to check
 * (`degradedWords.ts`): the `ledger` option, `NOVA_GUARD_LEDGER`, or the ledger object's URL.
 */
function ledgerSourceWords(opts: ResolvedOptions): string {
  const from = opts.ownedLedger?.from;
  return from === undefined ? "the ledger object's URL" : from === 'NOVA_GUARD_LEDGER' ? 'NOVA_GUARD_LEDGER' : 'the `ledger` option';
}

/**
 * The state of a new guard on `client`: the `ledger` option or a new in-process ledger on the
 * client's clock, a private in-process fallback ledger with the same holder, and `onRetry` with its
 * exceptions caught (logged, ignored).
 */
export function newGuardState(client: NovaClient, opts: ResolvedOptions, log: Logger, stats: QuotaGuardStats): GuardState {
  const clock = client.clock;
  const ledger = opts.ledger ?? new InProcessQuotaLedger({ clock });
  // Made and dropped with the guard: no module state (see `degradedLedger.ts` for why not one per ledger object).
  const sink = opts.onWarning ?? processWarningSink(LEDGER_WARNING);
  const res: DegradedLedger = new DegradedLedger(ledger, clock, {
    stats,
    log,
    ledgerTimeoutMs: opts.ledgerTimeoutMs,
    longestLeaseMs: (): number => longestLeaseMs(client, opts, res),
    ledgerFallback: opts.ledgerFallback,
    warn: (cause, message) => warnOncePerCause(sink, cause, message),
    ledgerSource: ledgerSourceWords(opts),
  });
  const g: GuardState = {
    client,
    clock,
    opts,
    ledger,
    fallback: res.fallback,
    res,
    credits: new FreedCredits(clock),
    offDegraded: undefined,
    claims: new Set(),
    log,
    stats,
    warned: new Set(),
    watches: new Map(),
    closing: new AbortController(),
    signals: new SignalFanOut(),
    onRetry: (info) => {
      try {
        const veto = opts.onRetry?.(info);
        // An async hook: its promise is not a veto, and its rejection is ignored like a throw (never unhandled).
        if (isThenable(veto)) {
          veto.then(undefined, (e: unknown) => log.warn({ err: (e as Error)?.message }, 'onRetry hook threw (ignored)'));
          return undefined;
        }
        return veto;
      } catch (e) {
        log.warn({ err: (e as Error)?.message }, 'onRetry hook threw (ignored)');
        return undefined;
      }
    },
  };
  return g;
}
