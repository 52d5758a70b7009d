/**
 * Shared foundations: Nova resource shapes, the clock, input validation, logging and redaction.
 *
 * @module
 */
export type * from './types.js';
export type { Logger } from './logger.js';
