/**
 * The Redis side of the ledger: the command connection (with the Lua scripts defined on it), the
 * pub/sub connection, time limits on every call, redaction of the URL's password, and the
 * "connected again" hook that lets the ledger write back what it holds.
 *
 * ioredis reconnects by itself (its `retryStrategy`). While the connection is down a call waits
 * at most `commandTimeoutMs` for it to come back and then rejects with {@link RedisLedgerError}:
 * the ledger's own connection has `enableOfflineQueue: false`, so nothing piles up behind a dead
 * Redis and the guard's fallback can take over at once.
 *
 * @module
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import pTimeout from 'p-timeout';
import type { Clock, Logger } from '../core/index.js';
import { ConfigError } from '../errors/index.js';
import { pTimeoutTimers } from '../core/clock.js';
import { redactSecrets, redactUrlSecrets } from '../core/redact.js';
import { RedisLedgerError } from './errors.js';
import * as lua from './scripts.js';

/** The install command named when the optional peer dependency ioredis is missing. */
export const IOREDIS_INSTALL = 'npm install ioredis@^5';

/**
 * What a failed load of `ioredis` becomes: when the module itself is not installed
 * (`MODULE_NOT_FOUND` / `ERR_MODULE_NOT_FOUND` naming `ioredis`), a {@link ConfigError} naming the
 * optional peer dependency and how to install it; any other error (one of ioredis's own
 * dependencies missing, a syntax error) is returned as it is.
 */
export function ioredisLoadError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && /['"]ioredis['"]/.test(message)) {
    return new ConfigError(`nova-guard/redis needs the optional peer dependency ioredis (5.x), which is not installed: ${IOREDIS_INSTALL}`, { cause: error });
  }
  return error;
}

/**
 * The ioredis `Redis` class, loaded on first use (so that `nova-guard/redis` can be imported, and a
 * ledger built on a caller's own client, without a top-level import of the optional peer).
 * @param load - How to load the module. @default `createRequire(import.meta.url)('ioredis')`
 * @throws {@link ConfigError} when ioredis is not installed (see {@link ioredisLoadError}).
 */
export function loadIoredis(load: () => unknown = () => createRequire(import.meta.url)('ioredis')): typeof Redis {
  try {
    return (load() as { Redis: typeof Redis }).Redis;
  } catch (error) {
    throw ioredisLoadError(error);
  }
}

