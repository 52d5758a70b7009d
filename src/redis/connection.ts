/**
 * The Redis side of the ledger: the command connection (with the Lua scripts defined on it), the
 * pub/sub connection, time limits on every call, redaction of the URL's password, and the
 * "connected again" hook that lets the ledger write back what it holds.
 *
 * ioredis reconnects by itself (its `retryStrategy`). While the connection is down a call waits
 * at most `commandTimeoutMs` for it to come back and then rejects with {@link RedisLedgerError}:
 * the ledger's own connection has `enableOfflineQueue: false`, so nothing piles up behind a dead
 * Redis and the guard's fallback can take over at once. When the connection is down for a reason
 * that says Redis cannot be reached at all (`DOWN_CODES`: refused, unknown host, wrong password...),
 * a call rejects at once, marked `ledgerDown`, without waiting.
 *
 * Every command's round trip is measured (RFC 6298 smoothed round trip and variation), so the
 * ledger can say how long one of its calls may take ({@link RedisConnection.rtoMs}).
 *
 * @module
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import pTimeout from 'p-timeout';
import type { Clock, Logger } from '../core/index.js';
import { LedgerConfigError } from '../errors/index.js';
import { pTimeoutTimers } from '../core/clock.js';
import { redactSecrets, redactUrlSecrets, shownConnectionString } from '../core/redact.js';
import { AUTH_CODES, RedisLedgerError, downCode } from './errors.js';
import * as lua from './scripts.js';

/**
 * How long ioredis's `disconnect()` lets a socket close by itself before it destroys it, in ms
 * (ioredis's option `disconnectTimeout`, 2000 by default; the subscriber takes it too). A socket
 * that never connected (a refused or unresolved Redis, still retrying) does not close by itself:
 * with the default its timer held a process that had closed its guard 2 s longer (`server create`
 * exited 2 s after printing the server). A connection that answered `QUIT` closes well within it.
 */
export const DISCONNECT_TIMEOUT_MS = 200;

/** The install command named when the optional peer dependency ioredis is missing. */
export const IOREDIS_INSTALL = 'npm install ioredis@^5';

/**
 * What a failed load of `ioredis` becomes: when the module itself is not installed
 * (`MODULE_NOT_FOUND` / `ERR_MODULE_NOT_FOUND` naming `ioredis`), a `LedgerConfigError`
 * (`reason: 'module-missing'`, a `ConfigError`) naming the optional peer dependency and how to
 * install it; any other error (one of ioredis's own dependencies missing, a syntax error) is
 * returned as it is.
 */
export function ioredisLoadError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && /['"]ioredis['"]/.test(message)) {
    return new LedgerConfigError('the Redis ledger needs the optional peer dependency ioredis (5.x), which is not installed', {
      kind: 'redis',
      reason: 'module-missing',
      fix: `${IOREDIS_INSTALL}, or use ledger: 'in-process'`,
      cause: error,
    });
  }
  return error;
}

/**
 * The ioredis `Redis` class, loaded on first use (so that `nova-guard/redis` can be imported, and a
 * ledger built on a caller's own client, without a top-level import of the optional peer).
 * @param load - How to load the module. @default `createRequire(import.meta.url)('ioredis')`
 * @throws `LedgerConfigError` (a `ConfigError`) when ioredis is not installed (see {@link ioredisLoadError}).
 */
export function loadIoredis(load: () => unknown = () => createRequire(import.meta.url)('ioredis')): typeof Redis {
  try {
    return (load() as { Redis: typeof Redis }).Redis;
  } catch (error) {
    throw ioredisLoadError(error);
  }
}

/** How many keys every script takes (see `scripts.ts`). */
export const SCRIPT_KEYS = 15;

/** The scripts, by the command name they get on the client; each takes the {@link SCRIPT_KEYS} keys of one scope. */
const COMMANDS = {
  novaGuardAdmit: lua.ADMIT,
  novaGuardAcquire: lua.ACQUIRE,
  novaGuardStoreAdmit: lua.STORE_ADMIT,
  novaGuardClaimAnyway: lua.CLAIM_ANYWAY,
  novaGuardRenew: lua.RENEW,
  novaGuardBind: lua.BIND,
  novaGuardRelease: lua.RELEASE,
  novaGuardJoin: lua.JOIN,
  novaGuardLeave: lua.LEAVE,
  novaGuardGoodbye: lua.GOODBYE,
  novaGuardAssert: lua.ASSERT,
  novaGuardInFlight: lua.IN_FLIGHT,
  novaGuardLiveClaims: lua.LIVE_CLAIMS,
  novaGuardLimitsBegin: lua.LIMITS_BEGIN,
  novaGuardLimitsStore: lua.LIMITS_STORE,
  novaGuardLimitsUnlock: lua.LIMITS_UNLOCK,
  novaGuardFreed: lua.FREED,
  novaGuardVetted: lua.VETTED,
} as const;

