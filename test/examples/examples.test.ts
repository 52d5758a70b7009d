/**
 * Every file in examples/ is code that runs: each is run here, as a child process, against the
 * embedded FakeNova in a small mode (few workers, short delays), and must exit 0 with the output it
 * promises. A failing example fails `npm test`, and so CI. (They are type-checked by `npm run
 * typecheck`, whose tsconfig includes examples/.) prometheus.ts on its own is run by
 * test/telemetry/prometheusExample.test.ts, and here through `demo --metrics`; demoHost.ts and
 * worker.ts through `demo` (by default, and with `--ledger redis://…`, demo forks demoHost.ts
 * processes sharing the ledger; `--ledger in-process` runs the hosts in one process).
 *
 * The examples import `nova-guard` as an application does: the package's own exports (dist/, built
 * first when src/ is newer), from JavaScript transpiled into build/ inside the repository.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_SERVER, freePort, spawnRedis } from '../../bench/redisServer.js';
import { REPO, ensureBuilt } from '../cli/binary.js';

const OUT = `${REPO}build/test-examples-${process.pid}`;

/** Each example and how it is run in small mode; `demoHost.ts` and `worker.ts` are run by demo. */
const RUNS = {
  'guarded-worker.ts': ['--workers', '2', '--jobs', '1'],
  'audit-watch.ts': ['--samples', '3', '--interval-ms', '50', '--out', `${OUT}/audit-watch.svg`],
  'demo.ts': ['--workers', '2', '--hosts', '2', '--jobs', '1', '--cores', '4', '--test-ms', '20', '--delete-delay-ms', '50', '--latency-ms', '2', '--quiet', '--metrics'],
} as const;
/** Examples run through another one (or on their own by another test file). */
const RUN_BY = { 'demoHost.ts': 'demo.ts', 'worker.ts': 'demo.ts', 'prometheus.ts': 'demo.ts --metrics, test/telemetry/prometheusExample.test.ts' };

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(example: string, args: readonly string[], timeoutMs = 60_000, env: NodeJS.ProcessEnv = process.env): Promise<Exit> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`${OUT}/${example.replace(/\.ts$/, '.js')}`, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  await ensureBuilt();
  mkdirSync(OUT, { recursive: true });
  for (const f of readdirSync(`${REPO}examples`).filter((n) => n.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(readFileSync(`${REPO}examples/${f}`, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    writeFileSync(`${OUT}/${f.replace(/\.ts$/, '.js')}`, outputText);
  }
}, 120_000);

afterAll(() => {
  rmSync(OUT, { recursive: true, force: true });
});

describe('examples/ run against FakeNova', () => {
  it('every file in examples/ is run by this file (a new example must be added here)', () => {
    const files = readdirSync(`${REPO}examples`).filter((n) => n.endsWith('.ts')).sort();
    expect(files).toEqual([...Object.keys(RUNS), ...Object.keys(RUN_BY)].sort());
  });

  it('guarded-worker.ts: every job succeeds (networks "none" at a microversion that allows it), each server tagged with its claim (README "Quota guard"), exit 0', async () => {
    const r = await run('guarded-worker.ts', RUNS['guarded-worker.ts']);
    expect(r.stdout).not.toContain('FAILED');
    // fn tags its server with claim.metadata: Nova's server carries the call's tag and the claim id.
    const done = r.stdout.split('\n').filter((l) => / done on /.test(l));
    expect(done).toHaveLength(2);
    for (const l of done) expect(l).toMatch(/ \(claim tag [0-9a-f-]{36}, claim [0-9a-f-]{36}\)$/);
    expect(r.stdout).toMatch(/2 guarded creates, \d+ waits for headroom, \d+ quota retries, 0 failed jobs/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('audit-watch.ts: one JSON line per sample and a summary, the picture written, exit 0', async () => {
    const r = await run('audit-watch.ts', RUNS['audit-watch.ts']);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(lines.map((l) => l.type)).toEqual(['sample', 'sample', 'sample', 'summary']);
    expect(readFileSync(`${OUT}/audit-watch.svg`, 'utf8')).toContain('<svg');
    expect(r.code).toBe(0);
  }, 60_000);

  it('demo.ts (demoHost.ts, worker.ts, prometheus.ts): by default worker processes on a SQLite ledger in a fresh temporary directory, 0 quota 403s, the directory removed, the metrics printed, exit 0', async () => {
    const r = await run('demo.ts', RUNS['demo.ts']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const ledger = /^\| ledger \| sqlite:(\S+) \(shared by the 2 worker processes: 0 quota 403s\)\. With --ledger in-process the hosts share nothing and race into Nova's 403s, which the guard absorbs\. \|$/m.exec(r.stdout);
    expect(ledger, r.stdout).not.toBeNull();
    expect(r.stdout).toMatch(/^\| quota 403s met \(absorbed\) \| 0 \|$/m);
    expect(r.stdout).toMatch(/^\| jobs failed \| 0 \|$/m);
    expect(existsSync(dirname(ledger![1]!))).toBe(false);
    expect(r.stdout).toContain('nova_guard_');
    // the metrics are this process's (its token, the audit), not the worker processes' creates: said
    // above them (before: a reader found 1 POST and a few GETs and took them for the job's)
    expect(r.stdout).toMatch(/^# the metrics of this process only .* --ledger in-process --metrics shows the job's$/m);
  }, 60_000);

  it('demo.ts --workers 1: runs and says 1 worker process (it printed "on 2 worker processes", forking an idle one); a bad --workers is refused before anything starts', async () => {
    const one = RUNS['demo.ts'].filter((a) => a !== '--metrics').map((a, i, all) => (all[i - 1] === '--workers' ? '1' : a));
    const r = await run('demo.ts', one);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\| workers x jobs \| 1 x 1 \(flavor 2\) on 1 worker process \|$/m);
    expect(r.stdout).toMatch(/^\| ledger \| sqlite:\S+ \(used by the 1 worker process: 0 quota 403s\)\./m);
    const inProcess = await run('demo.ts', [...one, '--ledger', 'in-process']);
    expect(inProcess.code, inProcess.stdout + inProcess.stderr).toBe(0);
    expect(inProcess.stdout).toMatch(/^\| workers x jobs \| 1 x 1 \(flavor 2: 2-core servers\) on 1 host in this process \|$/m);
    const bad = await run('demo.ts', ['--workers', '0']);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe('demo failed: --workers must be a whole number >= 1, got "0"');
    expect(bad.stdout).toBe('');
  }, 90_000);

  it('demo.ts --ledger in-process: the hosts are clients of one process, each on its own ledger, and the summary says why 403s come', async () => {
    const r = await run('demo.ts', [...RUNS['demo.ts'].filter((a) => a !== '--metrics'), '--ledger', 'in-process']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\| ledger \| in-process \(each of the 2 hosts has its own: they share nothing and race into Nova's quota 403s \(\d+ quota 403s\), which the guard absorbs; the demo's default, a sqlite: ledger, or redis:\/\/ avoids them\) \|$/m);
    expect(r.stdout).toMatch(/^\| jobs failed \| 0 \|$/m);
  }, 60_000);

  it('demo.ts --ledger sqlite: (the state directory, as the library takes it): exit 0, 0 quota 403s', async () => {
    const state = mkdtempSync(join(tmpdir(), 'demo-state-'));
    try {
      const small = RUNS['demo.ts'].filter((a) => a !== '--metrics');
      const r = await run('demo.ts', [...small, '--ledger', 'sqlite:'], 60_000, { ...process.env, XDG_STATE_HOME: state });
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`| ledger | sqlite: (a file in ${join(state, 'nova-guard')}) (shared by the 2 worker processes: 0 quota 403s)`);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  }, 60_000);

  it('demo.ts run twice on one SQLite file (a new fake Nova each run): the second fails, and its summary says so instead of "0 quota 403s", each error once with its count', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'demo-reuse-'));
    try {
      const args = [...RUNS['demo.ts'].filter((a) => a !== '--metrics'), '--ledger', `sqlite:${join(dir, 'l.db')}`];
      expect((await run('demo.ts', args)).code).toBe(0);
      const second = await run('demo.ts', args);
      expect(second.code).toBe(1);
      expect(second.stdout).toMatch(/^\| ledger \| sqlite:\S+ \(shared by the 2 worker processes: 2 jobs failed: see the errors below\)/m);
      expect(second.stdout).not.toMatch(/0 quota 403s\)/);
      expect(second.stdout).toMatch(/^ {2}2 jobs \(.+\): .*LedgerConfigError/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('demo.ts stopped by SIGINT to its own process (as a supervisor sends it): exit 130, its worker processes gone, the temporary ledger removed', async () => {
    const child = spawn(process.execPath, [`${OUT}/demo.js`, '--workers', '2', '--hosts', '2', '--jobs', '50', '--cores', '4', '--test-ms', '200', '--latency-ms', '2'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    const started = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (/job 1: done/.test(stdout)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await started;
    const ledger = /^demo: ledger sqlite:(\S+)$/m.exec(stdout);
    expect(ledger, stdout).not.toBeNull();
    expect(existsSync(ledger![1]!)).toBe(true);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('demo: SIGINT: stopping');
    expect(stderr).not.toContain('demo failed');
    expect(existsSync(dirname(ledger![1]!))).toBe(false);
    const left = spawnSync('pgrep', ['-f', `${OUT}/demoHost.js`], { encoding: 'utf8' });
    expect(left.stdout.trim()).toBe('');
  }, 60_000);

  it('demo.ts --ledger with something else than a ledger string: exit 1 naming the forms', async () => {
    const r = await run('demo.ts', ['--ledger', 'postgres://x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--ledger must be sqlite:[PATH], redis://host:port or in-process, got "postgres://x"');
  }, 60_000);

  it.skipIf(!existsSync(REDIS_SERVER))('demo.ts --ledger (demoHost.ts processes sharing a Redis): exit 0', async () => {
    const port = await freePort();
    const redis = await spawnRedis(port);
    try {
      const r = await run('demo.ts', [...RUNS['demo.ts'].filter((a) => a !== '--metrics'), '--ledger', `redis://127.0.0.1:${port}`]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`| ledger | redis://127.0.0.1:${port} (shared by the 2 worker processes: `);
    } finally {
      redis.kill('SIGKILL');
    }
  }, 60_000);
});
