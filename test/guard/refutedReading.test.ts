/**
 * A quota 403 refutes the kept `/limits` reading the create was admitted on: the call's next
 * admission is decided on a reading sent after it (`AcquireRequest.refutedStamp`), not on the same
 * kept reading again until it ages out (`limitsMaxAgeMs`, 10 s by default). A server created outside
 * the fleet after the kept reading was read (another tool) is the change the ledger cannot see.
 * FakeNova, a real SQLite file, the real clock, millisecond options.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';

describe('a quota 403 refutes the kept reading for the call', () => {
  it('after a quota 403 on a kept reading (default limitsMaxAgeMs), the retry reads GET /limits again: one 403, not one per attempt', async () => {
    const nova = await startNova({ maxTotalCores: 6 });
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-refuted-'));
    afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
    const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: dir, holder: 'b' });
    const guard = guardFor(nova, { ledger, maxWaitMs: 20_000 }, clientFor(nova));
    afterThisTest(async () => {
      await guard.close();
      await ledger.close();
    });
    await guard.createServer(body('s1'));
    // another tool creates a server: the kept reading (0 of 6 used, s1 counted since) misses it
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    await guard.createServer(body('s2'));
    expect(nova.usage().cores).toBe(6);
    // the quota is full: Nova refuses s3 once; the retry must not be admitted on the same reading again
    await expect(guard.createServer(body('s3'), { signal: AbortSignal.timeout(1500) })).rejects.toThrow();
    expect(nova.quotaRecord().quota403s, 'one quota 403, then a fresh GET /limits shows the quota full').toBe(1);
    const order = nova.requests.filter((r) => r.path === '/limits' || (r.method === 'POST' && r.path === '/servers')).map((r) => `${r.method} ${r.path}`);
    // after the refused POST (the last), the call read /limits again
    const lastPost = order.lastIndexOf('POST /servers');
    expect(order.slice(lastPost + 1)).toContain('GET /limits');
  });
});