/** A script command name. */
export type LedgerCommand = keyof typeof COMMANDS;

/** What {@link RedisConnection} needs. */
export interface ConnectionInit {
  readonly url: string | undefined;
  readonly redis: Redis | undefined;
  readonly password: string | undefined;
  readonly clock: Clock;
  readonly commandTimeoutMs: number;
  readonly logger: Logger;
  /** Channels to subscribe to, and what to do with a message. */
  readonly channels: readonly string[];
  readonly onMessage: (channel: string, message: string) => void;
  /** Called on every `ready` after the first: write back what this holder holds. */
  readonly onReconnect: () => Promise<void>;
}

/**
 * RFC 6298 (TCP's retransmission timer) on the command round trips: the first sample R sets
 * `srtt = R`, `rttvar = R / 2`; each later one `rttvar = 3/4 rttvar + 1/4 |srtt - R|`, then
 * `srtt = 7/8 srtt + 1/8 R`; `RTO = srtt + max(G, 4 rttvar)` with G = 1 ms (the clock's
 * granularity). Without RFC 6298's 1 s floor: the ledger's call budget sets its own.
 */
export class RoundTrips {
  #srtt: number | undefined;
  #rttvar = 0;
  #samples = 0;

  /** Take one round trip, in ms. */
  sample(ms: number): void {
    const r = Math.max(0, ms);
    this.#samples += 1;
    if (this.#srtt === undefined) {
      this.#srtt = r;
      this.#rttvar = r / 2;
      return;
    }
    this.#rttvar = 0.75 * this.#rttvar + 0.25 * Math.abs(this.#srtt - r);
    this.#srtt = 0.875 * this.#srtt + 0.125 * r;
  }

  /** The smoothed round trip in ms (`undefined` before the first sample). */
  get srttMs(): number | undefined {
    return this.#srtt;
  }

  /** The round-trip variation in ms. */
  get rttvarMs(): number {
    return this.#rttvar;
  }

  /** How many round trips were taken. */
  get samples(): number {
    return this.#samples;
  }

  /** `srtt + max(1, 4 rttvar)` in ms, `undefined` before the first sample. */
  rtoMs(): number | undefined {
    return this.#srtt === undefined ? undefined : this.#srtt + Math.max(1, 4 * this.#rttvar);
  }
}

/** Two ioredis connections (commands, pub/sub) with time limits, round-trip measurement and redaction. */
export class RedisConnection {
  readonly #client: Redis;
  readonly #sub: Redis;
  readonly #own: boolean;
  readonly #init: ConnectionInit;
  readonly #rtt = new RoundTrips();
  #reasserting: Promise<void> | undefined;
  /** One wait for `ready`, shared by every call made while connecting (one listener, however many calls). */
  #readyWait: { promise: Promise<void>; reject: (e: Error) => void } | undefined;
  /** The last error ioredis reported (redacted): said when a wait for the connection runs out. */
  #lastError: string | undefined;
  /** While the connection is down for a {@link DOWN_CODES} reason: that code (calls reject at once). */
  #downCode: string | undefined;
  #down = false;
  #everReady = false;
  #closed = false;
  #slowWarned = false;
  readonly #listeners: Array<[string, (...args: never[]) => void]> = [];

