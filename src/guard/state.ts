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
import type { InProcessQuotaLedger } from './inProcessLedger.js';
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
  /** The private in-process ledger a call goes on with when `ledger` fails (see `ledgerUse.ts`). */
  fallback: InProcessQuotaLedger;
  /** The claims this guard holds, on whichever ledger they came from. */
  claims: Set<Claim>;
  log: Logger;
  stats: QuotaGuardStats;
  /** The guard's `onRetry` hook, exceptions already caught; `false` vetoes. */
  onRetry: (info: QuotaRetryInfo) => boolean | void;
  /** Keys of the warnings already logged (see {@link warnOnce}). */
  warned: Set<string>;
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

/** A claim the guard holds: the ledger's claim, the ledger it came from, and the guard's own notes. */
export interface Claim {
  readonly lc: LedgerClaim;
  /** The ledger the claim came from: it is released there, whatever happens to the others. */
  readonly ledger: QuotaLedger;
  readonly needs: ResourceAmounts;
  /** When the claim was taken, on the guard's clock (monotonic ms). */
  readonly claimedAtMs: number;
  /** The created server, once the POST answered 202. */
  serverId: string | undefined;
  /** True when nobody waits for the server to leave BUILD (`waitForActive: false`). */
  unwatched: boolean;
  /** True once released (or lost). */
  ended: boolean;
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
  /** The call's place in a ledger's queue while it waits for headroom. */
  place: { ledger: QuotaLedger; place: LedgerPlace } | undefined;
  /**
   * The call's claim tag: the value of the `nova-guard-claim` metadata every POST of this call
   * carries, so that a server whose create answer was lost can be found (`lostCreate.ts`).
   */
  readonly claimTag: string;
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
    place: undefined,
    claimTag: randomUUID(),
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
