/**
 * Options, hook payloads and counters of `QuotaGuard`, their defaults, and input validation (every
 * check runs before any request).
 *
 * Defaults ({@link QUOTA_GUARD_DEFAULTS}, the one defaults object of the guard) follow
 * docs/field-cases.md, "Default timings" (backoff 2000 ms doubling, ±20 % jitter, at least 1000 ms,
 * at most 60000 ms; 8 attempts; 600000 ms), and osc-lib's `wait_for_status` for the BUILD wait.
 *
 * **Hook payloads.** What `QuotaGuard` hands its hooks: one wait for headroom ({@link QuotaWaitInfo}, to `onWait`) and
 * one retry ({@link QuotaRetryInfo}, to `onRetry`).
 *
 * **Counters.** The counters of one guard (`QuotaGuard.stats`).
 *
 * @module
 */
import { checkDeleteOptions, type DeleteServerOptions } from '../delete/index.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { ValidationError } from '../errors/index.js';
import { componentLogger, type LoggerOption } from '../core/logger.js';
import type { Clock } from '../core/clock.js';
import type { NovaClient } from '../nova/index.js';
import { ledgerOption, type SpecLedger } from '../ledgers/index.js';
import { is } from '../core/validate.js';
import type { Headroom, QuotaLedger, Shortfall } from '../ledger/index.js';
import type { QuotaFinding, ResourceAmounts } from '../core/types.js';
import type { ShortfallCause } from './explain.js';

