/**
 * Options of {@link RedisQuotaLedger}: validation, defaults and the key names of one ledger scope.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Clock } from '../core/index.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { checkDurationMs } from '../core/validate.js';
import { redactUrlSecrets, shownConnectionString } from '../core/redact.js';
import { isHttpUrl, normaliseEndpoint } from '../core/endpoint.js';
import { toLogger, type LoggerOption } from '../core/logger.js';
import { ValidationError } from '../errors/index.js';
import { isClock, isHolderName } from '../ledger/index.js';
import { checkRedisUrl } from './url.js';

/** Options of `new RedisQuotaLedger(...)`. */
export interface RedisQuotaLedgerOptions {
  /**
   * Redis URL (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS). The ledger opens its
   * own connections and closes them in `close()`. The password never reaches a log, an error or an
   * inspected object. Give `url` or `redis`, not both.
   */
  readonly url?: string;
  /**
   * An ioredis client to use instead of `url`. The ledger adds its commands to it
   * (`defineCommand`, names starting with `novaGuard`), opens one duplicate for pub/sub, and leaves
   * the client open in `close()`.
   */
  readonly redis?: Redis;
  /**
   * The Nova compute endpoint the quota belongs to: an `http://` or `https://` URL, normalised
   * (`normaliseEndpoint`) and hashed into the key names.
   */
  readonly endpoint: string;
  /** The project id the quota belongs to (in the key names). */
  readonly projectId: string;
  /** The holder name written into claims (no commas). @default `<hostname>:<pid>` */
  readonly holder?: string;
  /**
   * Timers and "now" for waits and heartbeats (stamps and leases use Redis's clock): an object with
   * `now`, `wallNow`, `setTimeout` and `clearTimeout` functions. @default systemClock
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
   * it. Also how long the fleet admits nothing after a Redis restarted empty (so every holder can
   * write back its claims first; a third of it after an ordinary reconnect). At least
   * {@link MIN_PLACE_TTL_MS} (1000 ms): a shorter lease would lapse between the heartbeats of a
   * busy process and drop live places. @default 15000
   */
  readonly placeTtlMs?: number;
  /** Bound of every Redis call (and of the wait for a connection), in ms. @default 2000 */
  readonly commandTimeoutMs?: number;
  /**
   * On a store never vetted (new, or emptied by a Redis restart: see `docs/fleet-ledger.md`,
   * "A process whose first contact is an emptied store"), the guard's listing of the servers Nova
   * does not count yet waits until Redis has been up this long, in ms (by its `uptime_in_seconds`,
   * less one second for its rounding); until then `acquire` admits nothing and the guard waits and
   * tries again. A POST that a cut-off holder sent just before an empty restart is a build request
   * Nova lists only once Nova's API has handled it: set this to the longest a `POST /servers` takes
   * at your Nova so the listing shows it. It costs a fleet that starts on a Redis younger than
   * this the rest of it, once; 0: list at once (a POST still in flight across the restart is then
   * left to Nova's recheck and 403 path). Only for POSTs already sent: a claim admitted but not yet
   * POSTed by a holder cut off across an empty restart needs no grace (its holder's write-back does
   * not restore it, so its renewal right before the POST answers false and it is admitted again).
   * @default 0
   */
  readonly restartGraceMs?: number;
  /**
   * Prefix of every key and channel. No `{` or `}`: the ledger's keys carry their own hash tag
   * (`{<endpoint hash>:<project>}`) so that one scope lands in one Redis Cluster slot, and a brace
   * in the prefix would become the hash tag instead. @default 'nova-guard:'
   */
  readonly keyPrefix?: string;
  /** pino logger, or an object with pino's level methods (`info`, `warn`, `error`, `debug`); the default is silent. */
  readonly logger?: LoggerOption;
  /**
   * Elect one watcher among the hosts of this ledger's scope (a Redis lease): it looks at the servers
   * any host waits to be deleted and publishes what it saw (states, proofs of deletion, Nova's
   * `Date`); the delete waits of every other host consume the publications instead of sending their
   * own GETs and listings, and fall back to their own looks (one warning each time) on a gap or when
   * no publication came within `fleetLeaseTtlMs`. Needs the client whose delete engine takes part:
   * only {@link RedisQuotaLedger.forClient} takes it (`new RedisQuotaLedger` refuses `true`; a ledger
   * made so has no watcher). See `docs/fleet-ledger.md`, "The fleet watcher".
   * @default true with `forClient` when its client knows its project and has no other fleet link
   * (otherwise off, logged at info); `false` turns it off.
   */
  readonly fleetWatcher?: boolean;
  /**
   * With `fleetWatcher`: the watcher's lease, in ms. Renewed every third of it, with a publication at
   * least that often; a dead or stopped watcher is replaced within it; a host that gets no
   * publication for this long looks by itself. At least 300, whole ms. @default 6000
   */
  readonly fleetLeaseTtlMs?: number;
}

