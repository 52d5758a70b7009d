/**
 * Issue 29 attacks on the SQLite ledger: another process holds the file locked longer than the
 * ledgers' `busyTimeoutMs` (200 ms) but shorter than the guards' `maxWaitMs`. Two guards in this
 * process (two ledgers on one file, as two workers of a host) race for room for one server while the
 * lock is held: each ledger call fails busy (the guard waits for the ledger), and once the lock is
 * gone exactly one create is admitted: nothing over-committed, every call settled by its deadline.
 * Real clock, a real SQLite file, a real second process, FakeNova in-process; generous bounds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/client.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { FAST, body, startNova } from '../guard/fixtures.js';

const HOLD_MS = 1500;

/** A second process that holds a write transaction on `file` for `ms`; resolves once it holds it. */
async function holdLock(file: string, ms: number): Promise<ChildProcess> {
  const script = `const db = new (require('better-sqlite3'))(${JSON.stringify(file)}); db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n'); setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    child.on('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
  return child;
}

let dir = '';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
  dir = '';
});

describe('a ledger file locked longer than busyTimeoutMs, shorter than maxWaitMs (issue 29 attack)', () => {
  it('two guards racing for room for one server: exactly one admitted after the lock goes, the other times out; nothing over quota', async () => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-attack-sqlite-'));
    // Room for one m1.tiny (1 core).
    const nova = await startNova({ maxTotalCores: 1, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 50, deleteDelayMs: 50, deletedWindowMs: 0 });
    const mk = (holder: string) => {
      const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 } });
      const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: `${dir}/`, busyTimeoutMs: 200, holder });
      const guard = new QuotaGuard(client, { ...FAST, ledger, maxWaitMs: 4500 });
      cleanups.push(async () => {
        await guard.close();
        await ledger.close();
      });
      return { client, ledger, guard };
    };
    const a = mk('worker-a');
    const b = mk('worker-b');
    const holder = await holdLock(a.ledger.path, HOLD_MS);
    cleanups.push(() => void holder.kill());
    const t0 = performance.now();
    const settle = (p: Promise<unknown>) =>
      p.then(
        () => ({ ok: true as const, ms: performance.now() - t0 }),
        (e: unknown) => ({ ok: false as const, ms: performance.now() - t0, error: e }),
      );
    const [ra, rb] = await Promise.all([settle(a.guard.createServer(body('a', '1'))), settle(b.guard.createServer(body('b', '1')))]);
    const oks = [ra, rb].filter((r) => r.ok);
    expect(oks).toHaveLength(1);
    expect(oks[0]!.ms).toBeGreaterThanOrEqual(HOLD_MS - 100); // admitted only once the lock was gone
    for (const r of [ra, rb]) expect(r.ms).toBeLessThan(4500 + 1500);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
  }, 30_000);
});
