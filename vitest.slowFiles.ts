/**
 * The test files of `npm run test:slow` (vitest.slow.config.ts): suites of many processes or real
 * servers, each of them tens of seconds on the 2-core machine. `npm test` (vitest.config.ts) runs
 * every other file.
 */
/**
 * The CLI's suites that run the built `nova-guard` binary in child processes (exit codes, signals,
 * stdout and stderr as a shell sees them), and the ledger set-up errors run in child processes with
 * a module made unloadable. `.ci/run` runs them in `test:slow` and on every Node.js line it tests.
 */
export const CLI_PROCESSES = [
  'test/cli/*Binary.test.ts',
  'test/cli/ledgerConfig.test.ts',
  'test/cli/openstackHabits.test.ts',
  'test/cli/openstackAuthFlags.test.ts',
  'test/cli/serverCreateSignals.test.ts',
  'test/cli/refusedNova.test.ts',
  'test/cli/process.test.ts',
  'test/ledgers/ledgerConfig.test.ts',
];

export const SLOW = [
  'test/redis/**/*.test.ts',
  'test/sqlite/processes.test.ts',
  'test/delete/fleetStores.test.ts',
  'test/sqlite/fleetProcesses.test.ts',
  'test/sqlite/creditChurn.test.ts',
  'test/examples/shellWorker.test.ts',
  'test/cli/serverDeleteLedger.test.ts',
  ...CLI_PROCESSES,
];
