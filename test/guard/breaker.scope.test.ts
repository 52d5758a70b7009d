/**
 * Hostile-user attacks on the guard's first step (binding the ledger to the client's scope): one
 * caller's abort must not fail the other callers that share the binding. Real clock, real FakeNova
 * and FakeKeystone (whose answers a slow network delays), a real SQLite ledger file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AxiosAdapter } from 'axios';
import { describe, expect, it } from 'vitest';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { AbortError } from '../../src/errors/index.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { NovaClient } from '../../src/nova/client.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { FakeKeystone, FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { FAST, body } from './fixtures.js';

/** `adapter`, each answer `ms` late (an abort of the request still ends it at once). */
function slow(adapter: AxiosAdapter, ms: number): AxiosAdapter {
  return (config) =>
    new Promise((resolve, reject) => {
      const signal = config.signal as AbortSignal | undefined;
      const t = setTimeout(() => adapter(config).then(resolve, reject), ms);
      signal?.addEventListener?.('abort', () => {
        clearTimeout(t);
        reject(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED', name: 'CanceledError' }));
      });
    });
}

describe('the scope binding is shared by the callers of one guard', () => {
  it("one caller's abort while the catalog is fetched fails that caller only: the other caller's create succeeds", async () => {
    const ref: { keystone?: FakeKeystone } = {};
    const nova = await FakeNova.start({ validateToken: (t) => ref.keystone!.isValid(t), maxTotalCores: 8 });
    afterThisTest(() => nova.close());
    const keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, projects: [{ id: nova.projectId, name: 'ci' }] });
    afterThisTest(() => keystone.stop());
    ref.keystone = keystone;
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-breaker-'));
    afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
    const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: join(dir, 'ledger.db') });
    afterThisTest(() => ledger.close());
    const client = new NovaClient({
      auth: new KeystoneAuth({ authUrl: keystone.url, username: 'ci-bot', password: 'ci-bot-password', userDomainName: 'Default', projectName: 'ci', projectDomainName: 'Default', adapter: slow(keystone.adapter, 300) }),
      microversion: '2.79',
      adapter: nova.adapter,
      retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 },
    });
    const guard = new QuotaGuard(client, { ...FAST, ledger });
    afterThisTest(() => guard.close());
    const a = new AbortController();
    const first = guard.createServer(body('a', '1'), { signal: a.signal });
    const second = guard.createServer(body('b', '1'));
    setTimeout(() => a.abort(), 50);
    const [ra, rb] = await Promise.allSettled([first, second]);
    expect(ra.status).toBe('rejected');
    expect((ra as PromiseRejectedResult).reason).toBeInstanceOf(AbortError);
    expect(rb.status === 'rejected' ? String(rb.reason) : 'fulfilled').toBe('fulfilled');
    expect((rb as PromiseFulfilledResult<{ status?: string }>).value.status).toBe('ACTIVE');
  }, 15000);
});
