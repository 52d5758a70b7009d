/**
 * Wall-clock steps against the SQLite ledger (issue 29 item 4): leases in the file are on the
 * host's monotonic clock, so a step of the wall clock (NTP, `date -s`, a resumed VM) either way
 * ends no lease and lengthens none. Two guards, each with its own SqliteQuotaLedger on one real
 * file (the file is all they share, as two processes of a host), FakeNova in-process, real timers;
 * the test steps the clocks' `wallNow()` by hours while `now()` (monotonic) runs on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/core/index.js';
import { QuotaWaitTimeoutError } from '../../src/guard/index.js';
import { NovaClient } from '../../src/nova/client.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { FAST, body, startNova } from '../guard/fixtures.js';

const HOUR_MS = 3_600_000;

/** The real timers and monotonic clock, with a wall clock the test steps. */
function steppedWall(): Clock & { step(ms: number): void } {
  let offset = 0;
  return { ...systemClock, wallNow: () => Date.now() + offset, step: (ms: number) => void (offset += ms) };
}

const dirs: string[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A guard ("a process") with its own client and its own SqliteQuotaLedger on `dir`. */
function processOn(nova: FakeNova, dir: string, clock: Clock, name: string): QuotaGuard {
  const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, clock, retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 } });
  const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: dir, clock, holder: name });
  const guard = new QuotaGuard(client, { ...FAST, ledger, maxWaitMs: 1500, activeTimeoutMs: 20_000 });
  closers.push(async () => {
    await guard.close();
    await ledger.close();
  });
  return guard;
}

const waitFor = async (what: () => boolean, ms: number): Promise<void> => {
  const t0 = performance.now();
  while (!what() && performance.now() - t0 < ms) await new Promise((r) => setTimeout(r, 10));
};

describe('SQLite ledger leases under wall-clock steps', () => {
  for (const stepMs of [6 * HOUR_MS, -6 * HOUR_MS]) {
    it(`a wall step of ${stepMs / HOUR_MS} h while the first server is still scheduling (Nova does not count it): the second guard is not admitted beyond the quota`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-step-'));
      dirs.push(dir);
      // 2 cores; an m1.small (2 vCPUs) stays in BUILD/scheduling (not counted by Nova) for 4 s.
      const nova = await startNova({ maxTotalCores: 2, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 5000, schedulingDelayMs: 4000 });
      const clock = steppedWall();
      const [a, b] = [processOn(nova, dir, clock, 'a'), processOn(nova, dir, clock, 'b')];
      const first = a.createServer(body('first'));
      await waitFor(() => nova.requestsTo('POST', '/servers').length === 1, 5000);
      expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
      expect(nova.usage().cores).toBe(0); // scheduling: /limits does not count it yet
      clock.step(stepMs);
      const second = await b.createServer(body('second')).then(
        () => 'admitted',
        (e: unknown) => e,
      );
      expect(second).toBeInstanceOf(QuotaWaitTimeoutError);
      expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
      const record = nova.quotaRecord();
      expect(record.peakCores).toBeLessThanOrEqual(2);
      expect(record.recheckErrors).toBe(0);
      const server = await first;
      expect(server.status).toBe('ACTIVE');
      await a.client.deleteServer(server.id, { wait: true, intervalMs: 20, timeoutMs: 10_000 });
    }, 30_000);
  }
});
