/**
 * QuotaGuard on a RedisQuotaLedger: the deletion of a server the guard created, confirmed by Nova's
 * 404, is credited to the kept `/limits` reading when that reading was sent after the server's claim
 * was released as `'counted'` and kept before its DELETE was sent; the next create is admitted on it
 * with no `GET /limits`. A deletion of a server the guard did not create makes the reading stale (a
 * read), as before. FakeNova, real redis-server, real clock with generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor, startNova } from '../guard/fixtures.js';
import { haveRedis, skipReason, useRedisServer } from './support.js';

const limitsReads = (nova: FakeNova): number => nova.requestsTo('GET', '/limits').length;

describe.skipIf(!haveRedis)(`QuotaGuard on Redis: the credit of its own deletions${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  it('a create after the confirmed deletion of a server the guard created reads no /limits; after a server it did not create, it does', async () => {
    // 4 cores; flavor '2' needs 2.
    const nova = await startNova({ maxTotalCores: 4 });
    const ledger = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, holder: 'guard-host', limitsMaxAgeMs: 60_000 });
    afterThisTest(() => ledger.close());
    const client = clientFor(nova);
    const guard = guardFor(nova, { ledger }, client);
    afterThisTest(() => guard.close());
    /** Until the guard released every claim (as `'counted'`: Nova counts its servers). */
    const counted = async (): Promise<void> => {
      const end = Date.now() + 10_000;
      while ((await ledger.liveClaimIds()).length > 0) {
        if (Date.now() > end) throw new Error('claims still live after 10 s');
        await new Promise((r) => setTimeout(r, 10));
      }
    };

    const other = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const s1 = await guard.createServer(body('s1'));
    await counted();
    expect(limitsReads(nova)).toBe(1);
    // Not the guard's server: its deletion makes the kept reading stale.
    await client.deleteServer(other, { wait: true, intervalMs: 5 });
    const s2 = await guard.createServer(body('s2'));
    await counted();
    // Read afresh, after s1's claim was released as 'counted': this reading counts s1.
    expect(limitsReads(nova)).toBe(2);
    const kept = ledger.keptSeen();
    expect(kept).toBeDefined();

    await client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    const s3 = await guard.createServer(body('s3'));
    // Admitted on the kept reading less s1: no read.
    expect(limitsReads(nova)).toBe(2);
    expect(ledger.keptSeen()).toBe(kept);
    expect(nova.getServerState(s3.id)?.name).toBe('s3');
    expect(nova.requestsTo('POST', '/servers').filter((r) => r.status === 403)).toHaveLength(0);
    void s2;
  });
});
