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
import { ConfigError } from '../errors/index.js';

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

let loaded: DatabaseConstructor | undefined;

/**
 * better-sqlite3's constructor.
 * @throws `ConfigError` saying that better-sqlite3 (12.x) could not be loaded, with the reason
 * ({@link isSqliteUnavailable} is true for it).
 */
export function loadSqlite(): DatabaseConstructor {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
    return loaded;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const e = new ConfigError(
      `the SQLite ledger needs the optional dependency better-sqlite3 (12.x), which could not be loaded (${reason}). ` +
        'Install it (npm install better-sqlite3@12: npm downloads a prebuilt binary for this Node.js, or compiles it with python3, make and a C++ compiler), or use another ledger',
      { cause: error },
    );
    Object.defineProperty(e, UNAVAILABLE, { value: true });
    throw e;
  }
}

/** True for the `ConfigError` a SQLite ledger throws when the optional dependency better-sqlite3 cannot be loaded. */
export function isSqliteUnavailable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[UNAVAILABLE] === true;
}
