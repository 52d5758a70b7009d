/**
 * Entry point: `QuotaGuard` and headroom (see `src/guard/`).
 *
 * @module
 */
export * from './guard/index.js';
