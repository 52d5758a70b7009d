/**
 * One time limit for a piece of work that sends requests: p-timeout on the injectable clock, with
 * the work's own AbortSignal aborted when the limit passes or the caller's signal aborts, so no
 * socket of it is left open. The transport bounds each request with it; the guard bounds the Nova
 * reads of a call's admission by the call's deadline (`src/guard/limitsRead.ts`).
 *
 * @module
 */
import pTimeout from 'p-timeout';
import { pTimeoutTimers, type Clock } from '../core/clock.js';
import { AbortError } from '../errors/index.js';

/**
 * Run `work` under a time limit of `timeoutMs` on `clock` and the caller's `signal`. `work` gets a
 * signal that aborts when either ends (so its sockets are released), and this call settles at once
 * then, whether or not `work` listens: with `timeoutError()` when the time is up, with
 * {@link AbortError} (cause: the signal's reason) when `signal` aborts. `timeoutMs` `Infinity`: only
 * the signal bounds it.
 * @throws what `timeoutError` returns, {@link AbortError}, or what `work` throws.
 */
export async function withTimeLimit<T>(clock: Clock, timeoutMs: number, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>, timeoutError: () => Error): Promise<T> {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
  const controller = new AbortController();
  const inner = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  try {
    return await pTimeout(work(inner), {
      milliseconds: timeoutMs,
      ...(signal ? { signal } : {}),
      customTimers: pTimeoutTimers(clock),
      fallback: () => {
        throw timeoutError();
      },
    });
  } catch (error) {
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    throw error;
  } finally {
    // Ends whatever `work` left open (a hung socket after the time limit, a renewal nobody awaits).
    controller.abort();
  }
}
