/**
 * Shared foundations: Nova resource shapes, the clock, input validation, logging and redaction.
 *
 * @module
 */
export type * from './types.js';
export type { Logger, LoggerOption } from './logger.js';
export { systemClock, sleep } from './clock.js';
export type { Clock, TimerHandle } from './clock.js';
export { jitteredMs } from './jitter.js';