/** Options of {@link QuotaGuard}. Every duration is in milliseconds. */
export interface QuotaGuardOptions {
  /**
   * Longest time one guarded create may spend waiting for headroom and retrying quota errors, in
   * ms, from the call's start. Default 600000 (10 min). 0: never wait.
   */
  maxWaitMs?: number;
  /**
   * Time limit of a Nova read of the wait for headroom (`GET /limits`, and the listing of the
   * servers Nova does not count yet that a ledger never vetted asks for) that starts with less than
   * this left of `maxWaitMs` (the read at the end of the wait; every read with `maxWaitMs: 0`), in
   * ms. Other reads are cut when `maxWaitMs` runs out. A cut read's request is aborted and the call
   * rejects with `NovaNetworkError` (`timedOut`, `ETIMEDOUT`): a `/limits` that hangs ends a call's
   * wait by `maxWaitMs + finalReadMs`, not the client's `requestTimeoutMs` per attempt. `Infinity`:
   * only the client's limits.
   * @default 5000
   */
  finalReadMs?: number;
  /**
   * Most POSTs that count as attempts, the first included (rate-limited POSTs and refused
   * connections do not count; a server deleted after a late quota fault does). Default 8.
   */
  maxAttempts?: number;
  /** Floor of every backoff delay, in ms, also when Nova sends `Retry-After: 0`. Default 1000. */
  minDelayMs?: number;
  /**
   * First backoff delay before jitter, in ms (p-retry's `minTimeout`); doubles with every retry of
   * the call (p-retry's `factor` 2), and a wait for headroom doubles with every wait or retry before
   * it. Default 2000.
   */
  baseDelayMs?: number;
  /** Ceiling of every backoff delay (after jitter), in ms (p-retry's `maxTimeout`); also caps a quota 403's Retry-After; twice it bounds a waiting call's "still short" on a kept reading (`AcquireRequest.staleShortMs`). Default 60000. */
  maxDelayMs?: number;
  /**
   * Jitter: each delay is within ±jitter of `baseDelayMs × 2^n`. The random factor in
   * [1 - jitter, 1 + jitter] is drawn once per guarded call, so the calls of different workers
   * spread apart while the delays of one call keep doubling. Default 0.2.
   */
  jitter?: number;
  /** Called before each wait for headroom. Exceptions, and the rejection of an async hook, are logged and ignored. */
  onWait?: ((info: QuotaWaitInfo) => void) | undefined;
  /** Called before each retry; returning `false` vetoes it (the error is thrown). Exceptions, and the rejection of an async hook (whose promise is no veto), are logged and ignored. */
  onRetry?: ((info: QuotaRetryInfo) => boolean | void) | undefined;
  /**
   * What to do when `maxWaitMs` runs out and `/limits` still says the create does not fit:
   * `'throw'` a {@link QuotaWaitTimeoutError} (default), or `'attempt'` the create anyway and let
   * Nova's own check decide (reported usage can be wrong: docs/field-cases.md, "Reported usage is
   * wrong or stale"; nodepool `ignore-provider-quota`).
   * With `'attempt'`, a quota 403 on that last POST is thrown as Nova's {@link QuotaExceededError}.
   */
  onStaleLimits?: 'throw' | 'attempt';
  /** Wait for a created server to leave BUILD (late quota faults, cleanup); with false, an ERROR after the 202 is the caller's: neither deleted nor retried. @default true */
  waitForActive?: boolean;
  /**
   * When a wait for headroom runs out (and, when an `onWait` hook is given, on every
   * `EXPLAIN_EVERY_WAITS`th wait, for it), check why with one bounded listing of the project's servers (`GET /servers/detail` at
   * microversion 2.69 or later), compared with what `GET /limits` reports as used: the
   * {@link QuotaWaitTimeoutError} then says `shortfallCause` `'busy-fleet'` (the servers hold it) or
   * `'wrong-books'` with a `finding` (`stale-usage`, `stuck-deleting`, `down-cell`); a failed check leaves both undefined. The calls
   * of one `NovaClient` share listings (at most one per 60 s for waits, one at a time for time-outs). `false`: no check, no extra request. @default true
   */
  explainShortfall?: boolean;
  /** How long a server may stay in BUILD, in ms. Default 600000. */
  activeTimeoutMs?: number;
  /** Time between polls of a building server, in ms. Default 2000. */
  activeIntervalMs?: number;
  /**
   * While a create of this guard waits for headroom, the most time between two looks of the
   * client's watcher at each server being deleted (its delete waits and followed deletions; a wait's
   * own shorter `intervalMs` stays), in ms, so the 404 that frees the quota is seen within about this.
   * Still widened while Nova answers slowly or with 5xx/429 (the poll pace) and bounded by the
   * client's rate limit. `Infinity`: looks at the callers' intervals. @default 1000
   */
  shortLookIntervalMs?: number;
  /**
   * After a POST whose outcome is unknown (the answer was lost or garbled: reset, request timeout,
   * 5xx, a 2xx without `server`, a 429 that is not Nova's own `overLimit`), time between the
   * searches for the server by its claim tag when a search fails (doubling after each), and
   * between the watch's searches after the call, in ms. The first search that succeeds and finds
   * nothing lets the POST go again at once (see `lostCreate.ts`). Default 5000.
   */
  lostCreateIntervalMs?: number;
  /**
   * Most failed searches (listings that failed) after one POST of unknown outcome, at least 2; also
   * the failed searches in a row that end a watch after its bound. When they fail this often before
   * the server is found or surely absent, the call fails with {@link CreateOutcomeUnknownError}. Default 4.
   */
  lostCreateSearches?: number;
  /**
   * How long nova-api may go on handling a `POST /servers` after the guard stopped waiting for its
   * answer, in ms: a POST whose answer was lost or was not Nova's own (a proxy's timeout, 5xx or
   * 429, a reset) may still make its server until `sent + client.requestTimeoutMs +
   * novaApiTimeoutMs`. Until then the guard watches the call's claim tag, after the call too,
   * deleting every server with the tag beyond the one returned, and holds a claim for such a twin
   * (`lateCreates.ts`); the POST itself is re-sent after one clean search (`lostCreate.ts`). This
   * bound decides only "nothing was created" for the call's final answer after a second lost answer,
   * and when the watch ends. nova-api
   * has no hard limit of its own (its WSGI handling goes on when the client leaves, and its calls
   * to Glance, Neutron, Cinder and Placement have their own timeouts); the default is three times
   * Nova's `rpc_response_timeout` (60 s). Later still, the reaper finds the server by its tag.
   * @default 180000
   */
  novaApiTimeoutMs?: number;
  /**
   * Options of the guard's own deletes of servers it created and gave up on (always with `wait`).
   * Default `{ intervalMs: activeIntervalMs }` and `deleteServer`'s other defaults.
   */
  deleteOptions?: Omit<DeleteServerOptions, 'wait' | 'signal'>;
  /**
   * Where the guard keeps its claims, its queue of waiting calls and its "deletion confirmed"
   * wake-ups (protocol: `src/ledger/port.ts`). Share one ledger between guards for one first-come-first-served
   * queue with no over-commit; `RedisQuotaLedger` shares it across hosts, `SqliteQuotaLedger` across
   * processes of one host. Or a string, checked at construction and opened before the first request
   * (closed by `close()`): `'sqlite:[PATH]'`, `'redis://…'`, `'rediss://…'`, `'in-process'`; a SQLite or
   * Redis ledger so opened is the ledger's `forClient` of this guard's client, with the fleet watcher
   * on (its default: one elected process looks at Nova for every wait that shares the ledger). A ledger
   * call that rejects or outlives `ledgerTimeoutMs` moves that call to a private in-process ledger
   * (one warning); once this ledger has answered the process (or `everReached`), such a call admits
   * nothing there and waits for this ledger while claims of this process may still be live in it
   * (the last call that may have reached it, plus the longest lease a call asks for, plus the ledger's
   * `placeTtlMs`), then admits within this process's share of the quota (the fleet's hosts as last
   * seen) on fresh `/limits` readings, with Nova's check as the last line (one warning,
   * `stats.degradedAdmissions`; re-claimed on this ledger when it answers); a ledger never reached is
   * worked around with Nova's own check. A ledger known down (refused
   * connection, or a password refused after the ledger answered, 3 time-outs in a row) is skipped and
   * probed after 1 s, then at doubling intervals up to 5 s: one warning for the outage, one for the
   * recovery (`degradedLedger.ts`). A ledger that cannot work for a reason of its setup (module
   * missing, SQLite path that cannot be created, Redis refusing the credentials before it ever
   * answered) is no outage: see `ledgerFallback`.
   * @default NOVA_GUARD_LEDGER when set, else new InProcessQuotaLedger({ clock: client.clock })
   */
  ledger?: QuotaLedger | string | undefined;
  /**
   * What the guard does when its `ledger` cannot work for a reason of its setup, not an outage
   * (`LedgerConfigError`: better-sqlite3 or ioredis cannot be loaded, the SQLite file or its
   * directory cannot be created or opened or may not be used (a network file system, a file of
   * another project), Redis refuses the URL's credentials before the ledger
   * ever answered an admission of this guard):
   * - `'throw'`: every guarded call (`createServer`, `withQuotaGuard`, `headroom`) rejects with the
   *   `LedgerConfigError`, naming the cause and the fix, before any `POST /servers` (a bad
   *   ledger string is a `ValidationError` at construction already);
   * - `'in-process'`: a soft start: the guard goes on with its private in-process ledger for its
   *   life (its own calls share claims, other processes do not see them; Nova's quota check decides
   *   the rest), each such call counted in `stats.ledgerFallbacks`, one warning through the logger
   *   and `onWarning` (once per process by default).
   * An outage of a ledger that works (refused connection, time-outs, a Redis restart) is degraded
   * mode either way (see `ledger`).
   * @default 'throw'
   */
  ledgerFallback?: 'throw' | 'in-process';
  /**
   * Called with the warning of a fallback off the ledger (a soft start, `ledgerFallback:
   * 'in-process'`; a failed ledger call in degraded mode), once per cause for this function; the
   * message names the ledger's kind and the cause, never a password. Exceptions are ignored.
   * @default `(message) => process.emitWarning(message, 'NovaGuardLedgerWarning')`, once per process and cause
   */
  onWarning?: ((message: string) => void) | undefined;
  /**
   * Lease of a claim on the ledger, in ms: renewed right before every `POST /servers` (a lost lease
   * means no POST; that renewal covers the client's `requestTimeoutMs` plus the ledger's time budget)
   * and every `leaseTtlMs / 3` until the claim ends. A guard that dies loses its claims after this.
   * @default 120000
   * @throws {@link ValidationError} (at construction) below `LEASE_TTL_FLOOR_MS` (1000: well above a round trip) or not finite.
   */
  leaseTtlMs?: number;
  /**
   * Time limit of each call of the ledger, in ms (p-timeout on the client's clock; for `limits` and
   * `acquire`, Nova's time to answer `GET /limits` is not counted): `max(ledgerTimeoutMs,
   * ledger.callBudgetMs())` when the ledger measures its round trips, capped by what is left of
   * `maxWaitMs`. Past it, the guard falls back as `ledger` says.
   * @default 2000
   */
  ledgerTimeoutMs?: number;
  /** pino logger; default silent. Logs waits (info), retries and cleanups (warn), never request bodies. */
  logger?: LoggerOption;
}

