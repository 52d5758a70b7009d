/**
 * The engine's record of one wait (`Watch`) and of one server with pending waits (`Entry`), and how
 * a wait's end goes out: with what failed on the way (`FailureLog`) when anything did.
 *
 * @module
 */
import { AbortError } from '../errors/index.js';
import type { FailureLog } from './failureLog.js';
import { isFatalLookFailure } from './observe.js';
import type { TickEntry, WatchEnd, WatchSpec } from './types.js';

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

/** One server with pending waits. */
export interface Entry extends TickEntry {
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

/** A new record of a server with no wait yet (`anchorNovaMs`: the Date of its accepted DELETE, if known). */
export function newEntry(serverId: string, anchorNovaMs: number | undefined, createdWallMs: number, operation: Entry['operation']): Entry {
  return {
    serverId,
    watches: [],
    anchorNovaMs,
    createdWallMs,
    seenDeleted: false,
    underway: false,
    statusAt: Number.NEGATIVE_INFINITY,
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
