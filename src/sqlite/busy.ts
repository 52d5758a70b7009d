/**
 * A locked ledger file costs a ledger call, not the process. better-sqlite3 is synchronous: while
 * SQLite waits for another process's lock (its busy timeout), the whole event loop waits with it.
 * So SQLite's own wait is {@link NATIVE_BUSY_MS} (a few ms: transactions take microseconds, so a
 * healthy file's contention ends within it), and a transaction that still finds the file locked
 * (`SQLITE_BUSY`) is tried again after an asynchronous backoff (p-retry, through the project's
 * retry policy: 2 ms doubling up to 50 ms, with jitter) until `busyTimeoutMs` has passed; the event
 * loop runs meanwhile. Then the call rejects with the last `SqliteLedgerError` (`SQLITE_BUSY`).
 *
 * @module
 */
import type { Clock } from '../core/index.js';
import { withRetry } from '../transport/retry.js';
import { SqliteLedgerError } from './errors.js';

/** SQLite's own busy timeout (the longest one attempt blocks the event loop for a lock), in ms. */
export const NATIVE_BUSY_MS = 5;
/** The largest `busyTimeoutMs` taken, in ms (the guard bounds its ledger calls well below it anyway). */
export const MAX_BUSY_TIMEOUT_MS = 60_000;
/** First and longest pause between two attempts on a locked file, in ms. */
const BUSY_DELAY_MS = { min: 2, max: 50 } as const;

/** True for a `SqliteLedgerError` that says another connection holds the file locked (`SQLITE_BUSY*`, `SQLITE_LOCKED*`). */
export function isBusy(error: unknown): boolean {
  return error instanceof SqliteLedgerError && error.code !== undefined && /^SQLITE_(BUSY|LOCKED)/.test(error.code);
}

/**
 * `attempt()` (one synchronous transaction), tried again while the file is locked, for at most
 * `busyTimeoutMs` in all, with the event loop free between attempts.
 * @throws what `attempt` throws; after `busyTimeoutMs`, its last `SqliteLedgerError` (`SQLITE_BUSY`).
 */
export function whileBusy<T>(attempt: () => T, busyTimeoutMs: number, clock: Clock): Promise<T> {
  return withRetry(async () => attempt(), {
    retries: Number.POSITIVE_INFINITY,
    minDelayMs: BUSY_DELAY_MS.min,
    maxDelayMs: BUSY_DELAY_MS.max,
    maxRetryTimeMs: busyTimeoutMs,
    shouldRetry: isBusy,
    clock,
  });
}
