/**
 * Errors of the SQLite ledger.
 *
 * @module
 */
import { NovaGuardError, ValidationError } from '../errors/index.js';

/**
 * The SQLite ledger could not do what was asked: the file is locked by another process for longer
 * than `busyTimeoutMs` (retried asynchronously meanwhile, see `busy.ts`), is not a SQLite database
 * (or is corrupt), cannot be created or opened, or the ledger is closed. `path` names the file;
 * `code` is SQLite's (`SQLITE_BUSY`, `SQLITE_NOTADB`, `SQLITE_CORRUPT`, `SQLITE_CANTOPEN`, ...) when
 * SQLite gave one. A guard treats it as an outage of a ledger it uses (one warning): its creates wait
 * for the ledger, up to `maxWaitMs`, and admit nothing on their own meanwhile (other processes of
 * the host may still admit on the file; `docs/sqlite-ledger.md`, "Errors").
 */
export class SqliteLedgerError extends NovaGuardError {
  /** The ledger file. */
  readonly path: string;
  /** SQLite's error code (`SQLITE_BUSY`, `SQLITE_NOTADB`, ...), when SQLite gave one. */
  readonly code: string | undefined;
  /**
   * True when the file cannot be used at all (not a database, corrupt, cannot be opened): the guard
   * skips the ledger at once (`isLedgerDown`). False for a lock held too long.
   */
  readonly ledgerDown: boolean;

  /**
   * @param message - What failed.
   * @param options - `path`: the ledger file; `code`: SQLite's error code; `cause`.
   */
  constructor(message: string, options: { path: string; code?: string | undefined; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.path = options.path;
    this.code = options.code;
    const base = options.code?.match(/^SQLITE_[A-Z]+/)?.[0];
    this.ledgerDown = base !== undefined && DOWN_CODES.has(base);
  }
}

/** SQLite codes that say the file cannot be used at all. */
const DOWN_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_IOERR', 'SQLITE_PERM', 'SQLITE_FULL']);

/**
 * `error` (thrown by better-sqlite3 or the file system while using `path`) as a
 * {@link SqliteLedgerError} with a message that says what to do.
 */
export function sqliteError(path: string, what: string, error: unknown): SqliteLedgerError {
  if (error instanceof SqliteLedgerError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const c = typeof code === 'string' ? code : undefined;
  const raw = error instanceof Error ? error.message : String(error);
  // Node's file system errors start with their code ("EEXIST: file already exists, mkdir …"): said once.
  const msg = c !== undefined && raw.startsWith(`${c}: `) ? raw.slice(c.length + 2) : raw;
  let hint = '';
  if (c?.startsWith('SQLITE_BUSY') === true || c?.startsWith('SQLITE_LOCKED') === true) {
    hint = ': another process holds the file locked for longer than busyTimeoutMs';
  } else if (c === 'SQLITE_NOTADB' || c?.startsWith('SQLITE_CORRUPT') === true) {
    hint = ': the file is not a SQLite database or is corrupt; it holds only leases and queue places, so stop the processes using it and delete it (with its -wal and -shm files)';
  } else if (c?.startsWith('SQLITE_CANTOPEN') === true) {
    hint = ': the file cannot be opened (its directory must exist and be writable)';
  }
  return new SqliteLedgerError(`SQLite ledger ${path}: ${what} failed (${c ?? 'error'}: ${msg})${hint}`, { path, code: c, cause: error });
}

/**
 * The SQLite ledger file belongs to another endpoint or project than the ledger's (the `scope` it
 * recorded when it was made): a {@link ValidationError} whose `owner` and `scope` say whose
 * (`"<endpoint> project <id>"`); internal to the ledgers (`src/ledgers/configError.ts` words its fix).
 */
export class SqliteScopeError extends ValidationError {
  /**
   * @param path - The ledger file.
   * @param owner - Whose file it is, as shown.
   * @param scope - Whose file was asked for, as shown.
   */
  constructor(
    readonly path: string,
    readonly owner: string,
    readonly scope: string,
  ) {
    super(`the SQLite ledger file ${path} belongs to ${owner}, not ${scope}: give each endpoint and project its own file (a directory as the path gives one file each)`);
  }
}
