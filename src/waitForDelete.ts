/**
 * Entry point: `waitForDelete`, `deleteServer`, `deleteServers` (see `src/delete/`).
 *
 * @module
 */
export * from './delete/index.js';
