/**
 * A quota ledger from a string, one syntax for the library and the CLI: `ledger: 'sqlite:…' |
 * 'redis://…' | 'rediss://…' | 'in-process' | QuotaLedger` in `QuotaGuard`'s options, the CLI's
 * `--ledger URL`, and the `NOVA_GUARD_LEDGER` environment variable.
 *
 * It loads the SQLite and Redis ledgers with a dynamic `import()` when a string names one (so
 * `nova-guard` loads without ioredis or better-sqlite3).
 *
 * @module
 */
import { systemClock, type Clock } from '../core/clock.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import type { LoggerOption } from '../core/logger.js';
import { shownConnectionString } from '../core/redact.js';
import { ValidationError } from '../errors/index.js';
import type { QuotaLedger } from '../ledger/index.js';
import type { NovaClient } from '../nova/client.js';
import { checkRedisUrl } from '../redis/url.js';
import { absoluteLedgerPath } from '../sqlite/ledgerPath.js';
import { missingProjectError, sqliteOpenError } from './configError.js';

/** The environment variable that names the ledger when none is given. */
export const LEDGER_ENV = 'NOVA_GUARD_LEDGER';

/** A ledger string, parsed: what {@link parseLedgerSpec} returns. */
export type LedgerSpec = { readonly kind: 'in-process' } | { readonly kind: 'sqlite'; readonly path: string | undefined } | { readonly kind: 'redis'; readonly url: string };

/**
 * Parse a ledger string (no file is opened, no connection made):
 * - `sqlite:` (the default state directory), `sqlite:PATH` (a file, or a directory: one file per
 *   endpoint and project), `sqlite:///abs/path` (the same as `sqlite:/abs/path`). `PATH` is
 *   absolute, or `~` / `~/…` (expanded to this user's home directory); a relative path, `~user/…`
 *   and `:memory:` are refused (processes in different working directories would share nothing);
 * - `redis://[user:password@]host[:port][/db][?family=4|6]`, `rediss://…` (TLS), checked in full
 *   before any connection: a password with `/`, `@`, `%`, `#`, `?` or `:` must be percent-encoded
 *   (`encodeURIComponent`), the path is empty, `/` or a database number, no fragment;
 * - `in-process`: the default ledger of one process.
 * @throws `ValidationError` naming the accepted forms or the rule a Redis URL breaks (everything of
 * the string up to its last `@`, where user info may be, is never shown).
 */
export function parseLedgerSpec(spec: string): LedgerSpec {
  const text = typeof spec === 'string' ? spec.trim() : '';
  const shown = JSON.stringify(shownConnectionString(text));
  const forms = "'sqlite:[PATH]', 'redis://HOST[:PORT][/DB]', 'rediss://…' or 'in-process'";
  if (text === 'in-process') return { kind: 'in-process' };
  if (/^sqlite:/i.test(text)) {
    let path = text.slice('sqlite:'.length);
    if (path.startsWith('//')) {
      if (!path.startsWith('///')) throw new ValidationError(`a SQLite ledger is a local file: write sqlite:/abs/path or sqlite:///abs/path, not a host, got ${shown}`);
      path = path.slice(2);
    }
    return { kind: 'sqlite', path: path === '' ? undefined : absoluteLedgerPath('the SQLite ledger', path, (p) => `sqlite:${p}`) };
  }
  if (/^rediss?:\/\//i.test(text)) {
    checkRedisUrl(text, 'the Redis ledger URL');
    return { kind: 'redis', url: text };
  }
  throw new ValidationError(`a ledger must be ${forms}, got ${shown}`);
}

