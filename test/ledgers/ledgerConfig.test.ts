/**
 * A ledger asked for is a ledger had, or a clear error (issue 32 item 1), on a host where the
 * optional module is not installed, as after `npm install` on a host without a C++ compiler (npm
 * drops an optional dependency it cannot build) or without `npm install ioredis`: each case runs the
 * built package in a child process whose `require('better-sqlite3')` / `require('ioredis')` fails
 * with Node's own MODULE_NOT_FOUND (hideModule.mjs, preloaded with --import); nova-guard's code is
 * not touched. Also the SQLite path under a regular file (fails for root too), in this process.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, LedgerConfigError, QuotaGuard } from '../../src/index.js';
import { openLedger } from '../../src/ledgers/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { ensureBuilt } from '../cli/binary.js';
import { clientFor, startNova, tempDir } from '../helpers.js';

const HIDE = fileURLToPath(new URL('./hideModule.mjs', import.meta.url));
const CHILD = fileURLToPath(new URL('./guardChild.mjs', import.meta.url));

interface Call {
  ok: boolean;
  op?: string;
  at?: string;
  ms?: number;
  name?: string;
  message?: string;
  ledgerConfigError?: boolean;
  configError?: boolean;
  novaGuardError?: boolean;
  reason?: string;
  kind?: string;
}
interface ChildResult {
  calls: Call[];
  stats: Record<string, number>;
  warnings: Array<{ name: string; message: string }>;
  posts: number;
  stderr: string;
}

/**
 * Run guardChild.mjs with `hide` not installed; `env` over the environment (without NOVA_GUARD_LEDGER
 * unless given). A child still running after `limitMs` is killed and the promise rejects (a hang).
 */
function child(hide: string, cfg: Record<string, unknown>, env: Record<string, string> = {}, limitMs = 120_000): Promise<ChildResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NOVA_GUARD_LEDGER' && k !== 'NODE_OPTIONS')) as Record<string, string>;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', HIDE, CHILD, JSON.stringify(cfg)], { env: { ...base, NOVA_GUARD_TEST_HIDE: hide, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    const limit = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`child still running after ${limitMs} ms (killed): ${out}\n${err}`));
    }, limitMs);
    p.on('close', (code) => {
      clearTimeout(limit);
      try {
        resolve({ ...(JSON.parse(out) as Omit<ChildResult, 'stderr'>), stderr: err });
      } catch {
        reject(new Error(`child exited ${code}: ${out}\n${err}`));
      }
    });
  });
}


beforeAll(() => ensureBuilt(), 180_000);

