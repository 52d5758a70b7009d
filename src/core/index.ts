/**
 * Shared foundations: Nova resource shapes, the clock, input validation, logging and redaction.
 *
 * @module
 */
export type * from './types.js';
export type { Logger, LoggerLike, LoggerOption, LogMethod } from './logger.js';
export type { OperationContext } from './telemetry.js';
export { systemClock, sleep, timeoutSignal } from './clock.js';
export type { Clock, TimerHandle } from './clock.js';
export { jitteredMs } from './jitter.js';
export { Secret, revealSecret } from './secret.js';
