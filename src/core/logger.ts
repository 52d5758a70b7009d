/**
 * Logging. nova-guard logs through pino and only ever logs curated fields (method, path, status,
 * request id, server id, attempt, durations): never headers, bodies of auth requests, tokens or
 * passwords. The default logger is silent; pass your own pino logger to see what happens.
 *
 * @module
 */
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** A silent pino logger, the default of every nova-guard component. */
export const silentLogger: Logger = pino({ level: 'silent' });

/** The given logger's child for `component`, or a silent logger. */
export function componentLogger(logger: Logger | undefined, component: string): Logger {
  return (logger ?? silentLogger).child({ component });
}
