/**
 * A SQLite ledger closed while its own `GET /limits` read for the fleet is in flight gives the file's
 * refresh lock back at `close()`: another process's admission reads at once instead of waiting out
 * `limitsLockMs` (10 s by default). Real SQLite file, real clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AcquireRequest, LimitsReading } from '../../src/ledger/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const ask: AcquireRequest = { place: undefined, needs: { cores: 2, ramMiB: 0, instances: 1 }, ttlMs: 60_000, joinIfShort: false };

describe('SqliteQuotaLedger.close() with its own /limits read in flight', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("gives the refresh lock back: the other process's admission reads at once, not after limitsLockMs", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-close-lock-'));
    dirs.push(dir);
    const open = (holder: string) => new SqliteQuotaLedger({ path: join(dir, 'l.sqlite'), endpoint: ENDPOINT, projectId: 'close-lock', holder });
    const a = open('a');
    const b = open('b');
    // a's read never answers: a holds the file's refresh lock
    let started!: () => void;
    const reading = new Promise<void>((r) => (started = r));
    const hung = a.acquire(ask, () => (started(), new Promise<LimitsReading>(() => undefined)), undefined);
    void hung.catch(() => undefined);
    await reading;
    await a.close();
    const t0 = performance.now();
    let reads = 0;
    const got = await b.acquire(ask, async () => (reads++, { absolute: { maxTotalCores: 4, totalCoresUsed: 0 }, requestId: 'req-b' }), undefined);
    const tookMs = performance.now() - t0;
    expect(got.admitted).toBe(true);
    expect(reads).toBe(1);
    // limitsLockMs is 10 s: well under it (generous for a busy machine)
    expect(tookMs).toBeLessThan(5000);
    await b.close();
  });
});
