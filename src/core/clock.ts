/**
 * The one clock every timer and every "now" of nova-guard goes through.
 *
 * The default, {@link systemClock}, reads the global timers, `performance.now()` and `Date.now()`
 * each time it is called, so a test that fakes the globals (vitest's `vi.useFakeTimers()`, which
 * fakes `performance` and `Date` too, or `@sinonjs/fake-timers`) drives nova-guard's schedule,
 * p-retry's backoff and p-timeout's limits alike. A client option `clock` takes another
 * implementation (for example one that runs faster, or one that records the timers it was asked
 * for); p-retry schedules its own backoff delays with the global `setTimeout`, so such a clock
 * should fake the globals too.
 *
 * @module
 */

/** A timer handle as {@link Clock.setTimeout} returns it. */
export type TimerHandle = ReturnType<typeof globalThis.setTimeout>;

/** Timers and time, in milliseconds. */
export interface Clock {
  /** Monotonic time in ms (`performance.now()`): for durations, deadlines and schedules. */
  now(): number;
  /** Wall-clock time in ms since the epoch (`Date.now()`): for what is compared with Nova's `Date` header. */
  wallNow(): number;
  /** Run `fn` after `delayMs` ms. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  /** Cancel a timer from {@link Clock.setTimeout}. */
  clearTimeout(handle: TimerHandle | undefined): void;
}

/** The real clock: the global timers, `performance.now()` and `Date.now()`, read at each call. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (fn, delayMs) => globalThis.setTimeout(fn, delayMs),
  clearTimeout: (handle) => globalThis.clearTimeout(handle),
};

/**
 * `clock`'s timers in the shape p-timeout's `customTimers` option takes, so that its time limits run
 * on the clock (faked timers included).
 */
export function pTimeoutTimers(clock: Clock): { setTimeout: typeof globalThis.setTimeout; clearTimeout: typeof globalThis.clearTimeout } {
  return {
    setTimeout: ((fn: () => void, delayMs: number) => clock.setTimeout(fn, delayMs)) as typeof globalThis.setTimeout,
    clearTimeout: ((handle: TimerHandle | undefined) => clock.clearTimeout(handle)) as typeof globalThis.clearTimeout,
  };
}

/**
 * Resolve after `delayMs` ms on `clock`; reject with `signal.reason` as soon as `signal` aborts (the
 * timer is cleared). The timer keeps the process alive (work a caller awaits) unless `unref`.
 * `delayMs` `Infinity` arms no timer: it resolves never, only an abort ends it.
 */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal, { unref = false }: { unref?: boolean } = {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      reject(signal!.reason);
    };
    // `Infinity` (no limit) arms no timer: a Node timer given it fires after 1 ms.
    const timer = Number.isFinite(delayMs)
      ? clock.setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, Math.max(0, delayMs))
      : undefined;
    if (unref) (timer as { unref?: () => void } | undefined)?.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * An AbortSignal that aborts after `delayMs` ms on `clock` (like `AbortSignal.timeout`, which always
 * uses the real timers), with `reason`. `dispose()` clears the timer once it is no longer needed.
 * `delayMs` `Infinity` (no limit) arms no timer: the signal then never aborts by itself.
 */
export function timeoutSignal(clock: Clock, delayMs: number, reason: () => unknown): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  // `Infinity` (no limit) arms no timer: a Node timer given it fires after 1 ms (TimeoutOverflowWarning).
  const timer = Number.isFinite(delayMs) ? clock.setTimeout(() => controller.abort(reason()), Math.max(0, delayMs)) : undefined;
  return { signal: controller.signal, dispose: () => clock.clearTimeout(timer) };
}

/** Resolve once `promise` settles (either way); reject with the signal's reason when `signal` aborts first. */
export function untilSettledOrAborted(promise: Promise<unknown>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const done = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    promise.then(done, done);
  });
}
