/**
 * The `nova-guard` command line (its executable is `main.ts`).
 *
 * @module
 */
export { main } from './main.js';
