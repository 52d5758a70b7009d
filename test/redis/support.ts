/**
 * A real redis-server for one test file: started on a free loopback port, no persistence, killed
 * after the file (and restartable, empty, on the same port). Files skip fast with a clear message
 * when `/usr/bin/redis-server` is missing (`scripts/redis/start.sh` installs it).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { REDIS_SERVER, freePort, spawnRedis } from '../../bench/redisServer.js';

export { REDIS_SERVER };
/** True when the tests can run; otherwise the reason they skip. */
export const haveRedis = existsSync(REDIS_SERVER);
export const skipReason = `redis-server not found at ${REDIS_SERVER}: test/redis skipped (scripts/redis/start.sh installs it)`;
if (!haveRedis) console.warn(skipReason);

/** One redis-server child. */
export class RedisServer {
  #child: ChildProcess | undefined;
  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.restart();
    return server;
  }

  /** Start (again, empty) on the same port; resolves once it answers PING. */
  async restart(): Promise<void> {
    await this.kill();
    this.#child = await spawnRedis(this.port);
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
