/**
 * One guarded call (`createServer` or `withQuotaGuard`) as one object: its deadline, its counters,
 * its claim tag, the claim it keeps across a refused POST, and the ledger it is on
 * ({@link CallLedger}: the guard's ledger with the fallback behind it, its place in the queue and
 * its wake-ups).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { firstDelayMs } from './backoff.js';
import { CallLedger } from './callLedger.js';
import type { PostRefusal, RetryPlan } from './retryPolicy.js';
import type { Claim, GuardState } from './state.js';

/** See the module description. */
export class GuardedCall {
  /** Start, on the clock (monotonic ms). */
  readonly startedMs: number;
  /** `startedMs + maxWaitMs`. */
  readonly deadlineMs: number;
  /** The call's first backoff delay (p-retry's `minTimeout`): see `backoff.ts`. */
  readonly firstDelayMs: number;
  /**
   * The call's claim tag: the value of the `nova-guard-claim` metadata every POST of this call
   * carries, so that a server whose create answer was lost can be found (`lostCreate.ts`).
   */
  readonly claimTag: string = randomUUID();
  /** The ledger this call uses: the guard's, or its fallback once the guard's failed during the call; and the call's place in its queue. */
  readonly ledger: CallLedger;
  /** Waits for headroom so far. */
  waits = 0;
  /** Attempts (POSTs, or `fn` calls) that counted so far. */
  posts = 0;
  /** `GET /limits` reads so far. */
  limitsReads = 0;
  /** Retries that used an attempt so far (p-retry's `retriesConsumed` after the last plan). */
  retriesConsumed = 0;
  /** Retries that used no attempt so far (rate limits, refused connections). */
  freeRetries = 0;
  /** The last wait ran up to the deadline: the next short `/limits` read ends the wait. */
  deadlineReached = false;
  /** A claim kept across a rate-limited or refused POST: the next attempt re-sends it at once. */
  heldClaim: Claim | undefined = undefined;
  /** How the last attempt's own POST was refused, if it was. */
  refusal: PostRefusal | undefined = undefined;
  /** Nova's message of the last quota error of this call. */
  lastQuotaMessage: string | undefined = undefined;
  /** The plan for the last failed attempt (read by p-retry's callbacks). */
  plan: RetryPlan | undefined = undefined;
  /** True while an attempt runs. */
  inAttempt = false;
  /** True once an attempt has resolved: an abort can no longer take its result away. */
  settled = false;
  /** True when the call's last admission waited for a ledger out of reach (`degradedUse.ts`): the `QuotaWaitTimeoutError` at `maxWaitMs` says so. */
  waitedForLedger = false;
  /** The server the call returns, once an attempt has made it (the one server of its tag that stays). */
  keptServerId: string | undefined = undefined;
  readonly #clock: GuardState['clock'];

  /** A new call of the guard `g`, starting now; `random` draws its first backoff delay. */
  constructor(g: GuardState, random: number = Math.random()) {
    this.#clock = g.clock;
    this.startedMs = g.clock.now();
    this.deadlineMs = this.startedMs + g.opts.maxWaitMs;
    this.firstDelayMs = firstDelayMs(g.opts, random);
    this.ledger = new CallLedger(g, this.deadlineMs);
  }

  /** Time since the call started, in whole ms. */
  elapsedMs(): number {
    return Math.round(this.#clock.now() - this.startedMs);
  }

  /** Time left until `maxWaitMs` runs out, in ms (may be negative). */
  remainingMs(): number {
    return this.deadlineMs - this.#clock.now();
  }
}