/** The shortest `fleetLeaseTtlMs` taken, in ms. */
export const MIN_FLEET_LEASE_TTL_MS = 300;

/** The shortest `placeTtlMs` taken, in ms. */
export const MIN_PLACE_TTL_MS = 1000;

/**
 * The names of {@link RedisQuotaLedgerOptions} (typed: the compiler checks it names every option);
 * values are checked by {@link resolveOptions}.
 */
const OPTION_NAMES: OptionsSpec<RedisQuotaLedgerOptions> = {
  url: null,
  redis: null,
  endpoint: null,
  projectId: null,
  holder: null,
  clock: null,
  limitsMaxAgeMs: null,
  limitsLockMs: null,
  placeTtlMs: null,
  commandTimeoutMs: null,
  restartGraceMs: null,
  keyPrefix: null,
  logger: null,
  fleetWatcher: null,
  fleetLeaseTtlMs: null,
};

/** The key and channel names of one ledger scope (one endpoint, one project). */
export interface LedgerKeys {
  /** The prefix of every key of the scope (`<keyPrefix>{<endpoint hash>:<project>}:`). */
  readonly base: string;
  /** Keys of every script, in the order `scripts.ts` lists them (the kept reading and its lock included). */
  readonly scope: readonly string[];
  readonly limits: string;
  readonly limitsLock: string;
  readonly limitsChannel: string;
  readonly freedChannel: string;
}

/**
 * Key names: `<keyPrefix>{<endpoint hash>:<project>}:<name>`. The endpoint is normalised
 * (`normaliseEndpoint`: scheme and host in lower case, no default port, no trailing slash, no
 * trailing `/<projectId>`, so every spelling of one endpoint shares one ledger) and hashed (SHA-256,
 * 16 hex digits), so a URL never lands in Redis; the braces keep one scope in one Redis Cluster slot.
 */
export function ledgerKeys(keyPrefix: string, endpoint: string, projectId: string): LedgerKeys {
  const hash = createHash('sha256').update(normaliseEndpoint(endpoint, projectId)).digest('hex').slice(0, 16);
  const base = `${keyPrefix}{${hash}:${encodeURIComponent(projectId)}}:`;
  return {
    base,
    scope: ['claims', 'claimexp', 'counted', 'countedneeds', 'queue', 'placeexp', 'places', 'token', 'seq', 'countedat', 'holders', 'order', 'limits', 'limits:lock', 'settle'].map((n) => base + n),
    limits: `${base}limits`,
    limitsLock: `${base}limits:lock`,
    limitsChannel: `${base}limits:fresh`,
    freedChannel: `${base}freed`,
  };
}

/** The checked options with their defaults. */
export interface ResolvedOptions {
  readonly holder: string;
  readonly limitsMaxAgeMs: number;
  readonly limitsLockMs: number;
  readonly placeTtlMs: number;
  readonly commandTimeoutMs: number;
  readonly restartGraceMs: number;
  readonly keyPrefix: string;
  readonly fleetLeaseTtlMs: number;
}

/** The password of a Redis URL (for redaction), if any. */
export function urlPassword(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const pw = new URL(url).password;
    return pw === '' ? undefined : decodeURIComponent(pw);
  } catch {
    return undefined;
  }
}

/** Refuse a name that is not an option of {@link RedisQuotaLedgerOptions} (naming the closest), as `forClient` does before it asks the client anything. */
export function checkOptionNames(where: string, options: unknown): void {
  checkOptions(where, options, OPTION_NAMES);
}

/**
 * @throws `ValidationError` for an unknown option, neither or both of `url` and `redis` (naming a
 * key given as undefined, e.g. `url: process.env.REDIS_URL` with the variable unset), a URL that is
 * not `redis:`/`rediss:`, a `redis` that is not an ioredis client, a `clock` that is not a Clock, an
 * endpoint that is not an http(s) URL, an empty project id, a `logger` that is neither pino nor an
 * object with pino's level methods, a holder that is not a non-empty string without commas, a duration
 * that is not a positive whole number of ms (`limitsMaxAgeMs` and `restartGraceMs` may be 0), a `placeTtlMs` below
 * {@link MIN_PLACE_TTL_MS}, or a `keyPrefix` with `{` or `}`.
 */