/** The scripts, by the command name they get on the client, and how many keys each takes. */
const COMMANDS = {
  novaGuardAdmit: [lua.ADMIT, 9],
  novaGuardClaimAnyway: [lua.CLAIM_ANYWAY, 9],
  novaGuardRenew: [lua.RENEW, 9],
  novaGuardBind: [lua.BIND, 9],
  novaGuardRelease: [lua.RELEASE, 9],
  novaGuardJoin: [lua.JOIN, 9],
  novaGuardLeave: [lua.LEAVE, 9],
  novaGuardAssert: [lua.ASSERT, 9],
  novaGuardInFlight: [lua.IN_FLIGHT, 9],
  novaGuardLiveClaims: [lua.LIVE_CLAIMS, 9],
  novaGuardLimitsBegin: [lua.LIMITS_BEGIN, 2],
  novaGuardLimitsStore: [lua.LIMITS_STORE, 2],
  novaGuardLimitsUnlock: [lua.LIMITS_UNLOCK, 1],
  novaGuardFreed: [lua.FREED, 1],
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

/** Two ioredis connections (commands, pub/sub) with time limits and redaction. */
export class RedisConnection {
  readonly #client: Redis;
  readonly #sub: Redis;
  readonly #own: boolean;
  readonly #init: ConnectionInit;
  #reasserting: Promise<void> | undefined;
  /** One wait for `ready`, shared by every call made while connecting (one listener, however many calls). */
  #readyWait: Promise<void> | undefined;
  /** The last error ioredis reported (redacted): said when a wait for the connection runs out. */
  #lastError: string | undefined;
  #down = false;
  #closed = false;
  readonly #listeners: Array<[string, (...args: never[]) => void]> = [];

  constructor(init: ConnectionInit) {
    this.#init = init;
    this.#own = init.redis === undefined;
    const timeouts = { enableOfflineQueue: false, commandTimeout: init.commandTimeoutMs, maxRetriesPerRequest: 0 };
    this.#client = init.redis ?? new (loadIoredis())(init.url!, timeouts);
    for (const [name, [lua, numberOfKeys]] of Object.entries(COMMANDS)) this.#client.defineCommand(name, { lua, numberOfKeys });
    // The subscriber queues its SUBSCRIBE until connected and subscribes again after a reconnect.
    this.#sub = this.#client.duplicate({ enableOfflineQueue: true, autoResubscribe: true, commandTimeout: undefined, maxRetriesPerRequest: null });
    let first = this.#client.status === 'ready';
    this.#on(this.#client, 'ready', () => {
      if (this.#down) init.logger.info('Redis ledger: connected again');
      this.#down = false;
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
    this.#sub.subscribe(...init.channels).catch((error: unknown) => {
      if (!this.#closed) init.logger.warn({ err: this.redact(String(error)) }, 'Redis ledger: could not subscribe');
    });
  }

  #on(emitter: Redis, event: string, fn: (...args: never[]) => void): void {
    emitter.on(event, fn as (...args: unknown[]) => void);
    this.#listeners.push([event, fn]);
  }

  #lost(error: Error | undefined): void {
    // Redis's own words (WRONGPASS, NOAUTH, ECONNREFUSED...) hold no secret; redacted all the same.
    if (error !== undefined) this.#lastError = this.redact(error.message);
    if (this.#down || this.#closed) return;
    this.#down = true;
    this.#init.logger.warn({ err: error === undefined ? undefined : this.redact(error.message) }, 'Redis ledger: connection lost (ioredis reconnects)');
  }

  /** `text` without the URL's password or user info. */
  redact(text: string): string {
    return redactSecrets(redactUrlSecrets(text), this.#init.password === undefined ? [] : [this.#init.password]);
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
   * Resolve once the command connection is ready, or reject after `commandTimeoutMs` (saying the
   * last error ioredis reported, e.g. Redis's `WRONGPASS` for a wrong password). Every call made
   * while connecting shares one `ready` listener.
   */
  #ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new RedisLedgerError('Redis ledger: closed'));
    if (this.#client.status === 'ready') return Promise.resolve();
    if (this.#client.status === 'end') return Promise.reject(new RedisLedgerError('Redis ledger: the connection is closed'));
    this.#readyWait ??= new Promise<void>((resolve) => {
      this.#client.once('ready', () => {
        this.#readyWait = undefined;
        resolve();
      });
    });
    const ms = this.#init.commandTimeoutMs;
    return pTimeout(this.#readyWait, {
      milliseconds: ms,
      customTimers: pTimeoutTimers(this.#init.clock),
      fallback: () => {
        const last = this.#lastError === undefined ? '' : ` (last error: ${this.#lastError})`;
        throw new RedisLedgerError(`Redis ledger: waiting for the connection got no answer within ${ms} ms${last}`);
      },
    });
  }

  /**
   * Run a script command: the wait for a connection, for the write-back after a reconnect and for
   * the answer are each bounded by `commandTimeoutMs`.
   * @param raw - Skip the wait for the write-back after a reconnect (the write-back itself).
   * @throws {@link RedisLedgerError} when Redis does not answer in time or answers with an error.
   */
  async run(name: LedgerCommand, args: ReadonlyArray<string | number>, { raw = false } = {}): Promise<unknown> {
    try {
      await this.#ready();
      if (!raw && this.#reasserting !== undefined) await this.#bounded('writing back the held claims', this.#reasserting);
      const fn = (this.#client as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[name]!;
      return await this.#bounded(name, fn.apply(this.#client, [...args]));
    } catch (error) {
      if (error instanceof RedisLedgerError) throw error;
      const message = this.redact(error instanceof Error ? error.message : String(error));
      throw new RedisLedgerError(`Redis ledger: ${name} failed: ${message}`, { cause: new Error(message) });
    }
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
}
