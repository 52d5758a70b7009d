/**
 * The signals that stop a `nova-guard` command: Ctrl-C (SIGINT), SIGTERM (what `timeout(1)`,
 * systemd and CI runners send when a job runs out of time) and SIGHUP (the terminal went away), all
 * handled alike by the commands that create or delete servers, so that none of them ends without
 * saying which server it leaves behind.
 *
 * - The first signal aborts the command's `AbortSignal` and calls its `first` handler, which says at
 *   once what is known (a runner may send SIGKILL a few seconds after SIGTERM) and what happens next.
 *   The command then ends on its own, in order (a kept server named, its ledger claim released).
 * - A later signal calls the `again` handler (it says what is known now: the server's id, or the
 *   name to look for) and ends the process at once with that signal's exit code.
 * - Exit codes are the shell's for a process ended by the signal, 128 + its number:
 *   SIGHUP 129, SIGINT 130, SIGTERM 143 ({@link STOP_SIGNALS}); the command sets the first signal's
 *   code when it ends on its own.
 * - {@link StopWatch.dispose} removes every listener (called when the command ends, in `finally`):
 *   nothing is left on `process`, and a signal after the command has Node's default effect again.
 *
 * @module
 */

/** A signal that stops a command. */
export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/** The signals a command stops on, with the exit code of each (128 + the signal's number). */
export const STOP_SIGNALS: Readonly<Record<StopSignal, number>> = Object.freeze({ SIGHUP: 129, SIGINT: 130, SIGTERM: 143 });

/** The signal in the words of a message: `Ctrl-C (SIGINT)`, `SIGTERM`, `SIGHUP`. */
export function signalWords(signal: StopSignal): string {
  return signal === 'SIGINT' ? 'Ctrl-C (SIGINT)' : signal;
}

/** What a command does on its signals. */
export interface StopHandlers {
  /**
   * The first signal: say what is known and what happens next (the command's `AbortSignal` is
   * aborted right after). Return `true` to end the process now, with the signal's exit code (when
   * there is nothing left to do in order, e.g. only printing the result remains).
   */
  first(signal: StopSignal): boolean | void;
  /** A later signal: say what is known now; the process ends right after, with this signal's exit code. */
  again(signal: StopSignal): void;
}

/** What listens for the signals: `process`, or an `EventEmitter` in tests. */
export interface SignalTarget {
  on(event: StopSignal, listener: () => void): unknown;
  removeListener(event: StopSignal, listener: () => void): unknown;
}

/** Where {@link watchStopSignals} listens and how it ends the process. */
export interface StopWatchOptions {
  /** @default process */
  target?: SignalTarget;
  /** Ends the process with an exit code. @default process.exit */
  exit?: (code: number) => void;
  /** Where a handler's own failure is said. @default console.error */
  print?: (line: string) => void;
}

/** The signals of one command run. */
export interface StopWatch {
  /** Aborted at the first signal; its reason an `Error` naming the signal. */
  readonly signal: AbortSignal;
  /** The first signal received, if any. */
  readonly received: StopSignal | undefined;
  /** The exit code of the first signal received ({@link STOP_SIGNALS}), if any. */
  readonly exitCode: number | undefined;
  /** Stop listening: every listener is removed. Idempotent. */
  dispose(): void;
}

/**
 * Listen for SIGINT, SIGTERM and SIGHUP until {@link StopWatch.dispose} (see the module
 * description). A handler that throws is reported on stderr; the signal still takes effect.
 */
export function watchStopSignals(handlers: StopHandlers, { target = process, exit = (code) => process.exit(code), print = (line) => console.error(line) }: StopWatchOptions = {}): StopWatch {
  const controller = new AbortController();
  let received: StopSignal | undefined;
  const call = (fn: () => boolean | void): boolean => {
    try {
      return fn() === true;
    } catch (e) {
      print(`nova-guard: while stopping: ${(e as Error)?.message ?? String(e)}`);
      return false;
    }
  };
  const on = (signal: StopSignal): void => {
    if (received === undefined) {
      received = signal;
      const now = call(() => handlers.first(signal));
      controller.abort(new Error(`interrupted (${signal})`));
      if (now) exit(STOP_SIGNALS[signal]);
      return;
    }
    call(() => handlers.again(signal));
    exit(STOP_SIGNALS[signal]);
  };
  const listeners = (Object.keys(STOP_SIGNALS) as StopSignal[]).map((signal) => [signal, () => on(signal)] as const);
  for (const [signal, listener] of listeners) target.on(signal, listener);
  let disposed = false;
  return {
    signal: controller.signal,
    get received() {
      return received;
    },
    get exitCode() {
      return received === undefined ? undefined : STOP_SIGNALS[received];
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const [signal, listener] of listeners) target.removeListener(signal, listener);
    },
  };
}
