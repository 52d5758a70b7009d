/**
 * A quota ledger that was asked for but cannot work for a reason of its setup
 * ({@link LedgerConfigError}), as opposed to an outage of a ledger that works (which the guard
 * rides out in degraded mode).
 *
 * @module
 */
import { ConfigError } from './base.js';

/**
 * Why a ledger cannot work:
 * - `'module-missing'`: its optional module (better-sqlite3, ioredis) cannot be loaded;
 * - `'credentials-refused'`: Redis refused the credentials of the URL (`WRONGPASS`, `NOAUTH`,
 *   `NOPERM`) before the ledger ever answered this process;
 * - `'unwritable-path'`: the SQLite file or its directory cannot be created or opened (a
 *   directory without write permission, a path under a regular file, a read-only file system);
 * - `'unusable-path'`: the SQLite file may not be used (a directory on a network file system, a file
 *   of another endpoint or project, a file of an unknown schema);
 * - `'missing-project'`: the ledger serves one project, and the guard's client has no project id
 *   (an endpoint and token without `OS_PROJECT_ID` nor a noauth `user:project` token);
 * - `'host-not-found'`: the CLI's `server create` found that the Redis ledger's host name does not
 *   resolve (`ENOTFOUND`) before any request (the library rides that out in degraded mode, its
 *   warning naming the host name to check).
 */
export type LedgerConfigReason = 'module-missing' | 'credentials-refused' | 'unwritable-path' | 'unusable-path' | 'missing-project' | 'host-not-found';

/**
 * The quota ledger asked for (`ledger: 'sqlite:…' | 'redis://…'`, `NOVA_GUARD_LEDGER`, the CLI's
 * `--ledger`, or a ledger object) cannot work for a reason of its setup, not an outage: the message
 * names the cause and the fix, never a password. A guard rejects its calls with it (from the first
 * one, before any `POST /servers`) unless `ledgerFallback: 'in-process'` asks for a soft start.
 * Derives from {@link ConfigError} (the CLI exits 1 with its message).
 */
export class LedgerConfigError extends ConfigError {
  /** The ledger's kind: `'sqlite'`, `'redis'`, or the `kind` of a ledger object. */
  readonly kind: string;
  /** Why it cannot work. */
  readonly reason: LedgerConfigReason;
  /** What to do about it (also the end of the message). */
  readonly fix: string;

  /**
   * @param message - The cause (never a password); the fix is appended.
   * @param options - `kind`, `reason`, `fix`; `file`: the SQLite path, when it is about one; `cause`:
   *   the underlying error (redacted).
   */
  constructor(message: string, options: { kind: string; reason: LedgerConfigReason; fix: string; file?: string; cause?: unknown }) {
    super(`${message}. Fix: ${options.fix}`, { ...(options.file === undefined ? {} : { file: options.file }), cause: options.cause });
    this.kind = options.kind;
    this.reason = options.reason;
    this.fix = options.fix;
  }
}