/** Options of {@link openLedger}. */
export interface OpenLedgerOptions {
  /** pino logger, or an object with pino's level methods, given to the ledger. @default silent */
  readonly logger?: LoggerOption | undefined;
  /** The Nova compute endpoint of the quota. @default `await client.endpoint()` */
  readonly endpoint?: string | undefined;
  /** The project id of the quota. @default `client.projectId` */
  readonly projectId?: string | undefined;
  /**
   * The client whose endpoint and project the ledger serves, when `endpoint`/`projectId` are not
   * given. With it, a SQLite or Redis ledger is made by its `forClient`: with the fleet watcher (on
   * by default), looking with this client.
   */
  readonly client?: NovaClient | undefined;
  /** Clock of the ledger's timers (leases in the SQLite file are on the host's monotonic clock, read through its `now()`). @default `client.clock`, else systemClock */
  readonly clock?: Clock | undefined;
  /** Holder name written into claims. @default `<hostname>:<pid>` */
  readonly holder?: string | undefined;
  /** Where `NOVA_GUARD_LEDGER` is read when `spec` is undefined. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
}

const OPTION_NAMES: OptionsSpec<OpenLedgerOptions> = { logger: null, endpoint: null, projectId: null, client: null, clock: null, holder: null, env: null };

/**
 * The ledger `spec` names, opened for one endpoint and project.
 * - A `QuotaLedger` object: returned as it is.
 * - `undefined`: `NOVA_GUARD_LEDGER` of `options.env` when set, else `undefined` (none given: use
 *   the default in-process ledger).
 * - `'in-process'`: `undefined` (the default).
 * - `'sqlite:…'`: a `SqliteQuotaLedger` (needs better-sqlite3; with `options.client`,
 *   `SqliteQuotaLedger.forClient`: its fleet watcher on by default).
 * - `'redis://…'`, `'rediss://…'`: a `RedisQuotaLedger` (needs ioredis; with `options.client`,
 *   `RedisQuotaLedger.forClient`: its fleet watcher on by default; no connection is awaited:
 *   refused credentials show at its first call).
 * The caller owns the ledger returned and closes it. A ledger that cannot work is never replaced by
 * another: it throws (a `QuotaGuard` can be told to go on without it: `ledgerFallback`).
 * @throws `ValidationError` for a string that is not a ledger spec (before any file or connection),
 * an unknown option, or no endpoint and project id (neither given nor a `client`);
 * `LedgerConfigError` with `reason: 'missing-project'` when `client` has no project id and none is given;
 * `LedgerConfigError` (a `ConfigError`) naming the cause and the fix when better-sqlite3 or ioredis
 * cannot be loaded (`reason: 'module-missing'`), the SQLite file or its directory cannot be
 * created or opened (`'unwritable-path'`) or may not be used (a network file system, a file of
 * another endpoint or project, a path that is not a regular file or a file that is not a SQLite
 * database: `'unusable-path'`); what the ledger's constructor throws otherwise
 * (a corrupt file: `SqliteLedgerError`).
 */
export async function openLedger(spec: string | QuotaLedger | undefined, options: OpenLedgerOptions = {}): Promise<QuotaLedger | undefined> {
  checkOptions('openLedger options', options, OPTION_NAMES);
  let text = spec;
  if (text === undefined) {
    const fromEnv = (options.env ?? process.env)[LEDGER_ENV];
    if (fromEnv === undefined || fromEnv.trim() === '') return undefined;
    text = fromEnv;
  }
  if (typeof text !== 'string') {
    if (text === null || typeof text !== 'object') throw new ValidationError(`ledger must be a string or a QuotaLedger, got ${typeof text}`);
    return text;
  }
  const parsed = parseLedgerSpec(text);
  if (parsed.kind === 'in-process') return undefined;
  const projectId = options.projectId ?? options.client?.projectId;
  if (projectId === undefined && options.client !== undefined) throw missingProjectError(parsed.kind);
  if (projectId === undefined) throw new ValidationError(`the ledger ${JSON.stringify(parsed.kind)} serves one project: give projectId (or a client with one)`);
  const endpoint = options.endpoint ?? (await options.client?.endpoint());
  if (endpoint === undefined) throw new ValidationError(`the ledger ${JSON.stringify(parsed.kind)} serves one endpoint: give endpoint (or a client)`);
  const clock = options.clock ?? options.client?.clock ?? systemClock;
  const common = { endpoint, projectId, clock, ...(options.holder === undefined ? {} : { holder: options.holder }), ...(options.logger === undefined ? {} : { logger: options.logger }) };
  if (parsed.kind === 'redis') {
    const { RedisQuotaLedger } = await import('../redis/index.js');
    return options.client ? RedisQuotaLedger.forClient(options.client, { ...common, url: parsed.url }) : new RedisQuotaLedger({ ...common, url: parsed.url });
  }
  const { SqliteQuotaLedger } = await import('../sqlite/index.js');
  try {
    const sqlite = { ...common, ...(parsed.path === undefined ? {} : { path: parsed.path }) };
    return options.client ? await SqliteQuotaLedger.forClient(options.client, sqlite) : new SqliteQuotaLedger(sqlite);
  } catch (error) {
    throw sqliteOpenError(error);
  }
}
