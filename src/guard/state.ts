/**
 * Plain data of a guard, shared by the functions of the guard's files (one guarded call is a
 * `GuardedCall`: `guardedCall.ts`).
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ResourceAmounts } from '../core/types.js';
import type { InProcessQuotaLedger, LedgerClaim, QuotaLedger } from '../ledger/index.js';
import type { SignalFanOut } from '../core/signalFanOut.js';
import type { DegradedLedger } from './degradedLedger.js';
import type { FreedCredits } from './freedCredits.js';
import type { QuotaGuardStats, QuotaRetryInfo, ResolvedOptions } from './options.js';

/** What the functions of one guard share. */
export interface GuardState {
  client: NovaClient;
  /** The client's clock: every timer and "now" of the guard. */
  clock: Clock;
  opts: ResolvedOptions;
  /** The ledger of claims, queue and wake-ups (the `ledger` option, or the guard's own in-process one). */
  ledger: QuotaLedger;
  /** The private in-process ledger a call goes on with when `ledger` fails (see `callLedger.ts`): `res.fallback`. */
  fallback: InProcessQuotaLedger;
  /** The guard's degraded mode over `ledger`: its health, probing, fallback, share rule and redo queue (`degradedLedger.ts`). */
  res: DegradedLedger;
  /** The servers this guard created, for the credit of their deletions to the kept reading (`freedCredits.ts`). */
  credits: FreedCredits;
  /** Stops re-claiming this guard's degraded claims when the ledger answers again, once listening (`ledgerUse.ts`, `reclaimDegraded`). */
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
  /**
   * The guard's one listener per signal its calls share (a caller's signal, `closing`): each call
   * and each wait for headroom follows them through its own signal (`core/signalFanOut.ts`).
   */
  signals: SignalFanOut;
}

/**
 * The longest lease, in ms, a call of the guard writes on its ledger: `leaseTtlMs`, or, when longer,
 * the lease that covers a POST in flight (the client's `requestTimeoutMs` plus the ledger's time
 * budget; `leases.ts`, `postLeaseMs`).
 */
export function longestLeaseMs(client: NovaClient, opts: ResolvedOptions, res: DegradedLedger): number {
  const request = client.requestTimeoutMs;
  if (!Number.isFinite(request)) return opts.leaseTtlMs;
  return Math.max(opts.leaseTtlMs, request + res.budgetMs());
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
  /** Claims held for servers of the call's lost POSTs that may still land (twins), until the watch ends (`lateCreates.ts`). */
  readonly twinClaims: Claim[];
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
    degradedAdmissions: 0,
    unfencedCreates: 0,
  };
}

/** A claim the guard holds: the ledger's claim, the ledger it came from, and the guard's own notes. */
export interface Claim {
  /** The ledger's claim: a new one when the lease was lost while the create was in flight (`leases.ts`). */
  lc: LedgerClaim;
  /**
   * The ledger the claim came from: it is released there, whatever happens to the others (the
   * guard's ledger once a degraded claim is re-claimed on it: `ledgerUse.ts`, `reclaimDegraded`).
   */
  ledger: QuotaLedger;
  /** True for a claim admitted on the fallback in degraded mode, to re-claim on the ledger when it answers (`ledgerUse.ts`, `reclaimDegraded`). */
  degraded: boolean;
  readonly needs: ResourceAmounts;
  /**
   * True when `needs` are exactly what Nova counts for the server the claim creates: a
   * `createServer` whose needs all came from its flavor (none given in its options). Only such a
   * claim's deletion may be credited to a kept reading (`freedCredits.ts`): needs given above the
   * flavor would subtract more than the reading counted.
   */
  flavorNeeds: boolean;
  /** The `stamp` of the reading the claim was admitted on, by the guard's ledger (not the fallback's): a quota 403 to its create refutes that reading (`AcquireRequest.refutedStamp`). */
  readingStamp: number | undefined;
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
  /** With `waitForActive: false`, the look at its server (`limitsRead.ts`): in flight (shared by the reads that arrive meanwhile), or when the last one ended. */
  readonly look: { running: Promise<void> | undefined; endedAtMs: number | undefined };
}

/** True for a promise (or any thenable) a hook returned: its rejection must be caught, never left unhandled. */
export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
