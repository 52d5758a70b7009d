/**
 * What `QuotaGuard` hands its hooks: one wait for headroom ({@link QuotaWaitInfo}, to `onWait`) and
 * one retry ({@link QuotaRetryInfo}, to `onRetry`).
 *
 * @module
 */
import type { Headroom, Shortfall } from '../ledger/index.js';
import type { QuotaFinding, ResourceAmounts } from '../core/types.js';
import type { ShortfallCause } from './explain.js';

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