/** The claim a {@link QuotaGuard.withQuotaGuard} call's `fn` runs under. */
export interface GuardClaimInfo {
  /** The ledger claim's id (metadata `nova-guard-claim-id`). */
  readonly claimId: string;
  /** Its fencing token (metadata `nova-guard-token`). */
  readonly token: number;
  /** Its holder (metadata `nova-guard-holder`). */
  readonly holder: string;
  /** The call's tag and the three above, as server metadata (each value at most 255 characters). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Options of one guarded call. */
export interface GuardedCallOptions {
  /**
   * Abort at any point: rejects with {@link AbortError}; a server already created is deleted first.
   * A create that has already finished when the abort lands is returned.
   */
  signal?: AbortSignal | undefined;
}

/** Options of {@link QuotaGuard.createServer}. */
export interface GuardedCreateOptions extends GuardedCallOptions {
  /** Needs to use instead of the flavor's (missing fields come from the flavor). */
  needs?: Partial<ResourceAmounts> | undefined;
  /**
   * When `signal` aborts after Nova accepted the POST (during the wait for ACTIVE), keep the server
   * instead of deleting it: the call rejects with an {@link AbortError} whose `serverId` names it,
   * and deleting it is the caller's job (the CLI's Ctrl-C during `server create --wait` prints it).
   * @default false (the guard deletes the server, with wait, before rejecting)
   */
  keepOnAbort?: boolean | undefined;
}

/**
 * What {@link QuotaGuard.withQuotaGuard} accepts as needs: numbers (`{ cores, ramMiB, instances }`,
 * RAM in MiB), or a flavor and a server count (`{ flavorRef, count }`; `flavorRef` is a flavor id or
 * URL, not a name; `count` default 1). Never both: `{ flavorRef, cores }` is refused by the compiler
 * as by the call (`ValidationError`).
 */
export type QuotaNeedsSpec =
  | (ResourceAmounts & { flavorRef?: never; count?: never })
  | { flavorRef: string; count?: number; cores?: never; ramMiB?: never; instances?: never };

/** Defaults of {@link QuotaGuardOptions}: the one place they are written. */
export const QUOTA_GUARD_DEFAULTS = Object.freeze({
  maxWaitMs: 600000,
  finalReadMs: 5000,
  maxAttempts: 8,
  minDelayMs: 1000,
  baseDelayMs: 2000,
  maxDelayMs: 60000,
  jitter: 0.2,
  onStaleLimits: 'throw' as const,
  waitForActive: true,
  explainShortfall: true,
  activeTimeoutMs: 600000,
  activeIntervalMs: 2000,
  shortLookIntervalMs: 1000,
  lostCreateIntervalMs: 5000,
  lostCreateSearches: 4,
  novaApiTimeoutMs: 180000,
});

/** The least `leaseTtlMs` a guard takes, in ms: well above a round trip to a ledger on another host. */
export const LEASE_TTL_FLOOR_MS = 1000;

/** Defaults of the ledger options of {@link QuotaGuardOptions} (`leaseTtlMs`, `ledgerTimeoutMs`, `ledgerFallback`). */
export const QUOTA_LEDGER_DEFAULTS = Object.freeze({
  leaseTtlMs: 120000,
  ledgerTimeoutMs: 2000,
  ledgerFallback: 'throw' as const,
});

/** The `deleteServer` options the guard passes on: all but `wait` and `signal`, which are its own. */

const GUARD_DELETE_KEYS = ['intervalMs', 'confirmIntervalMs', 'jitter', 'timeoutMs', 'onProgress', 'requestTimeoutMs', 'pollRetries', 'redeleteAfterMs', 'forceSoftDeleted', 'confirmGoneMs', 'deleteRetries', 'force'] as const satisfies ReadonlyArray<keyof NonNullable<QuotaGuardOptions['deleteOptions']>>;

/**
 * What {@link QuotaGuardOptions} takes: any other name is refused. Delays are timers: finite and at
 * most 2^31-1 ms (a longer Node timer fires at once). The rules between options (`maxDelayMs` not
 * below `minDelayMs`, a `ledger` with every method) are {@link validateOptions}'s.
 */
const QUOTA_GUARD_SPEC: OptionsSpec<QuotaGuardOptions> = {
  maxWaitMs: is.durationMs({ allowZero: true, timer: true }),
  finalReadMs: is.durationMs({ timer: true }),
  maxAttempts: is.integer({ min: 1 }),
  minDelayMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
  baseDelayMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
  maxDelayMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
  jitter: is.number({ min: 0, max: 1, maxExclusive: true }),
  onWait: is.function,
  onRetry: is.function,
  onStaleLimits: is.oneOf(['throw', 'attempt']),
  waitForActive: is.boolean,
  explainShortfall: is.boolean,
  activeTimeoutMs: is.durationMs({ timer: true }),
  activeIntervalMs: is.durationMs({ allowInfinity: false, timer: true }),
  shortLookIntervalMs: is.durationMs({ timer: true }),
  lostCreateIntervalMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
  novaApiTimeoutMs: is.durationMs({ allowZero: true, allowInfinity: false, timer: true }),
  lostCreateSearches: is.integer({ min: 2 }),
  // The guard deletes servers it gives up on with these: a bad one must fail now, not leave a server behind.
  deleteOptions: (value) => checkDeleteOptions(value as DeleteServerOptions, GUARD_DELETE_KEYS),
  ledger: null,
  // A lease is renewed every third of it: at least LEASE_TTL_FLOOR_MS, finite.
  leaseTtlMs: is.durationMs({ allowInfinity: false, timer: true }),
  ledgerTimeoutMs: is.durationMs({ allowInfinity: false, timer: true }),
  ledgerFallback: is.oneOf(['throw', 'in-process']),
  onWarning: is.function,
  logger: is.logger,
};

/** The methods a {@link QuotaGuardOptions.ledger} must have. */
const LEDGER_METHODS = [
  'bindScope',
  'acquire',
  'peek',
  'leave',
  'claimAnyway',
  'renew',
  'bind',
  'release',
  'publishFreed',
  'keptSeen',
  'onFreed',
  'onWake',
  'callBudgetMs',
  'probe',
  'everReached',
  'close',
] as const satisfies ReadonlyArray<keyof QuotaLedger>;

/** {@link QuotaGuardOptions} with the defaults filled in. */
export type ResolvedOptions = Required<Omit<QuotaGuardOptions, 'onWait' | 'onRetry' | 'onWarning' | 'logger' | 'deleteOptions' | 'ledger'>> &
  Pick<QuotaGuardOptions, 'onWait' | 'onRetry' | 'onWarning' | 'deleteOptions'> & {
    ledger?: QuotaLedger | undefined;
    /** The ledger the guard opened from a string (`'sqlite:…'`, `NOVA_GUARD_LEDGER`): the guard closes it at its `close()`. */
    ownedLedger?: SpecLedger | undefined;
  };

/** {@link validateOptions}, with a ledger string (or `NOVA_GUARD_LEDGER`) opened as a ledger the guard owns (`src/ledgers/specLedger.ts`; with `client`, by the ledger's `forClient`: its fleet watcher on by default). */
export function validateGuardOptions(o: QuotaGuardOptions, clock: Clock, client?: NovaClient): ResolvedOptions {
  const given: unknown = (o as QuotaGuardOptions | null | undefined)?.ledger;
  const checked = validateOptions(typeof given === 'string' ? { ...o, ledger: undefined } : o);
  const { owned } = ledgerOption(checked.ledger ?? given, clock, componentLogger(o.logger, 'quota-guard'), client);
  return owned === undefined ? checked : { ...checked, ledger: owned, ownedLedger: owned };
}

/** Close the ledger the guard of `opts` opened from a string, if any. */
export const closeOwnedLedger = async (opts: ResolvedOptions): Promise<void> => opts.ownedLedger?.close();

/**
 * Validate options and fill in {@link QUOTA_GUARD_DEFAULTS}.
 * @throws {@link ValidationError} for a negative duration, `maxAttempts` < 1, `jitter` outside [0, 1),
 * `maxDelayMs` < `minDelayMs`, an unknown `onStaleLimits`, a hook that is not a function,
 * `leaseTtlMs` below `LEASE_TTL_FLOOR_MS` (1000 ms) or not finite, `ledgerTimeoutMs` not positive and finite, or a `ledger`
 * without the methods of `QuotaLedger`.
 */
export function validateOptions(o: QuotaGuardOptions): ResolvedOptions {
  if (o === null || typeof o !== 'object') throw new ValidationError('QuotaGuard options must be an object');
  checkOptions('QuotaGuard options', o, QUOTA_GUARD_SPEC);
  if (o.leaseTtlMs !== undefined && o.leaseTtlMs < LEASE_TTL_FLOOR_MS) {
    throw new ValidationError(`leaseTtlMs must be at least ${LEASE_TTL_FLOOR_MS} ms (the floor: well above a round trip to the ledger), got ${o.leaseTtlMs}`);
  }
  if (o.ledger !== undefined) {
    const l = o.ledger as unknown as Record<string, unknown> | null;
    const missing = LEDGER_METHODS.filter((m) => typeof l?.[m] !== 'function');
    if (l === null || typeof l !== 'object' || missing.length > 0) throw new ValidationError(`ledger must be a QuotaLedger (missing: ${missing.join(', ') || 'an object'})`);
  }
  const r: ResolvedOptions = {
    ...QUOTA_GUARD_DEFAULTS,
    ...QUOTA_LEDGER_DEFAULTS,
    ...Object.fromEntries(Object.entries(o).filter(([k, v]) => v !== undefined && k !== 'logger')),
  } as ResolvedOptions;
  if (r.maxDelayMs < r.minDelayMs) throw new ValidationError(`maxDelayMs (${r.maxDelayMs}) must not be below minDelayMs (${r.minDelayMs})`);
  return r;
}

/** What `headroom` and `withQuotaGuard` take (see {@link GuardedCallOptions}). */
export const GUARDED_CALL_SPEC: OptionsSpec<GuardedCallOptions> = { signal: is.signal };

/** What `createServer` takes (see {@link GuardedCreateOptions}); `needs` is checked by {@link validateNeeds}. */
export const GUARDED_CREATE_SPEC: OptionsSpec<GuardedCreateOptions> = { signal: is.signal, needs: null, keepOnAbort: is.boolean };

/** The names of a {@link QuotaNeeds}: `ram` or `ramGiB` is refused with "did you mean ramMiB?". */
const NEEDS_SPEC: OptionsSpec<ResourceAmounts> = { cores: null, ramMiB: null, instances: null };

/** The names of `withQuotaGuard`'s `needs` (see {@link QuotaNeedsSpec}): numbers, or a flavor and a count. */
export const NEEDS_OR_FLAVOR_SPEC: OptionsSpec<ResourceAmounts & { flavorRef: string; count: number }> = { ...NEEDS_SPEC, flavorRef: null, count: null };

/**
 * @throws {@link ValidationError} for a name other than `cores`, `ramMiB`, `instances` (naming the
 * closest), or when a given field is negative, not finite, or `instances` is not an integer.
 */
export function validateNeeds(n: Partial<ResourceAmounts>, what: string): void {
  checkOptions(what, n, NEEDS_SPEC);
  for (const k of ['cores', 'ramMiB', 'instances'] as const) {
    const v = n[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ValidationError(`${what}.${k} must be a non-negative number, got ${String(v)}`);
  }
  if (n.instances !== undefined && !Number.isInteger(n.instances)) throw new ValidationError(`${what}.instances must be an integer, got ${n.instances}`);
}

/** True when all three fields are given. */
export function isFullNeeds(n: Partial<ResourceAmounts> | undefined): n is ResourceAmounts {
  return !!n && n.cores !== undefined && n.ramMiB !== undefined && n.instances !== undefined;
}

/** `flavorRef` may be an id or a URL (`.../flavors/{id}`): the id. */
export function flavorIdOf(ref: string): string {
  const s = String(ref);
  if (/^https?:\/\//i.test(s)) return decodeURIComponent(s.replace(/\/+$/, '').split('/').pop() ?? s);
  return s;
}

/** One wait for headroom, passed to `onWait` (`QuotaGuardOptions`). */
export interface QuotaWaitInfo {
  /** What the create needs. */
  needs: ResourceAmounts;
  /**
   * Why the create waits:
   * - `'short'`: the resources in `shortfalls` do not fit in what `GET /limits` shows, after the
   *   claims in flight (others must free quota);
   * - `'queued'`: the create fits alone, but calls queued ahead of it on the ledger come first
   *   (first come, first served); `shortfalls` are for its needs together with theirs;
   * - `'ledger-settling'`: the reading and the claims leave room, but the quota ledger admitted
   *   nothing yet: a `RedisQuotaLedger` in the first `restartGraceMs` after Redis started, or while
   *   it settles after a restart or a holder's reconnect (up to its `placeTtlMs`); `shortfalls` is
   *   empty;
   * - `'ledger-out-of-reach'`: the quota ledger is out of reach, and this process, which has used
   *   it, admits nothing without it while a claim of it may still be live in it, and past that only
   *   within its share of the quota (`degradedLedger.ts`; `ledgerOutOfReach` is true).
   */
  reason: 'short' | 'queued' | 'ledger-settling' | 'ledger-out-of-reach';
  /**
   * The resources that do not fit (needed, max, used, inFlight, headroom): with `reason` `'queued'`
   * for the needs together with those of the calls queued ahead; with `'ledger-out-of-reach'`,
   * stand-ins at `headroom: 0` while the process waits for the ledger, the room left in its share
   * (or in the reading) once it admits within it; empty with `'ledger-settling'`.
   */
  shortfalls: Shortfall[];
  /** True when the wait is for a quota ledger out of reach (`degradedLedger.ts`), not for headroom (Nova may have room). */
  ledgerOutOfReach: boolean;
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
  /**
   * On every `EXPLAIN_EVERY_WAITS`th wait of a call (with `explainShortfall`): what the check of
   * the shortfall found (`busy-fleet` or `wrong-books`, see `QuotaWaitTimeoutError.shortfallCause`);
   * undefined on other waits, when the check failed or was skipped (one listing per client per 60 s).
   */
  shortfallCause?: ShortfallCause | undefined;
  /** With `shortfallCause: 'wrong-books'`: the finding, shaped as the audit's. */
  finding?: QuotaFinding | undefined;
}

/** The values of {@link QuotaWaitInfo.reason}. */
export type QuotaWaitReason = QuotaWaitInfo['reason'];

/** Every this many waits of one call, the guard checks why it is short (one listing) before `onWait`. */
export const EXPLAIN_EVERY_WAITS = 5;

/** Why the guard retries. */
export type QuotaRetryReason =
  /** Nova answered the POST with a quota 403 (or legacy 413 quota). */
  | 'quota'
  /** The server went to ERROR with a quota fault; the guard deleted it. */
  | 'late-quota-fault'
  /**
   * A rate limit (413 overLimit with Retry-After, 429) on the POST: re-POST without using an attempt;
   * or on a read of the wait for headroom (`GET /limits`) past the client's own retries: read again
   * once its Retry-After has passed, without using an attempt.
   */
  | 'rate-limit';

/** One retry, passed to `onRetry` (`QuotaGuardOptions`). */
export interface QuotaRetryInfo {
  reason: QuotaRetryReason;
  /** The error that caused the retry. */
  error: Error;
  /** Attempts (quota-counted POSTs) made so far. */
  attempt: number;
  /** Attempts left after this retry's. */
  attemptsLeft: number;
  /**
   * Delay before the retry, in ms: for `'quota'` and `'late-quota-fault'` p-retry's backoff (or a
   * quota 403's Retry-After, at most `maxDelayMs`, when longer); for `'rate-limit'` Nova's Retry-After
   * (or the backoff when longer, so at least `minDelayMs`). At most the time left of `maxWaitMs`.
   */
  delayMs: number;
  /** Time since the call started, in ms. */
  elapsedMs: number;
  /** For `'late-quota-fault'`: the deleted server. */
  serverId?: string | undefined;
}

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
  /** POSTs whose outcome was unknown (reset, request timeout, 5xx, a 2xx without `server`, a proxy's 429): searched for by tag. */
  ambiguousCreates: number;
  /** Servers found by that search and adopted (returned as if the POST had answered). */
  adoptedServers: number;
  /**
   * Ledger calls that rejected or ran past `ledgerTimeoutMs` (or skipped a ledger known down), after
   * which a guarded call went on with the private in-process ledger. Once the ledger has answered an
   * admission of this process, such a call admits nothing there while claims of this process may
   * still be live in the ledger: it waits for it; past that, it admits within its share of the quota
   * (`degradedAdmissions`). A fallback costs time, not quota. Also each call of a guard that went on
   * without a ledger that cannot work (`ledgerFallback: 'in-process'`). Every fallback also warns once
   * per process and cause (`onWarning`, `NovaGuardLedgerWarning`).
   */
  ledgerFallbacks: number;
  /** Servers deleted because another server of the same guarded call carries its claim tag (a POST that landed late). */
  lateCreatesDeleted: number;
  /** Outages of the ledger seen while this guard used it (down: refused, or 3 time-outs in a row; see `ledger`). */
  ledgerOutages: number;
  /**
   * Admissions (count) made while the ledger was out of reach for longer than any claim of this
   * process can live in it: within this process's part of the quota, on a fresh `/limits` reading
   * (degraded mode, `degradedLedger.ts`); each is re-claimed on the ledger when it answers.
   * @default 0
   */
  degradedAdmissions: number;
  /** Creates whose claim lease was lost while the POST was in flight, re-claimed without a fencing check (`claimAnyway`). */
  unfencedCreates: number;
}
