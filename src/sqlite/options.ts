/**
 * Options of {@link SqliteQuotaLedger}: validation, defaults, and where the ledger file of one
 * endpoint and project lives.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { Clock } from '../core/index.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { checkDurationMs } from '../core/validate.js';
import { isHttpUrl, normaliseEndpoint } from '../core/endpoint.js';
import { redactUrlSecrets } from '../core/redact.js';
import { toLogger, type LoggerOption } from '../core/logger.js';
import { ValidationError } from '../errors/index.js';
import { MAX_BUSY_TIMEOUT_MS } from './busy.js';
import { absoluteLedgerPath } from './ledgerPath.js';
import { defaultHolder, isClock, isHolderName } from '../ledger/index.js';

/** Options of `new SqliteQuotaLedger(...)`. */
export interface SqliteQuotaLedgerOptions {
  /**
   * The Nova compute endpoint the quota belongs to: an `http://` or `https://` URL (normalised with
   * `normaliseEndpoint`, then hashed into the default file name).
   */
  readonly endpoint: string;
  /** The project id the quota belongs to. */
  readonly projectId: string;
  /**
   * The ledger file, or a directory for one file per endpoint and project (a path that is an
   * existing directory or ends with `/`). Absolute; `~` and `~/…` are expanded to this user's home
   * directory. A relative path, `~user/…` and `:memory:` are refused (`ValidationError`): every
   * process of the host must name the same file whatever its working directory. The
   * directory is created (mode 0700) when missing; one on a network file system (NFS, CIFS/SMB,
   * sshfs, ...) is refused. A file that holds another endpoint's or project's ledger is refused.
   * @default {@link defaultLedgerDir} (`$XDG_STATE_HOME/nova-guard`, else
   * `$XDG_RUNTIME_DIR/nova-guard`, else `~/.local/state/nova-guard`), one file per endpoint and project
   */
  readonly path?: string;
  /** The holder name written into claims (no commas). @default `<hostname>:<pid>` */
  readonly holder?: string;
  /**
   * Timers and "now": waits, polls and heartbeats use `now()` and `setTimeout`; leases and reading
   * times stored in the file are in ms of the host's monotonic clock, read as `now()` plus an
   * origin taken once per clock object (with `systemClock`: `CLOCK_MONOTONIC`, the same in every
   * process of the host; `wallNow()` is never used for them, so a wall-clock step ends no lease).
   * @default systemClock
   */
  readonly clock?: Clock;
  /**
   * A kept `/limits` reading younger than this, in ms, is handed out instead of a new read. For a
   * call that waited for another holder's refresh, counted from when it first asked: the reading it
   * waited for is fresh for it when it was fresh then (a `GET /limits` slower than this still gives
   * the fleet one read). A confirmed deletion of a server a guard created is credited to the kept
   * reading (`FreedCredit`), so it stays fresh; a kept reading short only because of claims released
   * after it was sent is not answered on (it may count their servers twice): the call reads again.
   * What it can miss is a change outside the ledger (a server another tool created): Nova's quota
   * check answers that create with a 403, and the call's next admission reads again (`refutedStamp`).
   * @default 10000
   */
  readonly limitsMaxAgeMs?: number;
  /** How long a holder may hold the refresh lock of the kept reading, in ms. @default 10000 */
  readonly limitsLockMs?: number;
  /**
   * Lease of a queue place and of the holder entry, in ms; a live ledger renews them every third of
   * it. At least 1000 ms. @default 15000
   */
  readonly placeTtlMs?: number;
  /**
   * How long one ledger call keeps trying a file another process holds locked, in ms, from 1 to
   * 60000. The event loop runs meanwhile: each try blocks it for at most 5 ms (SQLite's own busy
   * timeout), and the tries are spaced by an asynchronous backoff (2 ms doubling up to 50 ms). Then
   * the call rejects with a `SqliteLedgerError` (`code` `SQLITE_BUSY`), and the guard waits for the
   * ledger (see `docs/sqlite-ledger.md`, "Errors"). The guard also bounds each ledger call by its
   * `ledgerTimeoutMs`, or what is left of the call's `maxWaitMs`, whichever ends first.
   * @default 2000
   */
  readonly busyTimeoutMs?: number;
  /** How often the file is polled for "quota freed" and "reading refreshed" news of other processes, in ms. @default 25 */
  readonly pollIntervalMs?: number;
  /** pino logger, or an object with pino's level methods (`info`, `warn`, `error`, `debug`); the default is silent. */
  readonly logger?: LoggerOption;
  /**
   * Elect one watcher among the processes that share this ledger file (a lease row in the file, with
   * a fencing epoch): it looks at the servers any process waits on (delete waits and the guard's
   * ACTIVE waits) and publishes what it saw (states, proofs of deletion, Nova's `Date`) into the
   * file; the waits of every other process consume the publications (read from the file every read
   * interval, at most 250 ms) instead of sending their own GETs and listings, and fall back to their
   * own looks (one warning each time) on a gap or when no publication came within
   * `fleetLeaseTtlMs`. The same watcher as `RedisQuotaLedger`'s option of this name. Needs the
   * client whose delete engine takes part: only {@link SqliteQuotaLedger.forClient} takes it (`new
   * SqliteQuotaLedger` refuses `true`; a ledger made so has no watcher). See `docs/fleet-watcher.md`.
   * @default true with `forClient` when its client knows its project and has no other fleet link
   * (otherwise off, logged at info); `false` turns it off.
   */
  readonly fleetWatcher?: boolean;
  /**
   * With `fleetWatcher`: the watcher's lease, in ms. Renewed every third of it, with a publication at
   * least that often; a dead or stopped watcher is replaced within it; a process that gets no
   * publication for this long looks by itself. At least 300, whole ms. @default 6000
   */
  readonly fleetLeaseTtlMs?: number;
}

