/**
 * A real redis-server for one test file: started on a free loopback port, no persistence, killed
 * after the file (and restartable, empty, on the same port). Files skip fast with a clear message
 * when `/usr/bin/redis-server` is missing (`scripts/redis/start.sh` installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';
/** True when the tests can run; otherwise the reason they skip. */
export const haveRedis = existsSync(REDIS_SERVER);
export const skipReason = `redis-server not found at ${REDIS_SERVER}: test/redis skipped (scripts/redis/start.sh installs it)`;
if (!haveRedis) console.warn(skipReason);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.write('PING\r\n');
      sock.once('data', (d) => {
        sock.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
    });
    sock.once('error', () => resolve(false));
  });
}

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
    const child = spawn(REDIS_SERVER, ['--bind', '127.0.0.1', '--port', String(this.port), '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', ''], { stdio: 'ignore' });
    this.#child = child;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      if (await answers(this.port)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('redis-server did not answer within 10 s');
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
