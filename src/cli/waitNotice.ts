/**
 * A first line within a second when Nova is slow: while one of the CLI's requests is unanswered for
 * `afterMs` (1 s), or as soon as it is retried, stderr says `waiting for nova at URL ... (attempt N
 * of M)` (`(attempt N, connection refused)` while Nova never answered and refuses every connection:
 * then fewer attempts are made), so a command against an endpoint that never answers is not silent
 * until its time limit.
 *
 * @module
 */
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { terminalSafe } from '../core/table.js';
import { NovaNetworkError } from '../errors/index.js';
import type { NovaClient } from '../nova/client.js';

/** Attempts of a request with the client's default retry policy (`retries` 4 after the first). */
export const DEFAULT_ATTEMPTS = 5;

/** What {@link withWaitNotice} gives its request: the hooks of its attempts (`RequestOptions`). */
export interface AttemptHooks {
  onAttempt: (attempt: number) => void;
  onFailedAttempt: (error: unknown, attempt: number) => void;
}

/**
 * Run `fn` (one request, given the {@link AttemptHooks} to pass on) with the notice on stderr. While
 * Nova has never answered the client and every failure so far is a refused connection, the line
 * says no total (`attempt N`, not `attempt N of M`): the client's `refusedFirstContactMs` (the CLI's
 * second) ends such a request after fewer attempts than its retry policy's.
 * @param afterMs - Quiet time before the first notice, in ms. @default 1000
 */
export async function withWaitNotice<T>(
  client: NovaClient,
  fn: (hooks: AttemptHooks) => Promise<T>,
  { afterMs = 1000, attempts = DEFAULT_ATTEMPTS, clock = systemClock }: { afterMs?: number; attempts?: number; clock?: Clock } = {},
): Promise<T> {
  const endpoint = (client.toJSON()['endpoint'] as string | undefined) ?? '(the catalog endpoint)';
  let attempt = 1;
  let timer: TimerHandle | undefined;
  let onlyRefused = true;
  // One line per attempt: the quiet-time timer does not repeat the line an attempt already got
  // when it was retried (it used to fire again during the backoff before the next attempt).
  let said = 0;
  const say = (): void => {
    if (said === attempt) return;
    said = attempt;
    const cutShort = onlyRefused && attempt > 1 && client.lastRequestId === undefined;
    console.error(terminalSafe(`waiting for nova at ${endpoint} ... (attempt ${attempt}${cutShort ? ', connection refused' : ` of ${attempts}`})`, true));
  };
  const arm = (): void => {
    clock.clearTimeout(timer);
    timer = clock.setTimeout(say, afterMs);
  };
  arm();
  try {
    return await fn({
      onAttempt: (n) => {
        attempt = n;
        if (n > 1) {
          say();
          arm();
        }
      },
      onFailedAttempt: (error) => {
        if (!(error instanceof NovaNetworkError && error.code === 'ECONNREFUSED')) onlyRefused = false;
      },
    });
  } finally {
    clock.clearTimeout(timer);
  }
}

/**
 * Run `fn` and, if it has not settled after `afterMs` (1 s), say `waiting for <what> ...` on stderr
 * once (for steps of several requests or outside Nova, such as authenticating with Keystone).
 */
export async function withSlowNotice<T>(what: string, fn: () => Promise<T>, { afterMs = 1000, clock = systemClock }: { afterMs?: number; clock?: Clock } = {}): Promise<T> {
  const timer = clock.setTimeout(() => console.error(terminalSafe(`waiting for ${what} ...`, true)), afterMs);
  try {
    return await fn();
  } finally {
    clock.clearTimeout(timer);
  }
}
