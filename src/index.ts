/**
 * nova-guard: delete-and-wait, quota headroom guard and quota audit for CI workers on OpenStack Nova.
 *
 * @module
 */
export * from './nova/index.js';
export * from './auth/index.js';
export * from './delete/index.js';
export * from './errors/index.js';
export { parseQuotaMessage } from './errors/quotaMessage.js';
export type { ParsedQuotaMessage } from './errors/quotaMessage.js';
export type * from './core/index.js';
export { systemClock } from './core/clock.js';
export { INSTRUMENTATION_SCOPE, withOperation, newRequestId } from './core/telemetry.js';
export { LOG_REDACT_PATHS } from './core/logger.js';
export * from './audit/index.js';
export * from './reaper/index.js';
export * from './guard/index.js';
export * from './config/index.js';
