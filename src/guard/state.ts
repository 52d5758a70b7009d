/**
 * Plain data of a guard and of one guarded call, shared by the functions of the guard's files.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ResourceAmounts } from '../core/types.js';
import type { LedgerClaim, LedgerPlace, QuotaLedger } from './ledger.js';
import { InProcessQuotaLedger } from './inProcessLedger.js';
import { resilientLedgerFor, type ResilientLedger } from './resilientLedger.js';
import type { QuotaGuardStats, QuotaRetryInfo, ResolvedOptions } from './options.js';
import type { PostRefusal, RetryPlan } from './retryPolicy.js';
import { randomUUID } from 'node:crypto';
import { firstDelayMs } from './backoff.js';

/** What the functions of one guard share. */
export interface GuardState {
  client: NovaClient;
  /** The client's clock: every timer and "now" of the guard. */
  clock: Clock;
  opts: ResolvedOptions;
  /** The ledger of claims, queue and wake-ups (the `ledger` option, or the guard's own in-process one). */
  ledger: QuotaLedger;
  /** The private in-process ledger a call goes on with when `ledger` fails (see `ledgerUse.ts`): `res.fallback`. */
  fallback: InProcessQuotaLedger;
  /** The process's one wrapper of `ledger`: its health, its fallback, its outage warnings (`resilientLedger.ts`). */
  res: ResilientLedger;
  /** Ledger calls sent in the background that `close()` waits for (`publishFreed`). */
  pending: Set<Promise<unknown>>;
  /** Stops re-claiming this guard's degraded claims when the ledger answers again, once listening (`degradedUse.ts`). */
  offDegraded: (() => void) | undefined;
  /** The claims this guard holds, on whichever ledger they came from. */
  claims: Set<Claim>;
  log: Logger;
  stats: QuotaGuardStats;
  /** The guard's `onRetry` hook, exceptions already caught; `false` vetoes. */
  onRetry: (info: QuotaRetryInfo) => boolean | void;
  /** Keys of the warnings already logged (see {@link warnOnce}). */
  warned: Set<string>;
  /** Claim tags watched after a POST whose fate is not known, by tag (`lateCreates.ts`). */
  watches: Map<string, LateCreateWatch>;
  /** Aborted by `QuotaGuard.close()`: ends every watch. */
  closing: AbortController;
}

/**
 * The state of a new guard on `client`: the `ledger` option or a new in-process ledger on the
 * client's clock, a private in-process fallback ledger with the same holder, and `onRetry` with its
 * exceptions caught (logged, ignored).
 */
export function newGuardState(client: NovaClient, opts: ResolvedOptions, log: Logger, stats: QuotaGuardStats): GuardState {
  const clock = client.clock;
  const ledger = opts.ledger ?? new InProcessQuotaLedger({ clock });
  const res = resilientLedgerFor(ledger, clock);
  const g: GuardState = {
    client,
    clock,
    opts,
    ledger,
    fallback: res.fallback,
    res,
    pending: new Set(),
    offDegraded: undefined,
    claims: new Set(),
    log,
    stats,
    warned: new Set(),
    watches: new Map(),
    closing: new AbortController(),
    onRetry: (info) => {
      try {
        return opts.onRetry?.(info);
      } catch (e) {
        log.warn({ err: (e as Error)?.message }, 'onRetry hook threw (ignored)');
        return undefined;
      }
    },
  };
  res.attach(g);
  return g;
}

/** Log `msg` at warn level the first time `key` is seen by this guard; later times at debug level. */
export function warnOnce(g: Pick<GuardState, 'log' | 'warned'>, key: string, fields: Record<string, unknown>, msg: string): void {
  if (g.warned.has(key)) {
    g.log.debug(fields, msg);
    return;
  }
  g.warned.add(key);
  g.log.warn(fields, msg);
}

/** One claim tag watched after a POST whose fate is not known (see `lateCreates.ts`). */
export interface LateCreateWatch {
  readonly tag: string;
  readonly name: string;
  /** When the last uncertain POST's time surely passes, on the guard's clock (ms). */
  untilMs: number;
  /** POSTs that may have made a server since the watch began. */
  posts: number;
  /** Servers with the tag accounted for: answered, adopted or deleted. */
  readonly seen: Set<string>;
  /** Servers with the tag the guard deleted. */
  readonly deleted: string[];
  /** The server the call returned, once it did. */
  kept: string | undefined;
  /** True while the call runs. */
  callRunning: boolean;
  /** The background watch, once the call has ended. */
  done: Promise<void> | undefined;
}

/** Counters of a new guard, all 0. */
export function newStats(): QuotaGuardStats {
  return {
    succeeded: 0,
    failed: 0,
    waits: 0,
    attempts: 0,
    quota403s: 0,
    quotaRetries: 0,
    lateQuotaFaults: 0,
    rateLimitRetries: 0,
    cleanups: 0,
    ambiguousCreates: 0,
    adoptedServers: 0,
    ledgerFallbacks: 0,
    lateCreatesDeleted: 0,
    ledgerOutages: 0,
    unfencedCreates: 0,
  };
}

