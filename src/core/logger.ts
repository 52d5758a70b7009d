/**
 * Logging. nova-guard logs through pino and only ever logs curated fields (method, path, status,
 * request id, server id, attempt, durations): never headers, bodies of auth requests, tokens or
 * passwords. The default logger is silent.
 *
 * The `logger` option takes a pino `Logger`, or any object with pino's level methods (`info`,
 * `warn`, `error`, `debug`; `trace` and `fatal` optional), `console` included: such an object is
 * wrapped in a pino logger whose lines are handed to its methods as `(message, fields)`.
 *
 * @module
 */
import { pino, type Level, type Logger } from 'pino';
import { REDACTED } from './redact.js';

export type { Logger } from 'pino';

/** A log method: a message, then the line's fields. */
export type LogMethod = (message: string, fields: Record<string, unknown>) => void;

/**
 * Any logger with pino's level methods, e.g. `console`, winston, bunyan. `trace` falls back to
 * `debug` and `fatal` to `error` when missing. A string `level` (a pino level name) sets the
 * lowest level handed over; default `info`.
 */
export interface LoggerLike {
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
  debug: LogMethod;
  trace?: LogMethod | undefined;
  fatal?: LogMethod | undefined;
  level?: unknown;
}

/** What a `logger` option takes: a pino `Logger` or a `LoggerLike`. */
export type LoggerOption = Logger | LoggerLike;

/**
 * pino `redact` paths for the fields where a secret could appear if a caller logs its own objects
 * beside nova-guard's (nova-guard's own lines never carry one). Used by the wrapper of a
 * `LoggerLike`; give them to your own pino logger too: `pino({ redact: LOG_REDACT_PATHS })`.
 */
export const LOG_REDACT_PATHS: readonly string[] = Object.freeze([
  'password',
  'token',
  'secret',
  'application_credential_secret',
  '*.password',
  '*.token',
  '*.secret',
  '*.application_credential_secret',
  'headers["x-auth-token"]',
  'headers["x-subject-token"]',
  '*.headers["x-auth-token"]',
  '*.headers["x-subject-token"]',
]);

/** A silent pino logger, the default of every nova-guard component. */
export const silentLogger: Logger = pino({ level: 'silent' });

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

function isPino(logger: LoggerOption): logger is Logger {
  const l = logger as Partial<Logger>;
  return typeof l.child === 'function' && typeof l.isLevelEnabled === 'function' && typeof l.levels === 'object';
}

/** The method of `target` for pino level `level` (console's `trace` prints a stack: `debug` is used for it). */
function methodFor(target: LoggerLike, level: Level): LogMethod {
  const own = (name: Level): LogMethod | undefined => {
    const m = (target as unknown as Record<string, unknown>)[name];
    return typeof m === 'function' ? (m as LogMethod).bind(target) : undefined;
  };
  if (level === 'trace') return (target === globalThis.console ? undefined : own('trace')) ?? own('debug')!;
  if (level === 'fatal') return own('fatal') ?? own('error')!;
  return own(level)!;
}

/**
 * `logger` as a pino `Logger`: a pino logger as it is, a `LoggerLike` wrapped (each line is
 * handed to its method as `(msg, fields)`, pino's `level`, `time`, `pid` and `hostname` left out),
 * undefined as {@link silentLogger}.
 * @throws TypeError naming the missing method when `logger` is neither.
 */
export function toLogger(logger: LoggerOption | undefined): Logger {
  if (logger === undefined) return silentLogger;
  if (isPino(logger)) return logger;
  for (const m of ['info', 'warn', 'error', 'debug'] as const) {
    if (typeof (logger as unknown as Record<string, unknown>)[m] !== 'function') {
      throw new TypeError(`logger must be a pino Logger or an object with pino's level methods (info, warn, error, debug): ${m} is missing`);
    }
  }
  const target = logger;
  const byNumber = new Map<number, LogMethod>(LEVELS.map((l) => [pino.levels.values[l]!, methodFor(target, l)]));
  const wanted = typeof target.level === 'string' && (LEVELS as readonly string[]).includes(target.level) ? (target.level as Level) : 'info';
  const stream = {
    write(line: string): void {
      const { level, msg, time: _time, pid: _pid, hostname: _hostname, ...fields } = JSON.parse(line) as Record<string, unknown>;
      byNumber.get(Number(level))?.(typeof msg === 'string' ? msg : '', fields);
    },
  };
  return pino({ level: wanted, redact: { paths: [...LOG_REDACT_PATHS], censor: REDACTED } }, stream);
}

/** The given logger's child for `component`, or a silent logger. */
export function componentLogger(logger: LoggerOption | undefined, component: string): Logger {
  return toLogger(logger).child({ component });
}
