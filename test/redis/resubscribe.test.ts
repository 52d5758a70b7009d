/**
 * A ledger closed while its pub/sub connection is subscribing again after a reconnect leaves no
 * unhandled rejection (ioredis's own resubscribe leaves its promise unhandled: a close before Redis
 * answers it rejected with "Connection is closed" and no handler, which ends a Node process).
 * Real `redis-server` behind a latency proxy: the reconnect's ready check and SUBSCRIBE each take
 * a 2 s round trip; the link is cut while the SUBSCRIBE waits for its answer, and the ledger closes
 * while it reconnects.
 */
import { describe, expect, it } from 'vitest';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { startLatencyProxy } from '../../bench/latencyProxy.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(ok: () => boolean, ms: number): Promise<void> {
  const started = Date.now();
  while (!ok() && Date.now() - started < ms) await sleep(20);
}

describe.skipIf(!haveRedis)(`Redis ledger pub/sub reconnect${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it('after a reconnect the ledger hears "quota freed" again (it subscribes on every ready)', async () => {
    const proxy = await startLatencyProxy(server.port, 0);
    const scope = { endpoint: 'http://nova.example:8774/v2.1', projectId: 'resub-heard' };
    const a = new RedisQuotaLedger({ url: proxy.url, ...scope, commandTimeoutMs: 2000 });
    const b = new RedisQuotaLedger({ url: server.url, ...scope, commandTimeoutMs: 2000 });
    try {
      let heard = 0;
      a.onFreed(() => void heard++);
      await a.publishFreed('s-0');
      await b.publishFreed('s-1');
      await until(() => heard === 1, 5000);
      proxy.partition();
      await sleep(200);
      proxy.heal();
      // b publishes until a hears it: a's subscriber is back.
      const started = Date.now();
      while (heard < 2 && Date.now() - started < 15_000) {
        await b.publishFreed('s-2');
        await sleep(200);
      }
      expect(heard).toBeGreaterThanOrEqual(2);
    } finally {
      await a.close();
      await b.close();
      await proxy.close();
    }
  });

  it('close() while the subscriber subscribes again after a reconnect: no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const proxy = await startLatencyProxy(server.port, 0);
    const l = new RedisQuotaLedger({ url: proxy.url, endpoint: 'http://nova.example:8774/v2.1', projectId: 'resub', commandTimeoutMs: 10_000 });
    try {
      await l.publishFreed('s-0'); // connected, subscribed
      await sleep(200);
      proxy.setRttMs(2000);
      proxy.partition();
      await sleep(100);
      proxy.heal();
      // ioredis reconnects within a few hundred ms; its ready check answers about 2 s later, and the
      // SUBSCRIBE it then sends about 2 s after that. Cut it off in between (the SUBSCRIBE is kept
      // to be sent again), then close while it reconnects: the kept SUBSCRIBE is flushed.
      await sleep(3000);
      proxy.partition();
      await sleep(50);
      await l.close();
      await sleep(2500);
      expect(unhandled.map(String)).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await l.close();
      await proxy.close();
    }
  });
});
