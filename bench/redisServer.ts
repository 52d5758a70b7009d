/**
 * The bench's Redis: `$NOVA_GUARD_REDIS_URL` when set, else a throw-away `redis-server` child on a
 * free loopback port (no persistence), or none when `redis-server` is not installed
 * (`scripts/redis/start.sh` installs it). The tests' redis-server (`test/redis/support.ts`) starts
 * its children with {@link freePort} and {@link spawnRedis} too.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** The redis-server binary: `$REDIS_SERVER`, default `/usr/bin/redis-server`. */
export const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

/** A Redis for the bench, and how to stop it. */
export interface BenchRedis {
  url: string;
  stop: () => void;
  /** Its port on 127.0.0.1 and how to restart it (empty): only for the bench's own redis-server child. */
  local?: { port: number; restart: () => Promise<void> };
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a Redis answers on `port` (`+PONG`, or `-NOAUTH` from one that wants a password). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.write('PING\r\n');
      sock.once('data', (d) => {
        sock.destroy();
        resolve(/^(\+PONG|-NOAUTH)/.test(d.toString()));
      });
    });
    sock.once('error', () => resolve(false));
  });
}

/**
 * Start a redis-server child on 127.0.0.1:`port` (no persistence); resolves once it answers PING.
 * @param extraArgs - More `redis-server` arguments, e.g. `['--requirepass', 'pw']`.
 * @throws when the child exits first, or does not answer within 10 s.
 */
export async function spawnRedis(port: number, extraArgs: readonly string[] = []): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER, ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '', ...extraArgs], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    if (await answers(port)) return child;
    await sleep(20);
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not answer within 10 s');
}

/** `undefined` when there is no Redis to use. */
export async function benchRedis(): Promise<BenchRedis | undefined> {
  const given = process.env.NOVA_GUARD_REDIS_URL;
  if (given) return { url: given, stop: () => undefined };
  if (!existsSync(REDIS_SERVER)) return undefined;
  const port = await freePort();
  let child = await spawnRedis(port);
  const restart = async (): Promise<void> => {
    const old = child;
    await new Promise<void>((resolve) => {
      if (old.exitCode !== null || old.signalCode !== null) resolve();
      else {
        old.once('exit', () => resolve());
        old.kill('SIGKILL');
      }
    });
    child = await spawnRedis(port);
  };
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL'), local: { port, restart } };
}