/** The shortest `fleetLeaseTtlMs` taken, in ms (as the Redis ledger's). */
export const MIN_FLEET_LEASE_TTL_MS = 300;

/** The names of {@link SqliteQuotaLedgerOptions}; values are checked by {@link resolveOptions}. */
const OPTION_NAMES: OptionsSpec<SqliteQuotaLedgerOptions> = {
  endpoint: null,
  projectId: null,
  path: null,
  holder: null,
  clock: null,
  limitsMaxAgeMs: null,
  limitsLockMs: null,
  placeTtlMs: null,
  busyTimeoutMs: null,
  pollIntervalMs: null,
  logger: null,
  fleetWatcher: null,
  fleetLeaseTtlMs: null,
};

/** The checked options with their defaults. */
export interface ResolvedSqliteOptions {
  readonly holder: string;
  /** The ledger file (absolute). */
  readonly file: string;
  readonly limitsMaxAgeMs: number;
  readonly limitsLockMs: number;
  readonly placeTtlMs: number;
  readonly busyTimeoutMs: number;
  readonly pollIntervalMs: number;
  readonly fleetLeaseTtlMs: number;
}

/**
 * The default directory of ledger files: `$XDG_STATE_HOME/nova-guard`, else
 * `$XDG_RUNTIME_DIR/nova-guard` (local by the XDG spec), else `~/.local/state/nova-guard`.
 * @param env - The environment. @default process.env
 */
export function defaultLedgerDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const state = env.XDG_STATE_HOME;
  if (state !== undefined && isAbsolute(state)) return join(state, 'nova-guard');
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime !== undefined && isAbsolute(runtime)) return join(runtime, 'nova-guard');
  return join(homedir(), '.local', 'state', 'nova-guard');
}

/**
 * The file name of one endpoint's and project's ledger: `ledger-<16 hex digits of SHA-256 of the
 * normalised endpoint and project>-<project, letters, digits, - and _ only, at most 40>.sqlite`.
 */
export function ledgerFileName(endpoint: string, projectId: string): string {
  const hash = createHash('sha256').update(`${normaliseEndpoint(endpoint, projectId)}\n${projectId}`).digest('hex').slice(0, 16);
  return `ledger-${hash}-${projectId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 40)}.sqlite`;
}

/** `path` (absolute, see `ledgerPath.ts`; or the default directory) resolved to the ledger file of `endpoint` and `projectId`. */
export function ledgerFile(path: string | undefined, endpoint: string, projectId: string, env?: Readonly<Record<string, string | undefined>>): string {
  if (path === undefined || path === '') return join(defaultLedgerDir(env), ledgerFileName(endpoint, projectId));
  const abs = resolve(absoluteLedgerPath('SqliteQuotaLedger path', path));
  let isDir = path.endsWith('/');
  if (!isDir) {
    try {
      isDir = statSync(abs).isDirectory();
    } catch {
      isDir = false;
    }
  }
  return isDir ? join(abs, ledgerFileName(endpoint, projectId)) : abs;
}

/**
 * @throws `ValidationError` for an unknown option (naming the closest), an endpoint that is not an
 * http(s) URL, an empty project id, a `path` that is not a non-empty string, a `clock` that is not a
 * Clock, a `logger` that is neither pino nor an object with pino's level methods, a holder that is
 * not a non-empty string without commas, a duration that is not a positive whole number of ms
 * (`limitsMaxAgeMs` may be 0), a `placeTtlMs` below 1000, `fleetWatcher: true` (only `forClient` takes it), a
 * `fleetLeaseTtlMs` below 300, a `busyTimeoutMs` above 60000, or a
 * `path` that is relative, `~user/…` or `:memory:` (see `ledgerPath.ts`).
 */