  constructor(init: ConnectionInit) {
    this.#init = init;
    this.#own = init.redis === undefined;
    const timeouts = { enableOfflineQueue: false, commandTimeout: init.commandTimeoutMs, maxRetriesPerRequest: 0, disconnectTimeout: DISCONNECT_TIMEOUT_MS };
    this.#client = init.redis ?? new (loadIoredis())(init.url!, timeouts);
    for (const [name, lua] of Object.entries(COMMANDS)) this.#client.defineCommand(name, { lua, numberOfKeys: SCRIPT_KEYS });
    // The subscriber subscribes on every `ready` (the first connect and each reconnect) by itself:
    // ioredis's own resubscribe (`autoResubscribe`) leaves its SUBSCRIBE's promise without a handler,
    // so a close while that SUBSCRIBE waits (a reconnect cut off again, then `close()`) rejected it
    // with "Connection is closed" as an unhandled rejection, which ends a Node process.
    this.#sub = this.#client.duplicate({ enableOfflineQueue: true, autoResubscribe: false, commandTimeout: undefined, maxRetriesPerRequest: null });
    let first = this.#client.status === 'ready';
    this.#everReady = first;
    this.#on(this.#client, 'ready', () => {
      this.#everReady = true;
      if (this.#down) init.logger.info('Redis ledger: connected again');
      this.#down = false;
      this.#downCode = undefined;
      if (!first) {
        first = true;
        return;
      }
      this.#reasserting = init.onReconnect().catch((error: unknown) => {
        init.logger.warn({ err: this.redact(String(error)) }, 'Redis ledger: could not write back the held claims after a reconnect');
      });
    });
    this.#on(this.#client, 'error', (error: Error) => this.#lost(error));
    this.#on(this.#client, 'end', () => this.#lost(undefined));
    this.#sub.on('error', () => {});
    this.#sub.on('message', (channel: string, message: string) => init.onMessage(channel, message));
    this.#sub.on('ready', () => {
      this.#sub.subscribe(...init.channels).catch((error: unknown) => {
        if (!this.#closed) init.logger.warn({ err: this.redact(String(error)) }, 'Redis ledger: could not subscribe');
      });
    });
  }

  #on(emitter: Redis, event: string, fn: (...args: never[]) => void): void {
    emitter.on(event, fn as (...args: unknown[]) => void);
    this.#listeners.push([event, fn]);
  }

  #lost(error: Error | undefined): void {
    // Redis's own words (WRONGPASS, NOAUTH, ECONNREFUSED...) hold no secret; redacted all the same.
    if (error !== undefined) {
      this.#lastError = this.redact(error.message);
      const code = this.#client.status === 'ready' ? undefined : downCode(error);
      if (code !== undefined) {
        this.#downCode = code;
        // Calls waiting for the connection learn at once that it is not coming.
        const wait = this.#readyWait;
        this.#readyWait = undefined;
        wait?.reject(this.#downError());
      }
    }
    if (this.#down || this.#closed) return;
    this.#down = true;
    const err = error === undefined ? undefined : this.redact(error.message);
    if (!this.#everReady && AUTH_CODES.has(this.#downCode ?? '')) {
      // Never connected, credentials refused: a setup error, which the ledger's first call reports
      // (a guard rejects with a LedgerConfigError naming the fix); a warning here would say "lost".
      this.#init.logger.debug({ err }, 'Redis ledger: Redis refused the credentials (ioredis retries)');
      return;
    }
    if (!this.#everReady && this.#downCode !== undefined) {
      // Never connected, and why is known (a refused connection, a host name that does not
      // resolve): the calls waiting reject at once with it, and their caller (a guard) says what it
      // does about it, with the URL. A second warning here, at the same moment, would say less.
      this.#init.logger.debug({ err }, 'Redis ledger: cannot connect yet (ioredis retries)');
      return;
    }
    this.#init.logger.warn({ err }, this.#everReady ? 'Redis ledger: connection lost (ioredis reconnects)' : 'Redis ledger: cannot connect yet (ioredis retries)');
  }

  #downError(): RedisLedgerError {
    const at = this.#init.url === undefined ? '' : ` at ${this.redact(shownConnectionString(this.#init.url))}`;
    return new RedisLedgerError(`Redis ledger${at}: Redis cannot be reached (${this.#lastError ?? this.#downCode ?? 'down'})`, { downCode: this.#downCode });
  }

  /** `text` without the URL's password or user info. */
  redact(text: string): string {
    return redactSecrets(redactUrlSecrets(text), this.#init.password === undefined ? [] : [this.#init.password]);
  }

  /** The measured round trips of the commands (see {@link RoundTrips}). */
  get roundTrips(): RoundTrips {
    return this.#rtt;
  }

  /** RFC 6298 RTO of the commands' round trips, in ms; `undefined` before the first answer. */
  rtoMs(): number | undefined {
    return this.#rtt.rtoMs();
  }

  /** True once the connection has been ready (Redis reached), whatever happened since. */
  get everReady(): boolean {
    return this.#everReady;
  }

  /** True while the connection is down for a {@link DOWN_CODES} reason (calls reject at once). */
  get knownDown(): boolean {
    return this.#downCode !== undefined;
  }

  /** Redis time limits on the clock (p-timeout with the clock's timers). */
  #bounded<T>(what: string, promise: Promise<T>): Promise<T> {
    const ms = this.#init.commandTimeoutMs;
    return pTimeout(promise, {
      milliseconds: ms,
      customTimers: pTimeoutTimers(this.#init.clock),
      fallback: () => {
        throw new RedisLedgerError(`Redis ledger: ${what} got no answer within ${ms} ms`);
      },
    });
  }

  /**
   * Resolve once the command connection is ready, or reject: at once while the connection is down
   * for a {@link DOWN_CODES} reason (or when one arrives during the wait), else after
   * `commandTimeoutMs` (saying the last error ioredis reported). Every call made while connecting
   * shares one `ready` listener.
   */
  #ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new RedisLedgerError('Redis ledger: closed'));
    if (this.#client.status === 'ready') return Promise.resolve();
    if (this.#client.status === 'end') return Promise.reject(new RedisLedgerError('Redis ledger: the connection is closed'));
    // At once, but after a turn of the event loop: a caller retrying in a loop must not starve the
    // reconnect (an already-rejected promise would keep it in microtasks).
    if (this.#downCode !== undefined) return new Promise((_resolve, reject) => setImmediate(() => reject(this.#downError())));
    if (this.#readyWait === undefined) {
      let reject!: (e: Error) => void;
      const promise = new Promise<void>((resolve, rej) => {
        reject = rej;
        this.#client.once('ready', () => {
          if (this.#readyWait?.promise === promise) this.#readyWait = undefined;
          resolve();
        });
      });
      promise.catch(() => undefined);
      this.#readyWait = { promise, reject };
    }
    const ms = this.#init.commandTimeoutMs;
    return pTimeout(this.#readyWait.promise, {
      milliseconds: ms,
      customTimers: pTimeoutTimers(this.#init.clock),
      fallback: () => {
        const last = this.#lastError === undefined ? '' : ` (last error: ${this.#lastError})`;
        throw new RedisLedgerError(`Redis ledger: waiting for the connection got no answer within ${ms} ms${last}`, { downCode: downCode(this.#lastError) });
      },
    });
  }

  #took(ms: number): void {
    this.#rtt.sample(ms);
    const rto = this.#rtt.rtoMs()!;
    if (!this.#slowWarned && this.#rtt.samples >= 3 && rto > this.#init.commandTimeoutMs / 4) {
      this.#slowWarned = true;
      this.#init.logger.warn(
        { rtoMs: Math.round(rto), srttMs: Math.round(this.#rtt.srttMs!), commandTimeoutMs: this.#init.commandTimeoutMs },
        'Redis ledger: the measured round trip to Redis is above a quarter of commandTimeoutMs: a healthy but far Redis may time out; raise commandTimeoutMs',
      );
    }
  }

  /** Send one command (after the connection is ready), bounded and timed. */
  async #send(what: string, send: () => Promise<unknown>, raw: boolean): Promise<unknown> {
    try {
      await this.#ready();
      if (!raw && this.#reasserting !== undefined) await this.#bounded('writing back the held claims', this.#reasserting);
      const started = this.#init.clock.now();
      const answer = await this.#bounded(what, send());
      this.#took(this.#init.clock.now() - started);
      return answer;
    } catch (error) {
      if (error instanceof RedisLedgerError) throw error;
      const message = this.redact(error instanceof Error ? error.message : String(error));
      throw new RedisLedgerError(`Redis ledger: ${what} failed: ${message}`, { cause: new Error(message), downCode: downCode(error) });
    }
  }

  /**
   * Run a script command: the wait for a connection, for the write-back after a reconnect and for
   * the answer are each bounded by `commandTimeoutMs`.
   * @param raw - Skip the wait for the write-back after a reconnect (the write-back itself).
   * @throws {@link RedisLedgerError} when Redis does not answer in time or answers with an error;
   * with `ledgerDown: true` at once while Redis cannot be reached at all (see {@link DOWN_CODES}).
   */
  run(name: LedgerCommand, args: ReadonlyArray<string | number>, { raw = false } = {}): Promise<unknown> {
    const fn = (this.#client as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[name]!;
    return this.#send(name, () => fn.apply(this.#client, [...args]), raw);
  }

  /** Define one more script command on the command connection (`numberOfKeys` keys), as the ledger's own. */
  define(name: string, lua: string, numberOfKeys: number): void {
    if (!(name in this.#client)) this.#client.defineCommand(name, { lua, numberOfKeys });
  }

  /**
   * Send any command through `fn` (a script defined with {@link RedisConnection.define}, `XREAD`...),
   * bounded and timed as {@link RedisConnection.run}.
   * @throws {@link RedisLedgerError} as {@link RedisConnection.run}.
   */
  command<T>(what: string, fn: (client: Redis) => Promise<T>): Promise<T> {
    return this.#send(what, () => fn(this.#client), true) as Promise<T>;
  }

  /**
   * `PING`, bounded by `commandTimeoutMs` (and timed, like every command).
   * @throws {@link RedisLedgerError} as {@link RedisConnection.run}.
   */
  async ping(): Promise<void> {
    await this.#send('PING', () => this.#client.ping(), true);
  }

  /** Close the pub/sub connection, and the command connection if the ledger opened it (always, whatever fails on the way). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const quit = async (r: Redis): Promise<void> => {
      try {
        if (r.status === 'ready') await this.#bounded('QUIT', r.quit());
      } catch {
        // Closed below.
      } finally {
        r.disconnect();
      }
    };
    try {
      for (const [event, fn] of this.#listeners) this.#client.off(event, fn as (...args: unknown[]) => void);
    } finally {
      await Promise.all([quit(this.#sub), this.#own ? quit(this.#client) : Promise.resolve()]);
    }
  }

  /** True once {@link RedisConnection.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }
}
