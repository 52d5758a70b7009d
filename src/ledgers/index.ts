/**
 * Quota ledgers named by a string, one syntax for the library and the CLI: `ledger: 'sqlite:…' |
 * 'redis://…' | 'rediss://…' | 'in-process' | QuotaLedger` in `QuotaGuard`'s options, the CLI's
 * `--ledger URL`, and the `NOVA_GUARD_LEDGER` environment variable.
 *
 * Layering: this folder sits above `src/ledger` (the port), `src/sqlite` and `src/redis`, and below
 * `src/guard`, which imports it (no registry, no import for a side effect). It loads the SQLite and
 * Redis ledgers with a dynamic `import()` when a string names one, so `nova-guard` loads without
 * ioredis or better-sqlite3.
 *
 * @module
 */
export { LEDGER_ENV, parseLedgerSpec, openLedger } from './open.js';
export { ledgerOption, SpecLedger } from './specLedger.js';
export { ledgerConfigErrorOf, sqliteOpenError } from './configError.js';
