/**
 * A real redis-server for one test file: started on a free loopback port, no persistence, killed
 * after the file (and restartable, empty, on the same port). Files skip fast with a clear message
 * when `/usr/bin/redis-server` is missing (`scripts/redis/start.sh` installs it).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { REDIS_SERVER, freePort, spawnRedis } from '../../bench/redisServer.js';

export { REDIS_SERVER };
/** True when the tests can run; otherwise the reason they skip. */
export const haveRedis = existsSync(REDIS_SERVER);
export const skipReason = `redis-server not found at ${REDIS_SERVER}: test/redis skipped (scripts/redis/start.sh installs it)`;
if (!haveRedis) console.warn(skipReason);

/** One redis-server child. */
export class RedisServer {
  #child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    private readonly args: readonly string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** @param args - More `redis-server` arguments, e.g. `['--requirepass', 'pw']`. */
  static async start(args: readonly string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), args);
    await server.restart();
    return server;
  }

  /** Start (again, empty) on the same port; resolves once it answers PING. */
  async restart(): Promise<void> {
    await this.kill();
    this.#child = await spawnRedis(this.port, this.args);
  }

  /**
   * Restart keeping the data, with the new server's clock `behindMs` behind the old one's (a failover
   * to a replica, or a restart on another host, whose clock is behind), emulated: libfaketime does not
   * take with this redis-server (its `TIME` stays the real one), so instead every time stamp kept in
   * the data (epoch ms within a day of Redis's `TIME`: sorted-set scores, hash and string values,
   * numbers inside JSON values) is written back `behindMs` in the future. Key TTLs are kept. Makes no
   * assumption about the ledger's key layout.
   *
   * @returns how many time stamps were moved.
   */
  async restartWithClockBehind(behindMs: number): Promise<number> {
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    const [sec, usec] = await r.time();
    const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    let moved = 0;
    const shift = (x: number): number => {
      if (Number.isFinite(x) && Math.abs(x - nowMs) < 86_400_000) {
        moved++;
        return x + behindMs;
      }
      return x;
    };
    const shiftText = (v: string): string => {
      if (/^-?\d+(\.\d+)?$/.test(v)) return String(shift(Number(v)));
      if (!v.startsWith('{') && !v.startsWith('[')) return v;
      try {
        return JSON.stringify(JSON.parse(v), (_k, x: unknown) => (typeof x === 'number' ? shift(x) : x));
      } catch {
        return v;
      }
    };
    type Kept = { key: string; pttl: number; write: (c: Redis) => Promise<unknown> };
    const kept: Kept[] = [];
    for (const key of await r.keys('*')) {
      const pttl = await r.pttl(key);
      const type = await r.type(key);
      if (type === 'string') {
        const v = shiftText((await r.get(key)) ?? '');
        kept.push({ key, pttl, write: (c) => c.set(key, v) });
      } else if (type === 'hash') {
        const h = Object.entries(await r.hgetall(key)).flatMap(([f, v]) => [f, shiftText(v)]);
        kept.push({ key, pttl, write: (c) => c.hset(key, ...h) });
      } else if (type === 'zset') {
        const z = await r.zrange(key, 0, -1, 'WITHSCORES');
        const args: Array<string | number> = [];
        for (let i = 0; i < z.length; i += 2) args.push(shift(Number(z[i + 1])), z[i]!);
        kept.push({ key, pttl, write: (c) => c.zadd(key, ...args) });
      } else if (type === 'set') {
        const m = await r.smembers(key);
        kept.push({ key, pttl, write: (c) => c.sadd(key, ...m) });
      } else if (type === 'list') {
        const l = await r.lrange(key, 0, -1);
        kept.push({ key, pttl, write: (c) => c.rpush(key, ...l) });
      }
    }
    r.disconnect();
    await this.restart();
    const w = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await w.connect();
    for (const k of kept) {
      await k.write(w);
      if (k.pttl > 0) await w.pexpire(k.key, k.pttl);
    }
    w.disconnect();
    return moved;
  }

  /** SIGSTOP the server: connections stay open, nothing answers (a hung Redis). */
  pause(): void {
    this.#child?.kill('SIGSTOP');
  }

  /** SIGCONT a paused server. */
  resume(): void {
    this.#child?.kill('SIGCONT');
  }

  /** SIGKILL the server (no-op when not running). */
  async kill(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}

/** Wait on the real clock until `ok()` holds or `ms` passed, looking every 10 ms; true when it held. */
export async function until(ok: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

/**
 * A redis-server for the test file calling this (inside its `describe`): started before the file's
 * tests, killed after them. The object answers as that server (`url`, `port`, `restart()`, `kill()`);
 * read it inside tests and hooks, not while the file is collected.
 */
export function useRedisServer(args: readonly string[] = []): RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await RedisServer.start(args);
  });
  afterAll(async () => {
    await server?.kill();
  });
  return new Proxy({} as RedisServer, {
    get(_target, key) {
      if (server === undefined) throw new Error('useRedisServer: the server starts in beforeAll; read it inside a test or hook');
      const value: unknown = Reflect.get(server, key, server);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(server) : value;
    },
  });
}
