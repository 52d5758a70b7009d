/**
 * Entry point: `NovaClient` (see `src/nova/`).
 *
 * @module
 */
export * from './nova/index.js';