export function resolveOptions(options: SqliteQuotaLedgerOptions): ResolvedSqliteOptions {
  checkOptions('SqliteQuotaLedger options', options, OPTION_NAMES);
  if (options === undefined) throw new ValidationError('SqliteQuotaLedger needs options { endpoint, projectId }');
  if (typeof options.endpoint !== 'string' || !isHttpUrl(options.endpoint)) {
    throw new ValidationError(`SqliteQuotaLedger endpoint must be an http:// or https:// URL (the Nova compute endpoint), got ${JSON.stringify(redactUrlSecrets(String(options.endpoint)))}`);
  }
  if (typeof options.projectId !== 'string' || options.projectId.trim() === '') throw new ValidationError('SqliteQuotaLedger needs projectId');
  if (options.path !== undefined && (typeof options.path !== 'string' || options.path.trim() === '')) throw new ValidationError('SqliteQuotaLedger path must be a non-empty string (a file or a directory)');
  if (options.clock !== undefined && !isClock(options.clock)) throw new ValidationError('SqliteQuotaLedger clock must be a Clock (now, wallNow, setTimeout, clearTimeout)');
  if (options.fleetWatcher !== undefined && options.fleetWatcher !== false) {
    throw new ValidationError('SqliteQuotaLedger fleetWatcher needs the client whose waits take part: use SqliteQuotaLedger.forClient(client, { fleetWatcher: true, ... })');
  }
  if (options.logger !== undefined) {
    try {
      toLogger(options.logger);
    } catch (error) {
      throw new ValidationError(`SqliteQuotaLedger ${(error as Error).message}`);
    }
  }
  const holder = options.holder ?? defaultHolder();
  if (!isHolderName(holder)) throw new ValidationError(`SqliteQuotaLedger holder must be a non-empty string without commas, got ${JSON.stringify(holder)}`);
  const durations = { limitsMaxAgeMs: 10_000, limitsLockMs: 10_000, placeTtlMs: 15_000, busyTimeoutMs: 2000, pollIntervalMs: 25, fleetLeaseTtlMs: 6000 } as const;
  const out: Record<string, number> = {};
  for (const [name, dflt] of Object.entries(durations)) {
    const value = (options as unknown as Record<string, unknown>)[name] ?? dflt;
    checkDurationMs(name, value, { allowZero: name === 'limitsMaxAgeMs', allowInfinity: false, timer: true });
    if (!Number.isInteger(value)) throw new ValidationError(`SqliteQuotaLedger ${name} must be a whole number of milliseconds, got ${String(value)}`);
    out[name] = value as number;
  }
  if (out.fleetLeaseTtlMs! < MIN_FLEET_LEASE_TTL_MS) throw new ValidationError(`SqliteQuotaLedger fleetLeaseTtlMs must be at least ${MIN_FLEET_LEASE_TTL_MS} ms, got ${out.fleetLeaseTtlMs}`);
  if (out.placeTtlMs! < 1000) throw new ValidationError(`SqliteQuotaLedger placeTtlMs must be at least 1000 ms, got ${out.placeTtlMs}`);
  if (out.busyTimeoutMs! > MAX_BUSY_TIMEOUT_MS) {
    throw new ValidationError(`SqliteQuotaLedger busyTimeoutMs must be at most ${MAX_BUSY_TIMEOUT_MS} ms (how long one ledger call keeps trying a locked file; the guard gives up on a ledger call long before), got ${out.busyTimeoutMs}`);
  }
  const path = options.path === undefined ? undefined : absoluteLedgerPath('SqliteQuotaLedger path', options.path);
  return {
    holder,
    file: ledgerFile(path, options.endpoint, options.projectId),
    limitsMaxAgeMs: out.limitsMaxAgeMs!,
    limitsLockMs: out.limitsLockMs!,
    placeTtlMs: out.placeTtlMs!,
    busyTimeoutMs: out.busyTimeoutMs!,
    pollIntervalMs: out.pollIntervalMs!,
    fleetLeaseTtlMs: out.fleetLeaseTtlMs!,
  };
}

/** Refuse a name that is not an option of {@link SqliteQuotaLedgerOptions} (naming the closest), as `forClient` does before it asks the client anything. */
export function checkOptionNames(where: string, options: unknown): void {
  checkOptions(where, options, OPTION_NAMES);
}
