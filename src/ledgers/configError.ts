/**
 * Which failures of a quota ledger are setup errors ({@link LedgerConfigError}) rather than
 * outages: its optional module missing (thrown as one by `src/sqlite/native.ts` and
 * `src/redis/connection.ts`), a SQLite path that cannot be created or opened, and Redis refusing
 * the credentials before the ledger ever answered. A refused connection, an unknown host, a time-out
 * or a corrupt file stay outages (degraded mode, `src/guard/degradedLedger.ts`): a Redis that is
 * down may be starting, a working setup may lose its store for a while.
 *
 * @module
 */
import { LedgerConfigError, ValidationError } from '../errors/index.js';
import { AUTH_CODES } from '../redis/errors.js';
import { SqliteLedgerError, SqliteScopeError } from '../sqlite/errors.js';

/** What a {@link LedgerConfigError} for a SQLite path tells the user to do. */
export const SQLITE_PATH_FIX = "give a path in a directory this user can create and write (sqlite:/abs/dir/ or sqlite:/abs/dir/ledger.sqlite), or use ledger: 'in-process'";

/** What a {@link LedgerConfigError} for refused Redis credentials tells the user to do. */
export const REDIS_AUTH_FIX =
  "check the password in the ledger URL (redis://:PASSWORD@HOST:PORT, or redis://USER:PASSWORD@HOST:PORT for a Redis ACL user; NOVA_GUARD_LEDGER or --ledger) and the user's Redis ACL (it must run the ledger's scripts and PUBLISH/SUBSCRIBE on its keys)";

/**
 * The error codes (the file system's, then SQLite's) that say the path of a SQLite ledger cannot be
 * created or opened by this user: `ENOTDIR`/`EEXIST` (a component is a regular file), `EACCES`,
 * `EPERM`, `EROFS`, `ENOENT`, `SQLITE_CANTOPEN`, `SQLITE_READONLY`, `SQLITE_PERM`.
 */
const PATH_CODES = /^(ENOTDIR|EEXIST|EACCES|EPERM|EROFS|ENOENT|SQLITE_CANTOPEN|SQLITE_READONLY|SQLITE_PERM)/;

/** What a {@link LedgerConfigError} for a SQLite file that may not be used tells the user to do. */
export const SQLITE_USE_FIX = "give a path on a local disk for this endpoint and project (a directory, sqlite:/abs/dir/, gives one file each), or use ledger: 'in-process'";

/** What a {@link LedgerConfigError} for a client without a project id tells the user to do. */
export const MISSING_PROJECT_FIX = "set OS_PROJECT_ID (or projectId in NovaClient's options / clouds.yaml's auth.project_id)";

/**
 * The {@link LedgerConfigError} of a ledger named by a string (`kind`: `'sqlite'`, `'redis'`) whose
 * guard's client has no project id: the ledger serves one endpoint and project and cannot open
 * (reason `'missing-project'`).
 */
export function missingProjectError(kind: string): LedgerConfigError {
  const name = kind === 'sqlite' ? 'SQLite' : kind === 'redis' ? 'Redis' : kind;
  return new LedgerConfigError(`the ${name} ledger serves one project and the client has no project id`, { kind, reason: 'missing-project', fix: MISSING_PROJECT_FIX });
}

/** What a {@link LedgerConfigError} for a SQLite file of another endpoint or project tells the user to do. */
export const SQLITE_OTHER_SCOPE_FIX =
  'delete this file (it holds nothing lasting while no process uses it) or name a directory, sqlite:/abs/dir/, which keeps one file per endpoint and project';

/**
 * What opening a SQLite ledger threw, as a {@link LedgerConfigError}: `'unwritable-path'` when it
 * says the file or its directory cannot be created or opened, `'unusable-path'` for the
 * `ValidationError` of a file that may not be used (a network file system, a file of another
 * endpoint or project, whose fix is to delete it or name a directory, or of an unknown schema: its
 * message says which); any other error (a corrupt
 * file: an outage) as it is.
 */
export function sqliteOpenError(error: unknown): unknown {
  if (error instanceof SqliteScopeError) {
    const message = `the SQLite ledger file ${error.path} belongs to ${error.owner}, not ${error.scope}`;
    return new LedgerConfigError(message, { kind: 'sqlite', reason: 'unusable-path', fix: SQLITE_OTHER_SCOPE_FIX, file: error.path, cause: error });
  }
  if (error instanceof ValidationError) {
    return new LedgerConfigError(error.message, { kind: 'sqlite', reason: 'unusable-path', fix: SQLITE_USE_FIX, cause: error });
  }
  if (!(error instanceof SqliteLedgerError) || !PATH_CODES.test(error.code ?? '')) return error;
  const detail = error.message.replace(/^SQLite ledger [^:]*: /, '');
  return new LedgerConfigError(`the SQLite ledger cannot create or open ${error.path}: ${detail}`, { kind: 'sqlite', reason: 'unwritable-path', fix: SQLITE_PATH_FIX, file: error.path, cause: error });
}

/**
 * The {@link LedgerConfigError} a rejection of a ledger call stands for, for a ledger that has never
 * answered this process: the error itself when it is one (a missing module, a path that cannot be
 * used), or Redis refusing the credentials (`WRONGPASS`, `NOAUTH`, `NOPERM`: the `downCode` of a
 * `RedisLedgerError`); `undefined` for anything else (an outage). The message keeps the ledger's
 * own redacted words, never the URL's password.
 */
export function ledgerConfigErrorOf(error: unknown, kind: string): LedgerConfigError | undefined {
  if (error instanceof LedgerConfigError) return error;
  const code = (error as { downCode?: unknown } | null)?.downCode;
  if (typeof code !== 'string' || !AUTH_CODES.has(code)) return undefined;
  const message = error instanceof Error ? error.message : '';
  const said = new RegExp(`\\b${code}\\b[^)]*`).exec(message)?.[0] ?? code;
  const name = kind === 'redis' ? 'Redis' : kind;
  return new LedgerConfigError(`the ${name} ledger cannot work: Redis refused its credentials (${said})`, { kind, reason: 'credentials-refused', fix: REDIS_AUTH_FIX, cause: error });
}
