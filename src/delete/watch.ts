/**
 * The engine's record of one wait (`Watch`) and of one server with pending waits (`Entry`), and how
 * a wait's end goes out: with what failed on the way (`FailureLog`) when anything did.
 *
 * @module
 */
import { AbortError } from '../errors/index.js';
import type { FailureLog } from './failureLog.js';
import { isFatalLookFailure } from './observe.js';
import type { OperationContext } from '../core/telemetry.js';
import type { WatchEnd, WatchSpec } from './types.js';

/** One pending wait. */
export interface Watch extends WatchSpec {
  readonly entry: Entry;
  nextAt: number;
  polls: number;
  /** Failed looks in a row. */
  failures: number;
  /** What failed on the way (its summary goes with the end). */
  readonly log: FailureLog;
  end: WatchEnd;
  resolve: (end: WatchEnd) => void;
  reject: (error: unknown) => void;
}

/** One server with pending waits: what the engine, its ticks and the rules of evidence know of it. */
export interface Entry {
  readonly serverId: string;
  /**
   * Nova time from which its changes show in `changes-since`: its own last `updated`, or before any
   * look the `Date` of its accepted DELETE; undefined when neither is known.
   */
  anchorNovaMs: number | undefined;
  /** Local wall-clock time its first wait started. */
  readonly createdWallMs: number;
  /** It has shown status `DELETED`: only its 404 is awaited. */
  seenDeleted: boolean;
  /**
   * Its deletion is under way: its last status showed task_state `deleting` or status `DELETED`
   * (ever shown `DELETED` counts), or, before any look, the fleet's hint said so (`WatchSpec.phase`).
   */
  underway: boolean;
  /** Clock time of its last status (a body from a GET or a `changes-since` listing). */
  statusAt: number;
  /** Clock time of its last look answered (a body, a listing that showed it, the 404): `lookPlan.ts`. */
  lastLookAt: number;
  /**
   * Clock time its deletion began as this engine knows it: its own DELETE accepted, or else the first
   * look that showed it `deleting` or `DELETED` (`lookPlan.ts`); undefined while none did.
   */
  deletingSince: number | undefined;
  /** Its last look showed it in BUILD (not deleting): `lookPlan.ts`. */
  building: boolean;
  /** Clock time its first wait started (the start of its build, for a server just created). */
  readonly buildSince: number;
  /**
   * Its absence from a brief listing has triggered a GET of its own already (`absenceTriggers` in
   * `evidence.ts`): a later absence waits for its due look (one extra GET per deletion at most).
   */
  absenceLooked: boolean;
  /**
   * The latest successful listing showed it present (a brief listing, or `changes-since` with a status
   * other than `DELETED`): a 404 of its own GET is then checked against a listing before it counts.
   */
  lastListed: boolean;
  /** Aborted when its last wait ends: its own requests stop. */
  readonly controller: AbortController;
  /** The operation of its first wait: its own GETs carry that operation's `X-OpenStack-Request-ID`. */
  readonly operation?: OperationContext | undefined;
  readonly watches: Watch[];
  /** The fleet watcher cannot answer for it (`fleet.ts`): its waits look by themselves. */
  fleetOff?: boolean;
}

/** The error of a wait its signal ended. */
export const watchAborted = (serverId: string, reason: unknown): AbortError =>
  new AbortError(`Waiting for the deletion of server ${serverId} was aborted`, { cause: reason, serverId });

/** End `w` with `end` (with its failures, if any) or reject it with an error. */
export function endWatch(w: Watch, end: WatchEnd | Error): void {
  if (end instanceof Error) {
    w.reject(end);
    return;
  }
  const failures = w.log.summary();
  w.resolve(failures ? { ...end, failures } : end);
}

/** The time limit of a look at `entry`, in ms: its waits' `requestTimeoutMs` (or `defaultMs`, the client's), capped by the latest deadline. */
export function lookTimeoutMs(entry: Entry, defaultMs: number, now: number): number {
  let limit = 0;
  let deadline = 0;
  for (const w of entry.watches) {
    limit = Math.max(limit, w.requestTimeoutMs ?? defaultMs);
    deadline = Math.max(deadline, w.deadlineAt);
  }
  return Math.max(1, Math.min(limit, deadline - now));
}

/**
 * A new record of a server with no wait yet (`anchorNovaMs`: the Date of its accepted DELETE, if
 * known; `now`: clock time; `deletingSince`: clock time its DELETE was accepted, if known).
 */
export function newEntry(serverId: string, anchorNovaMs: number | undefined, createdWallMs: number, operation: Entry['operation'], now = 0, deletingSince?: number): Entry {
  return {
    serverId,
    watches: [],
    anchorNovaMs,
    createdWallMs,
    seenDeleted: false,
    underway: false,
    statusAt: Number.NEGATIVE_INFINITY,
    lastLookAt: Number.NEGATIVE_INFINITY,
    deletingSince,
    building: false,
    buildSince: now,
    absenceLooked: false,
    lastListed: false,
    controller: new AbortController(),
    operation,
  };
}

/** A shared listing still has `entry`'s server: a look for each of its waits, the next at `nextAt(w)`. */
export function lookedPresent(entry: Entry, nextAt: (w: Watch) => number): void {
  for (const w of entry.watches) {
    w.polls++;
    w.failures = 0;
    w.log.answered();
    w.end = { ...w.end, polls: w.polls };
    w.nextAt = nextAt(w);
  }
}

/**
 * A look at `entry`'s server failed: each wait counts it; one past its `pollRetries` failures in a
 * row, or after a failure no later look can mend (401, 403), ends with it (`settle`); the others look
 * again at `retryAt(w)`.
 */
export function lookFailed(entry: Entry, error: unknown, settle: (w: Watch, e: Error) => void, retryAt: (w: Watch) => number): void {
  for (const w of [...entry.watches]) {
    w.polls++;
    w.failures++;
    w.log.note('look', error);
    w.end = { ...w.end, polls: w.polls };
    if (isFatalLookFailure(error) || w.failures > w.pollRetries) settle(w, error instanceof Error ? error : new Error(String(error)));
    else w.nextAt = retryAt(w);
  }
}
