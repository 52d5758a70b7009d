/**
 * The SQLite ledger across separate processes on one host: worker "hosts" are child processes
 * (test/redis/fleetWorker.mjs on the built package, its guard given `ledger: 'sqlite:DIR'`)
 * sharing one FakeNova over HTTP and one ledger directory. Real clock, outcomes and generous bounds.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeNova, type FakeNovaOptions } from '../../src/testing/index.js';
import { loadSqlite } from '../../src/sqlite/native.js';
import { ledgerFile } from '../../src/sqlite/options.js';
import { ensureBuilt, Fleet, live, posts403, sleep, type HostConfig } from '../redis/fleetSupport.js';

const NO_NATIVE = fileURLToPath(new URL('./noNativeModule.mjs', import.meta.url));

describe('SQLite ledger shared by worker processes on one host', () => {
  let dir = '';
  const novas: FakeNova[] = [];
  const fleet = new Fleet(() => ({ redisUrl: null, ledger: `sqlite:${dir}`, runMs: 100, leaseTtlMs: 3000, ledgerTimeoutMs: 2000 }));
  beforeAll(() => ensureBuilt(), 120_000);
  afterEach(async () => {
    fleet.killAll();
    for (const n of novas.splice(0)) await n.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startNova(options: FakeNovaOptions): Promise<FakeNova> {
    dir = dir !== '' && novas.length > 0 ? dir : mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-fleet-'));
    const n = await FakeNova.start({ maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 150, deleteDelayMs: 100, ...options });
    novas.push(n);
    return n;
  }

  it('8 processes, one ledger file, quota below demand: 0 failed jobs, 0 quota 403s, never more cores than the quota', async () => {
    const n = await startNova({ maxTotalCores: 6 });
    const hosts = Array.from({ length: 8 }, (_, i) => fleet.host(n, { holder: `p${i}`, workers: 1, jobs: 3 } as HostConfig));
    const results = await Promise.all(hosts.map((h) => h.result));
    for (const r of results) expect(r, JSON.stringify(r.errors)).toMatchObject({ done: 3, failed: 0 });
    expect(posts403(n)).toBe(0);
    expect(results.reduce((s, r) => s + r.stats.quota403s + r.stats.ledgerFallbacks, 0)).toBe(0);
    const peak = n.quotaRecord().peakCores;
    expect(peak).toBeLessThanOrEqual(6);
    expect(peak).toBeGreaterThanOrEqual(4); // shared, not one create at a time
    expect(live(n)).toEqual([]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite'))).toHaveLength(1);
  }, 90_000);

  it('a process killed with SIGKILL while holding a claim: its claim expires by its lease and the others finish', async () => {
    const n = await startNova({ maxTotalCores: 8, buildDelayMs: 800, schedulingDelayMs: 600 });
    const file = ledgerFile(dir, n.endpoint, n.projectId);
    const victim = fleet.host(n, { holder: 'victim', workers: 1, jobs: 5, leaseTtlMs: 1500 });
    const Sqlite = loadSqlite();
    /** The victim's live claims whose create Nova answered (server bound; before the POST the lease covers the request's time limit). Leases are on the host's monotonic clock (hrtime), the same in every process. */
    const liveBound = (): string[] => {
      try {
        const db = new Sqlite(file);
        try {
          const rows = db.prepare('SELECT id FROM claims WHERE holder LIKE ? AND server_id IS NOT NULL AND expires_at > ?').all(`%:${victim.child.pid}`, Number(process.hrtime.bigint()) / 1e6) as Array<{ id: string }>;
          return rows.map((r) => r.id);
        } finally {
          db.close();
        }
      } catch {
        return [];
      }
    };
    const t0 = Date.now();
    while (liveBound().length === 0 && Date.now() - t0 < 30_000) await sleep(20);
    expect(liveBound().length).toBeGreaterThan(0);
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    const others = ['a', 'b'].map((holder) => fleet.host(n, { holder, workers: 2, jobs: 2, leaseTtlMs: 1500 }));
    while (liveBound().length > 0 && Date.now() - killedAt < 20_000) await sleep(50);
    expect(liveBound()).toEqual([]);
    expect(Date.now() - killedAt).toBeLessThan(10_000); // the lease (1.5 s)
    await expect(victim.result).rejects.toThrow(/SIGKILL/);
    for (const r of await Promise.all(others.map((h) => h.result))) expect(r, JSON.stringify(r.errors)).toMatchObject({ done: 4, failed: 0 });
    expect(posts403(n)).toBe(0);
    expect(n.quotaRecord().peakCores).toBeLessThanOrEqual(8);
  }, 90_000);

  it('two projects in one directory: two files, each quota shared only by its own processes', async () => {
    const a = await startNova({ maxTotalCores: 4, projectId: 'project-a' });
    const b = await startNova({ maxTotalCores: 4, projectId: 'project-b' });
    const hosts = [...['a1', 'a2'].map((h) => fleet.host(a, { holder: h, workers: 2, jobs: 2 })), ...['b1', 'b2'].map((h) => fleet.host(b, { holder: h, workers: 2, jobs: 2 }))];
    for (const r of await Promise.all(hosts.map((h) => h.result))) expect(r, JSON.stringify(r.errors)).toMatchObject({ done: 4, failed: 0 });
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite')).sort()).toEqual([ledgerFile(dir, a.endpoint, 'project-a'), ledgerFile(dir, b.endpoint, 'project-b')].map((f) => f.slice(dir.length + 1)).sort());
    for (const n of [a, b]) {
      expect(posts403(n)).toBe(0);
      expect(n.quotaRecord().peakCores).toBe(4); // each project used its whole quota: the other's claims did not count
    }
  }, 90_000);

  it('a ledger file damaged after its SQLite header (one that was a database): the processes warn, naming the file, and go on through Nova (no job lost)', async () => {
    const n = await startNova({ maxTotalCores: 8 });
    const file = ledgerFile(dir, n.endpoint, n.projectId);
    // (a file without the header, a text file, is a setup error: test/sqlite/ledgerFile.test.ts)
    writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.from('not a database '.repeat(500))]));
    const h = fleet.host(n, { holder: 'c', workers: 2, jobs: 2 });
    const r = await h.result;
    expect(r, JSON.stringify(r.errors)).toMatchObject({ done: 4, failed: 0 });
    expect(h.log.join('\n')).toMatch(/not a SQLite database or is corrupt/);
    expect(live(n)).toEqual([]);
  }, 60_000);

  it("where better-sqlite3 cannot load: every create fails with the LedgerConfigError naming the fix, no file made; with ledgerFallback: 'in-process', one warning that says so and every job done", async () => {
    const n = await startNova({ maxTotalCores: 8 });
    const h = fleet.host(n, { holder: 'nonative', workers: 2, jobs: 2, nodeArgs: ['--import', NO_NATIVE] });
    const r = await h.result;
    expect(r).toMatchObject({ done: 0, failed: 4 });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatch(/^LedgerConfigError: the SQLite ledger needs the optional dependency better-sqlite3 .*Fix: npm install better-sqlite3@12/);
    expect(posts403(n) + n.requestsTo('POST', /^\/servers$/).length).toBe(0);
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite'))).toEqual([]);
    const soft = fleet.host(n, { holder: 'nonative-soft', workers: 2, jobs: 2, ledgerFallback: 'in-process', nodeArgs: ['--import', NO_NATIVE] });
    const s = await soft.result;
    expect(s, JSON.stringify(s.errors)).toMatchObject({ done: 4, failed: 0 });
    expect(s.stats.ledgerFallbacks).toBe(4);
    const warnings = soft.log.filter((l) => /better-sqlite3/.test(l));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/could not be loaded.*ledgerFallback 'in-process': this process goes on with its own in-process ledger/);
    expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite'))).toEqual([]);
  }, 60_000);
});
