/**
 * Warnings a process prints once: `process.emitWarning(message, type)` the first time a cause is
 * seen, as Node prints its own (`(node:PID) NovaGuardLedgerWarning: …` on stderr, or a
 * `process.on('warning')` listener). Process-wide on purpose: a warning about this host's setup is
 * worth one line per process, not one per guard or per call. A caller's own `onWarning` hook
 * (tests, an application with its own reporting) gets each cause once too, counted apart.
 *
 * @module
 */

/** The type of the warnings about a quota ledger a guard goes on without. */
export const LEDGER_WARNING = 'NovaGuardLedgerWarning';

/** The default warning sink of a type: `process.emitWarning(message, type)`, one function per type (the key of its causes). */
const SINKS: ReadonlyMap<string, (message: string) => void> = new Map([[LEDGER_WARNING, (message: string): void => void process.emitWarning(message, LEDGER_WARNING)]]);

/** The causes each sink has been given (a WeakMap: a caller's hook is forgotten with it). */
const SEEN: WeakMap<(message: string) => void, Set<string>> = new WeakMap();

/** The default sink of `type` (`process.emitWarning(message, type)`). */
export function processWarningSink(type: string): (message: string) => void {
  return SINKS.get(type) ?? ((message: string): void => void process.emitWarning(message, type));
}

/**
 * Give `message` to `sink` unless `sink` has had `cause` already: with the default sink of a type,
 * once per process and cause. A sink that throws is ignored (a warning never fails a call).
 */
export function warnOncePerCause(sink: (message: string) => void, cause: string, message: string): void {
  let seen = SEEN.get(sink);
  if (seen === undefined) SEEN.set(sink, (seen = new Set()));
  if (seen.has(cause)) return;
  seen.add(cause);
  try {
    sink(message);
  } catch {
    // a hook that throws: ignored
  }
}
