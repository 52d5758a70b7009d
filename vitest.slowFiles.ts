/**
 * The test files of `npm run test:slow` (vitest.slow.config.ts): suites of many processes or real
 * servers, each of them tens of seconds on the 2-core machine. `npm test` (vitest.config.ts) runs
 * every other file.
 */
export const SLOW = ['test/redis/**/*.test.ts', 'test/sqlite/processes.test.ts', 'test/delete/fleetStores.test.ts', 'test/sqlite/fleetProcesses.test.ts', 'test/examples/shellWorker.test.ts', 'test/cli/serverDeleteLedger.test.ts'];
