/**
 * The engine's record of one wait (`Watch`) and of one server with pending waits (`Entry`), and how
 * a wait's end goes out: with what failed on the way (`FailureLog`) when anything did.
 *
 * @module
 */
import { AbortError } from '../errors/index.js';
import type { FailureLog } from './failureLog.js';
import type { TickEntry } from './tick.js';
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

/** One server with pending waits. */
export interface Entry extends TickEntry {
  readonly watches: Watch[];
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

/** The time limit of a look at `entry`, in ms: its waits' `requestTimeoutMs` (or the client's, `clientMs`), capped by the latest deadline (from `now`). */
export function lookTimeoutMs(entry: Entry, clientMs: number, now: number): number {
  let limit = 0;
  let deadline = 0;
  for (const w of entry.watches) {
    limit = Math.max(limit, w.requestTimeoutMs ?? clientMs);
    deadline = Math.max(deadline, w.deadlineAt);
  }
  return Math.max(1, Math.min(limit, deadline - now));
}
