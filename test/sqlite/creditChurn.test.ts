/**
 * The credit of a confirmed deletion to the kept `/limits` reading (`FreedCredit`) under churn, across
 * real processes on one SQLite file: four child processes (`creditProcess.mjs`, the built package)
 * create and delete 2-core servers under a 6-core quota, and a reaper beside each worker deletes every
 * third server before the worker does (its guard publishes that deletion without a credit: the next
 * admission reads `/limits`, which no longer counts the server). The worker's own DELETE of such a
 * server answers 404: no credit, or the reading read after the reap would lose 2 cores it never
 * counted. FakeNova over HTTP, real clock, generous bounds.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeNova } from '../../src/testing/index.js';
import { ensureBuilt, live } from '../redis/fleetSupport.js';

const CHILD = fileURLToPath(new URL('./creditProcess.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Result {
  outcomes: string[];
  errors: string[];
  stats: { quota403s: number };
}

describe('the credit under churn, four processes on one SQLite file, a reaper deleting every third server first (the worker DELETE then answers 404)', () => {
  let dir = '';
  let nova: FakeNova | undefined;
  const children: ReturnType<typeof fork>[] = [];
  beforeAll(() => ensureBuilt(), 180_000);
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await nova?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('no admission past the quota: no quota 403, the peak within 6 cores, every job done, nothing left', async () => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-credit-churn-'));
    nova = await FakeNova.start({ maxTotalCores: 6, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 50, deleteDelayMs: 50 });
    const n = nova;
    const jobs = 12;
    const results = await Promise.all(
      ['p0', 'p1', 'p2', 'p3'].map(
        (holder) =>
          new Promise<Result>((resolve, reject) => {
            const child = fork(CHILD, [JSON.stringify({ endpoint: n.endpoint, projectId: n.projectId, dir, holder, jobs, reapEvery: 3, holdMs: 150 })], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
            children.push(child);
            child.on('message', (m: { result?: Result }) => m.result && resolve(m.result));
            child.once('exit', (code, signal) => reject(new Error(`process ${holder} exited (${code ?? signal}) without a result`)));
          }),
      ),
    );
    for (const r of results) {
      expect(r.errors).toEqual([]);
      expect(r.outcomes).toHaveLength(jobs);
      // the reaped servers: Nova's 404 to the worker's DELETE
      expect(r.outcomes.filter((o) => o === 'already-gone')).toHaveLength(jobs / 3);
    }
    const record = n.quotaRecord();
    expect(record.quota403s, 'no POST past the quota').toBe(0);
    expect(record.recheckErrors).toBe(0);
    expect(record.peakCores).toBeLessThanOrEqual(6);
    expect(live(n)).toEqual([]);
  }, 180_000);
});
