/**
 * examples/shell-worker.sh, as CI runs it: 6 copies at once against `nova-guard fake-nova` (the
 * built binary, over HTTP), each creating a server through the guard (`server create --wait -f value
 * -c id`), "running" and deleting it with wait. Every copy must exit 0 and no server may be left. With
 * the SQLite ledger (`NOVA_GUARD_LEDGER=sqlite:DIR`), and with a redis-server here a Redis ledger,
 * the copies share the quota that fits fewer servers than copies, so they take turns.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REDIS_SERVER, freePort, spawnRedis } from '../../bench/redisServer.js';
import { CLI, REPO, cleanEnv, ensureBuilt, runPiped } from '../cli/binary.js';

const COPIES = 6;

/** Start `nova-guard fake-nova` with `args`; resolves its endpoint and token once it printed them. */
function startFakeNova(args: string[]): Promise<{ child: ChildProcess; env: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'fake-nova', ...args], { env: cleanEnv({}), cwd: '/' });
    let out = '';
    const limit = setTimeout(() => reject(new Error(`fake-nova printed no endpoint: ${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /export OS_ENDPOINT=(\S+) OS_TOKEN=(\S+)\n/.exec(out);
      if (m) {
        clearTimeout(limit);
        resolve({ child, env: { OS_ENDPOINT: m[1]!, OS_TOKEN: m[2]! } });
      }
    });
  });
}

/** Run one copy of the script; its exit code and output. */
function runCopy(i: number, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', [`${REPO}examples/shell-worker.sh`, `shell-worker-${i}`], {
      env: cleanEnv({ ...env, NOVA_GUARD: `${process.execPath} ${CLI}`, RUN_SECONDS: '0.5', POLL_INTERVAL: '300ms' }),
      cwd: REPO,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

async function sixCopies(fakeArgs: string[], extraEnv: Record<string, string> = {}): Promise<void> {
  await ensureBuilt();
  const nova = await startFakeNova(['--build-delay', '200ms', '--delete-delay', '300ms', ...fakeArgs]);
  try {
    const env = { ...nova.env, ...extraEnv };
    const runs = await Promise.all(Array.from({ length: COPIES }, (_, i) => runCopy(i, env)));
    const failed = runs.filter((r) => r.code !== 0);
    expect(failed.map((r) => r.out), 'failed copies').toEqual([]);
    for (const r of runs) expect(r.out).toMatch(/: deleted [0-9a-f-]{36}\n/);
    const left = await runPiped(['server', 'list', '-f', 'value', '-c', 'ID'], nova.env);
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout.trim(), 'servers left').toBe('');
  } finally {
    nova.child.kill('SIGTERM');
  }
}

describe('examples/shell-worker.sh: 6 concurrent copies against nova-guard fake-nova', () => {
  it('no ledger: 0 failed copies, 0 servers left', async () => {
    await sixCopies(['--cores', '20']);
  }, 180_000);

  it('sharing the SQLite ledger of this host (NOVA_GUARD_LEDGER=sqlite:DIR) on a quota of 3 servers: 0 failed copies, 0 servers left, one ledger file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nova-guard-shell-'));
    try {
      await sixCopies(['--cores', '3'], { NOVA_GUARD_LEDGER: `sqlite:${dir}/` });
      expect(readdirSync(dir).filter((f) => f.endsWith('.sqlite'))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it.skipIf(!existsSync(REDIS_SERVER))('sharing a Redis ledger (NOVA_GUARD_LEDGER) on a quota of 3 servers: 0 failed copies, 0 servers left', async () => {
    const port = await freePort();
    const redis = await spawnRedis(port);
    try {
      await sixCopies(['--cores', '3'], { NOVA_GUARD_LEDGER: `redis://127.0.0.1:${port}` });
    } finally {
      redis.kill('SIGKILL');
    }
  }, 240_000);
});
