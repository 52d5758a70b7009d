// openLedger: a quota ledger from a URL (redis:// here; undefined for none; any other URL refused
// before any connection). The Redis case runs a real redis-server and a guarded create through it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLedger } from '../../src/ledgers/index.js';
import { InProcessQuotaLedger, QuotaGuard, ValidationError } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';
import { RedisServer, haveRedis } from '../redis/support.js';

describe('openLedger', () => {
  it('undefined or empty: no ledger; a QuotaLedger object is returned as it is', async () => {
    expect(await openLedger(undefined)).toBeUndefined();
    expect(await openLedger('')).toBeUndefined();
    const own = new InProcessQuotaLedger();
    expect(await openLedger(own)).toBe(own);
  });

  it('an unsupported URL is a ValidationError naming it, its password redacted', async () => {
    await expect(openLedger('ftp://host/x')).rejects.toThrow(ValidationError);
    const e = (await openLedger('memcached://user:hunter2@host:11211').catch((x: unknown) => x)) as Error;
    expect(e.message).toMatch(/^unsupported ledger URL/);
    expect(e.message).not.toContain('hunter2');
  });

  describe.skipIf(!haveRedis)('redis://', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await RedisServer.start();
    });
    afterAll(async () => {
      await redis?.kill();
    });

    it('a redis:// ledger takes its endpoint and project from the guard that binds it, and guards a create', async () => {
      const nova = await startNova({ buildDelayMs: 10 });
      const ledger = await openLedger(redis.url);
      expect(ledger?.kind).toBe('redis');
      const guard = new QuotaGuard(clientFor(nova), { ledger, activeIntervalMs: 20 });
      try {
        const server = await guard.createServer({ name: 'r', flavorRef: '1', imageRef: 'img', networks: 'none' });
        expect(server.status).toBe('ACTIVE');
        expect(ledger?.scope?.projectId).toBe(nova.projectId);
      } finally {
        await guard.close();
        await ledger?.close();
      }
    });
  });
});