describe('sqlite: on a host where better-sqlite3 is not installed (no C++ compiler)', () => {
  it('the first create rejects with a LedgerConfigError naming the module and the fix: no POST, no file, nothing on stderr, no silent per-process ledger', async () => {
    const dir = tempDir('nova-guard-ledger-config-');
    const r = await child('better-sqlite3', { ledger: `sqlite:${dir}/` });
    expect(r.calls).toHaveLength(1);
    const [c] = r.calls;
    expect(c).toMatchObject({ ok: false, name: 'LedgerConfigError', ledgerConfigError: true, configError: true, novaGuardError: true, kind: 'sqlite', reason: 'module-missing' });
    expect(c!.message).toMatch(/better-sqlite3 .*could not be loaded \(Cannot find module 'better-sqlite3'\)/);
    expect(c!.message).toMatch(/Fix: npm install better-sqlite3@12 .*C\+\+ compiler.*or use ledger: 'in-process'/);
    expect(r.posts).toBe(0);
    expect(r.stats.ledgerFallbacks).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.stderr).toBe('');
  }, 60_000);

  it('NOVA_GUARD_LEDGER goes the same way: headroom() rejects with the LedgerConfigError', async () => {
    const dir = tempDir('nova-guard-ledger-config-');
    const r = await child('better-sqlite3', { op: 'headroom' }, { NOVA_GUARD_LEDGER: `sqlite:${dir}/` });
    expect(r.calls[0]).toMatchObject({ ok: false, name: 'LedgerConfigError', reason: 'module-missing', kind: 'sqlite' });
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it("ledgerFallback: 'in-process': the creates go on, each counted in stats.ledgerFallbacks, with one NovaGuardLedgerWarning on stderr for the process", async () => {
    const dir = tempDir('nova-guard-ledger-config-');
    const r = await child('better-sqlite3', { ledger: `sqlite:${dir}/`, options: { ledgerFallback: 'in-process' }, op: 'two-creates' });
    expect(r.calls.map((c) => c.ok)).toEqual([true, true]);
    expect(r.posts).toBe(2);
    expect(r.stats.ledgerFallbacks).toBe(2);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toMatchObject({ name: 'NovaGuardLedgerWarning' });
    expect(r.warnings[0]!.message).toMatch(/better-sqlite3.*Fix: npm install better-sqlite3@12.*ledgerFallback 'in-process': this process goes on with its own in-process ledger/);
    expect(r.stderr.match(/NovaGuardLedgerWarning/g)).toHaveLength(1);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);
});

describe('redis:// where ioredis is not installed', () => {
  it('is no outage: the first create rejects at once (no 3 s wait for a ledger never reached) with a LedgerConfigError naming npm install ioredis; no POST', async () => {
    const r = await child('ioredis', { ledger: 'redis://:s3cret-pw@127.0.0.1:6399' });
    const [c] = r.calls;
    expect(c).toMatchObject({ ok: false, name: 'LedgerConfigError', ledgerConfigError: true, configError: true, kind: 'redis', reason: 'module-missing' });
    expect(c!.message).toMatch(/ioredis \(5\.x\), which is not installed\. Fix: npm install ioredis@\^5, or use ledger: 'in-process'/);
    expect(c!.message).not.toContain('s3cret');
    // NEVER_REACHED_WAIT_MS is 3000 ms: well under it on a busy machine
    expect(c!.ms).toBeLessThan(2500);
    expect(r.posts).toBe(0);
    expect(r.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0, waits: 0 });
    expect(r.stderr).toBe('');
  }, 60_000);
});

/**
 * A guard of `a` creates on the SQLite ledger file `path`, then a guard of `b` (another endpoint or
 * project) tries to: what its create rejects with, and how long that took (ms). It never POSTs.
 */
async function secondScope(a: FakeNova, b: FakeNova, path: string): Promise<{ e: unknown; ms: number }> {
  const first = new QuotaGuard(clientFor(a), { ledger: `sqlite:${path}`, waitForActive: false });
  await first.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' });
  await first.close();
  const other = new QuotaGuard(clientFor(b), { ledger: `sqlite:${path}`, waitForActive: false, maxWaitMs: 60_000 });
  const started = Date.now();
  const e = await other.createServer({ name: 'b', flavorRef: '2', imageRef: 'img', networks: 'none' }).then(
    () => undefined,
    (err: unknown) => err,
  );
  const ms = Date.now() - started;
  expect(b.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  await other.close();
  return { e, ms };
}

describe('sqlite: a path that cannot be created (under a regular file: fails for root too)', () => {
  it('the first create rejects with a LedgerConfigError naming the path and the fix, at once, no POST; openLedger throws it too', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const file = join(tempDir('nova-guard-ledger-config-'), 'file.txt');
    writeFileSync(file, 'not a directory');
    const path = `${file}/ledger.db`;
    const warned: string[] = [];
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${path}`, waitForActive: false, maxWaitMs: 60_000, onWarning: (m) => warned.push(m) });
    const started = Date.now();
    const e = await guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e).toMatchObject({ kind: 'sqlite', reason: 'unwritable-path', file: path });
    expect((e as Error).message).toContain(`the SQLite ledger cannot create or open ${path}`);
    expect((e as Error).message).toMatch(/Fix: give a path in a directory this user can create and write/);
    // plainly why, the file system's code said once (it said "EEXIST: EEXIST: file already exists")
    expect((e as Error).message).toContain(`(ENOTDIR: ${file} is not a directory, so ${file} cannot be made). Fix:`);
    expect((e as Error).message).not.toContain('EEXIST: EEXIST');
    expect(Date.now() - started).toBeLessThan(2500);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0 });
    expect(warned).toEqual([]);
    expect(existsSync(path)).toBe(false);
    await guard.close();
    await expect(openLedger(`sqlite:${path}`, { endpoint: nova.endpoint, projectId: nova.projectId })).rejects.toBeInstanceOf(LedgerConfigError);
  });

  it("with ledgerFallback: 'in-process' the create goes on at once (no 3 s wait), one warning naming the path", async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const file = join(tempDir('nova-guard-ledger-config-'), 'file.txt');
    writeFileSync(file, 'x');
    const warned: string[] = [];
    const guard = new QuotaGuard(clientFor(nova), { ledger: `sqlite:${file}/ledger.db`, ledgerFallback: 'in-process', waitForActive: false, onWarning: (m) => warned.push(m) });
    const started = Date.now();
    const s = await guard.createServer({ name: 'a', flavorRef: '2', imageRef: 'img', networks: 'none' });
    expect(s.id).toBeDefined();
    expect(Date.now() - started).toBeLessThan(2500);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 1, ledgerOutages: 0 });
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(`${file}/ledger.db`);
    expect(inspect(guard)).not.toContain('sqlite:');
    await guard.close();
  });

  it('a SQLite file of another project (given as one file) may not be used: a LedgerConfigError (unusable-path) naming both, not a silent per-process ledger', async () => {
    const a = await startNova({ maxTotalCores: 4, projectId: 'proj-a' });
    const b = await startNova({ maxTotalCores: 4, projectId: 'proj-b' });
    const path = join(tempDir('nova-guard-ledger-config-'), 'one.sqlite');
    const { e, ms } = await secondScope(a, b, path);
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toMatchObject({ kind: 'sqlite', reason: 'unusable-path' });
    expect((e as Error).message).toMatch(/belongs to .*proj-a.*not .*proj-b/);
    // the fix of this cause: the file is not on a network disk, it is another endpoint's or project's
    expect((e as LedgerConfigError).fix).toBe(
      'delete this file (it holds nothing lasting while no process uses it) or name a directory, sqlite:/abs/dir/, which keeps one file per endpoint and project',
    );
    expect((e as Error).message).not.toMatch(/local disk|give each endpoint/);
    expect(e).toMatchObject({ file: path });
    expect(ms).toBeLessThan(2500);
  });

  it('a SQLite file of another endpoint (fake-nova restarted on another port, same project): the same error, its fix deletes the file or names a directory', async () => {
    const a = await startNova({ maxTotalCores: 4, projectId: 'demo' });
    const b = await startNova({ maxTotalCores: 4, projectId: 'demo' });
    const path = join(tempDir('nova-guard-ledger-config-'), 'l.db');
    const { e } = await secondScope(a, b, path);
    expect(e).toMatchObject({ name: 'LedgerConfigError', kind: 'sqlite', reason: 'unusable-path', file: path });
    expect((e as Error).message).toBe(
      `the SQLite ledger file ${path} belongs to "${a.endpoint} project demo", not "${b.endpoint} project demo". ` +
        'Fix: delete this file (it holds nothing lasting while no process uses it) or name a directory, sqlite:/abs/dir/, which keeps one file per endpoint and project',
    );
  });
});

describe('sqlite: a directory that cannot be made under /proc (Node 20 loops for ever in a recursive mkdirSync there)', () => {
  it.runIf(existsSync('/proc/self/stat'))('sqlite:/proc/nope/ledger.db: the first create rejects at once with a LedgerConfigError (unwritable-path) naming the directory; the process does not hang', async () => {
    const r = await child('none', { ledger: 'sqlite:/proc/nope/ledger.db' }, {}, 30_000);
    expect(r.calls).toHaveLength(1);
    const [c] = r.calls;
    expect(c).toMatchObject({ ok: false, name: 'LedgerConfigError', ledgerConfigError: true, kind: 'sqlite', reason: 'unwritable-path' });
    expect(c!.message).toMatch(/the SQLite ledger cannot create or open \/proc\/nope\/ledger\.db: creating its directory failed \(ENOENT: .*cannot make the directory \/proc\/nope in \/proc/);
    expect(c!.ms).toBeLessThan(10_000);
    expect(r.posts).toBe(0);
    expect(r.stats.ledgerOutages ?? 0).toBe(0);
  }, 60_000);
});