/** A claim the guard holds: the ledger's claim, the ledger it came from, and the guard's own notes. */
export interface Claim {
  /** The ledger's claim: a new one when the lease was lost while the create was in flight (`leases.ts`). */
  lc: LedgerClaim;
  /**
   * The ledger the claim came from: it is released there, whatever happens to the others (the
   * guard's ledger once a degraded claim is re-claimed on it: `degradedUse.ts`).
   */
  ledger: QuotaLedger;
  /** True for a claim admitted on the fallback in degraded mode, to re-claim on the ledger when it answers (`degradedUse.ts`). */
  degraded: boolean;
  readonly needs: ResourceAmounts;
  /** When the claim was taken, on the guard's clock (monotonic ms). */
  readonly claimedAtMs: number;
  /** The created server, once the POST answered 202. */
  serverId: string | undefined;
  /** True when nobody waits for the server to leave BUILD (`waitForActive: false`). */
  unwatched: boolean;
  /** True once released (or lost). */
  ended: boolean;
  /** When the lease was last taken or renewed, on the guard's clock (ms: when that call was sent). */
  leaseFromMs: number;
  /** Until when the lease must cover the POST in flight, on the guard's clock (ms), once it is sent. */
  coverUntilMs: number;
  /** Stops the lease renewal, when one runs. */
  stopRenewal: (() => void) | undefined;
}

/** State of one guarded call (`createServer` or `withQuotaGuard`). */
export interface GuardedCall {
  /** Start, on the clock (monotonic ms). */
  readonly startedMs: number;
  /** `startedMs + maxWaitMs`. */
  readonly deadlineMs: number;
  /** The call's first backoff delay (p-retry's `minTimeout`): see `backoff.ts`. */
  readonly firstDelayMs: number;
  /** Waits for headroom so far. */
  waits: number;
  /** Attempts (POSTs, or `fn` calls) that counted so far. */
  posts: number;
  /** `GET /limits` reads so far. */
  limitsReads: number;
  /** Retries that used an attempt so far (p-retry's `retriesConsumed` after the last plan). */
  retriesConsumed: number;
  /** Retries that used no attempt so far (rate limits, refused connections). */
  freeRetries: number;
  /** The last wait ran up to the deadline: the next short `/limits` read ends the wait. */
  deadlineReached: boolean;
  /** A claim kept across a rate-limited or refused POST: the next attempt re-sends it at once. */
  heldClaim: Claim | undefined;
  /** How the last attempt's own POST was refused, if it was. */
  refusal: PostRefusal | undefined;
  /** Nova's message of the last quota error of this call. */
  lastQuotaMessage: string | undefined;
  /** The plan for the last failed attempt (read by p-retry's callbacks). */
  plan: RetryPlan | undefined;
  /** True while an attempt runs. */
  inAttempt: boolean;
  /** True once an attempt has resolved: an abort can no longer take its result away. */
  settled: boolean;
  /** The ledger this call uses: the guard's, or its fallback once the guard's failed during the call. */
  ledger: QuotaLedger;
  /** True when the call moved to the fallback because a ledger call failed: it goes back at its next admission once the ledger is not known down. */
  fallbackForOutage: boolean;
  /** True when the call's last admission waited for a ledger out of reach (`degradedUse.ts`): the `QuotaWaitTimeoutError` at `maxWaitMs` says so. */
  waitedForLedger: boolean;
  /** The call's place in a ledger's queue while it waits for headroom. */
  place: { ledger: QuotaLedger; place: LedgerPlace } | undefined;
  /** Wake-ups addressed to the call's place so far (`wakeUps.ts`). */
  wakes: number;
  /** Stops listening for the wake-ups of the call's place: set while it holds a place on a ledger that addresses them (`onWake`). */
  offWake: (() => void) | undefined;
  /** Ends the call's sleep for headroom at once, while it sleeps. */
  wake: (() => void) | undefined;
  /**
   * The call's claim tag: the value of the `nova-guard-claim` metadata every POST of this call
   * carries, so that a server whose create answer was lost can be found (`lostCreate.ts`).
   */
  readonly claimTag: string;
  /** The server the call returns, once an attempt has made it (the one server of its tag that stays). */
  keptServerId: string | undefined;
}

/** A new call starting now. */
export function newCall(g: Pick<GuardState, 'clock' | 'opts' | 'ledger'>, random: number = Math.random()): GuardedCall {
  const startedMs = g.clock.now();
  return {
    startedMs,
    deadlineMs: startedMs + g.opts.maxWaitMs,
    firstDelayMs: firstDelayMs(g.opts, random),
    waits: 0,
    posts: 0,
    limitsReads: 0,
    retriesConsumed: 0,
    freeRetries: 0,
    deadlineReached: false,
    heldClaim: undefined,
    refusal: undefined,
    lastQuotaMessage: undefined,
    plan: undefined,
    inAttempt: false,
    settled: false,
    ledger: g.ledger,
    fallbackForOutage: false,
    waitedForLedger: false,
    place: undefined,
    wakes: 0,
    offWake: undefined,
    wake: undefined,
    claimTag: randomUUID(),
    keptServerId: undefined,
  };
}

/** Time since the call started, in whole ms. */
export function elapsedMs(g: Pick<GuardState, 'clock'>, call: GuardedCall): number {
  return Math.round(g.clock.now() - call.startedMs);
}

/** Time left until `maxWaitMs` runs out, in ms (may be negative). */
export function remainingMs(g: Pick<GuardState, 'clock'>, call: GuardedCall): number {
  return call.deadlineMs - g.clock.now();
}