export function resolveOptions(options: RedisQuotaLedgerOptions): ResolvedOptions {
  checkOptions('RedisQuotaLedger options', options, OPTION_NAMES);
  if (options === undefined) throw new ValidationError('RedisQuotaLedger needs options { url | redis, endpoint, projectId }');
  const { url, redis } = options;
  if (url === undefined && redis === undefined) {
    // A key given as undefined (e.g. `url: process.env.REDIS_URL` with the variable unset) is named.
    const given = (['url', 'redis'] as const).filter((k) => Object.hasOwn(options, k));
    throw new ValidationError(
      given.length > 0
        ? `RedisQuotaLedger: ${given.join(' and ')} ${given.length > 1 ? 'are' : 'is'} undefined: give url (a redis:// URL) or redis (an ioredis client)`
        : 'RedisQuotaLedger needs exactly one of url and redis',
    );
  }
  if (url !== undefined && redis !== undefined) throw new ValidationError('RedisQuotaLedger needs exactly one of url and redis');
  if (url !== undefined && typeof url !== 'string') throw new ValidationError(`RedisQuotaLedger url must be a string, got ${typeof url}`);
  if (redis !== undefined) {
    const r = redis as unknown as Record<string, unknown>;
    if (r === null || typeof r !== 'object' || typeof r.defineCommand !== 'function' || typeof r.duplicate !== 'function') {
      throw new ValidationError(`RedisQuotaLedger redis must be an ioredis client (new Redis(...)), got ${typeof redis === 'string' ? 'a string: pass a URL as url' : typeof redis}`);
    }
  }
  if (options.fleetWatcher !== undefined && options.fleetWatcher !== false) {
    throw new ValidationError('RedisQuotaLedger fleetWatcher needs the client whose waits take part: use RedisQuotaLedger.forClient(client, { fleetWatcher: true, ... })');
  }
  if (options.clock !== undefined && !isClock(options.clock)) throw new ValidationError('RedisQuotaLedger clock must be a Clock (now, wallNow, setTimeout, clearTimeout)');
  if (url !== undefined) {
    if (!/^rediss?:\/\//i.test(url.trim())) throw new ValidationError(`RedisQuotaLedger url must be redis:// or rediss://, got ${JSON.stringify(shownConnectionString(url))}`);
    checkRedisUrl(url.trim(), 'RedisQuotaLedger url');
  }
  if (typeof options.endpoint !== 'string' || options.endpoint.trim() === '') throw new ValidationError('RedisQuotaLedger needs endpoint (the Nova compute endpoint)');
  if (!isHttpUrl(options.endpoint)) throw new ValidationError(`RedisQuotaLedger endpoint must be an http:// or https:// URL (the Nova compute endpoint), got ${JSON.stringify(redactUrlSecrets(options.endpoint))}`);
  if (typeof options.projectId !== 'string' || options.projectId.trim() === '') throw new ValidationError('RedisQuotaLedger needs projectId');
  if (options.logger !== undefined) {
    try {
      toLogger(options.logger);
    } catch (error) {
      throw new ValidationError(`RedisQuotaLedger ${(error as Error).message}`);
    }
  }
  const holder = options.holder ?? `${hostname()}:${process.pid}`;
  if (!isHolderName(holder)) throw new ValidationError(`RedisQuotaLedger holder must be a non-empty string without commas, got ${JSON.stringify(holder)}`);
  const durations = { limitsMaxAgeMs: 10_000, limitsLockMs: 10_000, placeTtlMs: 15_000, commandTimeoutMs: 2000, fleetLeaseTtlMs: 6000, restartGraceMs: 0 } as const;
  const out: Record<string, number> = {};
  for (const [name, dflt] of Object.entries(durations)) {
    const value = (options as unknown as Record<string, unknown>)[name] ?? dflt;
    checkDurationMs(name, value, { allowZero: name === 'limitsMaxAgeMs' || name === 'restartGraceMs', allowInfinity: false, timer: true });
    // Redis takes whole milliseconds (PX, PEXPIRE).
    if (!Number.isInteger(value)) throw new ValidationError(`RedisQuotaLedger ${name} must be a whole number of milliseconds, got ${String(value)}`);
    out[name] = value as number;
  }
  if (out.fleetLeaseTtlMs! < MIN_FLEET_LEASE_TTL_MS) throw new ValidationError(`RedisQuotaLedger fleetLeaseTtlMs must be at least ${MIN_FLEET_LEASE_TTL_MS} ms, got ${out.fleetLeaseTtlMs}`);
  if (out.placeTtlMs! < MIN_PLACE_TTL_MS) throw new ValidationError(`RedisQuotaLedger placeTtlMs must be at least ${MIN_PLACE_TTL_MS} ms, got ${out.placeTtlMs}`);
  const keyPrefix = options.keyPrefix ?? 'nova-guard:';
  if (typeof keyPrefix !== 'string') throw new ValidationError('RedisQuotaLedger keyPrefix must be a string');
  if (/[{}]/.test(keyPrefix)) throw new ValidationError(`RedisQuotaLedger keyPrefix must not contain { or } (the keys carry their own hash tag), got ${JSON.stringify(keyPrefix)}`);
  return {
    holder,
    limitsMaxAgeMs: out.limitsMaxAgeMs!,
    limitsLockMs: out.limitsLockMs!,
    placeTtlMs: out.placeTtlMs!,
    commandTimeoutMs: out.commandTimeoutMs!,
    restartGraceMs: out.restartGraceMs!,
    keyPrefix,
    fleetLeaseTtlMs: out.fleetLeaseTtlMs!,
  };
}
