/**
 * `nova-guard/sqlite`: the quota ledger of the processes of one host, on a local SQLite file (WAL
 * mode, `BEGIN IMMEDIATE` transactions). Needs the optional dependency better-sqlite3 (12.x),
 * loaded only when a ledger is made: the main entry `nova-guard` never imports this folder.
 * See `docs/sqlite-ledger.md`.
 *
 * @module
 */
export { SqliteQuotaLedger } from './ledger.js';
export type { SqliteQuotaLedgerOptions } from './options.js';
export { defaultLedgerDir, MIN_FLEET_LEASE_TTL_MS } from './options.js';
export type { FleetWatcher, FleetStats } from '../delete/index.js';
export { SqliteLedgerError } from './errors.js';
export { isSqliteUnavailable } from './native.js';
