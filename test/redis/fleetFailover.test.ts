/**
 * Failover of the fleet watcher between processes, on a real redis-server: the watching host is a
 * child process (`fleetWatcherHost.mjs`, the built package) that the test stops with SIGSTOP or
 * kills with SIGKILL; a host in this process takes over within the lease's TTL, and a host that
 * consumes keeps getting its deletes answered. A stopped watcher that wakes up publishes nothing
 * (its lease is another's: fencing at the store) and no consumer takes anything from an old epoch.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { ensureBuilt } from './fleetSupport.js';
import { haveRedis, RedisServer, skipReason, until } from './support.js';

const TTL = 900;
const HOST = fileURLToPath(new URL('./fleetWatcherHost.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!haveRedis)(`fleet watcher failover between processes${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    ensureBuilt();
    server = await RedisServer.start();
  }, 180_000);
  afterEach(() => {
    for (const c of children.splice(0)) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  });
  afterAll(async () => {
    await server?.kill();
  });

  /** A child host; resolves once it watches for the fleet (it starts first, so it is elected). */
  async function childWatcher(nova: FakeNova): Promise<{ child: ChildProcess; epoch: number }> {
    const child = fork(HOST, [JSON.stringify({ endpoint: nova.endpoint, projectId: nova.projectId, redisUrl: server.url, holder: 'child', ttlMs: TTL })], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    const epoch = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { epoch: number }).epoch));
      child.once('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal})`)));
    });
    return { child, epoch };
  }

  async function host(nova: FakeNova, name: string): Promise<{ client: NovaClient; ledger: RedisQuotaLedger; sent: string[] }> {
    const sent: string[] = [];
    const client = new NovaClient({
      endpoint: nova.endpoint,
      token: `admin:${nova.projectId}`,
      microversion: '2.79',
      adapter: (config) => (sent.push(`${(config.method ?? 'get').toUpperCase()} ${new URL(config.url ?? '', config.baseURL).pathname.replace(/^\/v2\.1/, '')}`), nova.adapter(config)),
      maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    });
    const ledger = await RedisQuotaLedger.forClient(client, { url: server.url, holder: name, fleetWatcher: true, fleetLeaseTtlMs: TTL });
    afterThisTest(() => ledger.close());
    return { client, ledger, sent };
  }

  for (const signal of ['SIGSTOP', 'SIGKILL'] as const) {
    it(`the watching process gets ${signal}: a host here takes over within the lease TTL, and a consumer's delete is answered by the new watcher alone`, async () => {
      const nova = await startNova({ deleteDelayMs: 200 });
      const { child, epoch } = await childWatcher(nova);
      const [a, b] = [await host(nova, 'a'), await host(nova, 'b')];
      expect(await until(() => a.ledger.fleetWatcher!.consuming && b.ledger.fleetWatcher!.consuming, 10 * TTL)).toBe(true);
      child.kill(signal);
      const stoppedAt = Date.now();
      expect(await until(() => a.ledger.fleetWatcher!.watching || b.ledger.fleetWatcher!.watching, 5 * TTL)).toBe(true);
      const tookMs = Date.now() - stoppedAt;
      console.log(`fleet watcher ${signal}: replaced after ${tookMs} ms (lease TTL ${TTL} ms)`);
      // Within the TTL, with a margin for a busy machine's timers.
      expect(tookMs).toBeLessThan(TTL + 500);
      const [next, consumer] = a.ledger.fleetWatcher!.watching ? [a, b] : [b, a];
      expect(next.ledger.fleetWatcher!.epoch).toBeGreaterThan(epoch);
      expect(await until(() => consumer.ledger.fleetWatcher!.consuming, 10 * TTL)).toBe(true);
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      consumer.sent.length = 0;
      const fallbacks = consumer.ledger.fleetWatcher!.stats.fallbacks;
      if (signal === 'SIGSTOP') child.kill('SIGCONT'); // awake again, its lease another's
      expect((await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
      // Only its DELETE, unless this busy process's event loop stalled past the TTL meanwhile (a
      // fallback, counted: then its own looks are right).
      if (consumer.ledger.fleetWatcher!.stats.fallbacks === fallbacks) expect(consumer.sent).toEqual([`DELETE /servers/${id}`]);
      await sleep(TTL);
      expect(consumer.ledger.fleetWatcher!.stats.staleEpoch).toBe(0);
      expect(next.ledger.fleetWatcher!.watching).toBe(true);
      expect(consumer.ledger.fleetWatcher!.stats.fallbacks).toBeLessThanOrEqual(2);
    }, 60_000);
  }
});
