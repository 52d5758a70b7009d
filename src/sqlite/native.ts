/**
 * The optional dependency better-sqlite3, loaded when a {@link SqliteQuotaLedger} is first made
 * (never when `nova-guard` or `nova-guard/sqlite` is imported): where its native module cannot load
 * (not installed, no prebuilt binary for this Node.js and no compiler), only the SQLite ledger is
 * unavailable. Only the few calls the ledger makes are typed here, so the public types do not need
 * `@types/better-sqlite3`.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { LedgerConfigError } from '../errors/index.js';

/** A prepared statement (the calls the ledger makes). */
export interface Statement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** A better-sqlite3 database (the calls the ledger makes). */
export interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): { immediate(...args: A): R; (...args: A): R };
  close(): void;
  readonly open: boolean;
}

/** The better-sqlite3 constructor. */
export type DatabaseConstructor = new (path: string, options?: { timeout?: number; fileMustExist?: boolean }) => Database;

/** Marks the error {@link loadSqlite} throws. */
const UNAVAILABLE = Symbol.for('nova-guard.sqliteUnavailable');

/** What {@link loadSqlite}'s error tells the user to do. */
export const SQLITE_FIX =
  "npm install better-sqlite3@12 (npm downloads a prebuilt binary for this Node.js, or builds it with python3, make and a C++ compiler), or use ledger: 'in-process'";

let loaded: DatabaseConstructor | undefined;

/**
 * better-sqlite3's constructor, with its native module loaded (one in-memory database is opened
 * and closed the first time: better-sqlite3 loads its native module only when a database is made,
 * so a package whose build failed would otherwise pass here and fail later).
 * @throws `LedgerConfigError` (`reason: 'module-missing'`, a `ConfigError`) saying that
 * better-sqlite3 (12.x) could not be loaded, with the reason and the fix ({@link isSqliteUnavailable}
 * is true for it).
 */
export function loadSqlite(): DatabaseConstructor {
  if (loaded !== undefined) return loaded;
  try {
    const Sqlite = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
    new Sqlite(':memory:').close();
    loaded = Sqlite;
    return loaded;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const e = new LedgerConfigError(`the SQLite ledger needs the optional dependency better-sqlite3 (12.x), which could not be loaded (${reason})`, {
      kind: 'sqlite',
      reason: 'module-missing',
      fix: SQLITE_FIX,
      cause: error,
    });
    Object.defineProperty(e, UNAVAILABLE, { value: true });
    throw e;
  }
}

/** True for the `LedgerConfigError` a SQLite ledger throws when the optional dependency better-sqlite3 cannot be loaded. */
export function isSqliteUnavailable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[UNAVAILABLE] === true;
}
