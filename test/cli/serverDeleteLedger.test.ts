// `nova-guard server delete --wait --ledger sqlite:DIR` tells the ledger of the deletion Nova
// confirmed, so a `server create --wait` process waiting for headroom on the same ledger file is
// admitted right after the delete, not at its next backoff step. Separate processes of the built
// CLI, one FakeNova over HTTP, a real SQLite file; real clock, generous bounds.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGES, type FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { CLI, cleanEnv, ensureBuilt, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

let dir = '';
afterEach(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
  dir = '';
});

interface Waiting {
  /** Resolves at the first "waiting N s for quota headroom" line with N >= `minDelayS`: its time (performance.now()) and N in ms. */
  longWait: Promise<{ atMs: number; delayMs: number }>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `server create --wait` in its own process, its stderr read as it comes. */
function createInBackground(name: string, env: Record<string, string>, minDelayS: number): Waiting {
  const args = ['server', 'create', name, '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--nic', 'none', '--wait', '-f', 'value', '-c', 'id'];
  const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), cwd: '/' });
  let stdout = '';
  let stderr = '';
  let found: ((v: { atMs: number; delayMs: number }) => void) | undefined;
  const longWait = new Promise<{ atMs: number; delayMs: number }>((resolve) => (found = resolve));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const m of stderr.matchAll(/waiting ([\d.]+) s for quota headroom/g)) {
      const s = Number(m[1]);
      if (s >= minDelayS) found?.({ atMs: performance.now(), delayMs: s * 1000 });
    }
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  void done.then(() => found?.({ atMs: Number.NaN, delayMs: Number.NaN }));
  return { longWait, done };
}

/** Arrival time (performance.now() scale) of the last POST /servers FakeNova recorded. */
function lastPostMs(nova: FakeNova): number {
  const posts = nova.requestsTo('POST', '/servers');
  return posts[posts.length - 1]!.timeMs - Date.now() + performance.now();
}

describe('server delete --wait with a ledger wakes the creates waiting on it', () => {
  it('a create waiting on a long backoff step is admitted within seconds of the other process delete, not at its step', async () => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-delete-ledger-'));
    // One core: the second create waits for the first server's deletion. Nova takes 1 s to delete.
    const nova = await startNova({ maxTotalCores: 1, buildDelayMs: 100, deleteDelayMs: 1000 });
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}`, NOVA_GUARD_LEDGER: `sqlite:${dir}/` };
    const first = await runPiped(['server', 'create', 'first', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--nic', 'none', '--wait', '-f', 'value', '-c', 'id'], env);
    expect(first.code, first.stderr).toBe(0);
    const firstId = first.stdout.trim();

    // The backoff doubles from 2 s (±20 %): the 4th wait is 12.8-19.2 s.
    const second = createInBackground('second', env, 12);
    const wait = await second.longWait;
    expect(wait.delayMs, 'the create ended before a long wait').toBeGreaterThanOrEqual(12_000);
    await sleep(300); // the wait has begun
    const del = await runPiped(['server', 'delete', '--wait', '--interval', '200ms', firstId], env);
    const deletedAtMs = performance.now();
    expect(del.code, del.stderr).toBe(0);
    expect(del.stderr).not.toMatch(/Warning/);

    const r = await second.done;
    expect(r.code, r.stderr).toBe(0);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
    const postMs = lastPostMs(nova);
    // Woken by the deletion: its POST follows the delete process's exit within seconds (the file is
    // polled every 25 ms; /limits and the claim are a few requests) ...
    expect(postMs - deletedAtMs).toBeLessThan(4000);
    // ... and comes well before the end of the backoff step it was sleeping (at least 12.8 s).
    expect(postMs).toBeLessThan(wait.atMs + wait.delayMs - 4000);
    // Nova never refused a create: the second waited for the 404, not for a 403.
    expect(nova.requests.filter((q) => q.method === 'POST' && q.status === 403)).toHaveLength(0);
  }, 90_000);

  it('a ledger that cannot be opened is one warning: the deletion goes on (exit 0, the server gone)', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const server = nova.addServer({ name: 'w' });
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` };
    const r = await runPiped(['server', 'delete', '--wait', '--interval', '200ms', '--ledger', 'sqlite:/dev/null/no-such-dir/', server.id], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^Warning: the quota ledger could not be opened \(.+\): waiting creates see the freed quota at their next read of the limits\n$/);
    expect(r.stdout).toMatch(new RegExp(`^${server.id}: deleted `));
    expect(nova.getServerState(server.id)).toBeUndefined();
  }, 60_000);

  it('a --ledger that is not a ledger URL is bad usage (exit 2) and nothing is deleted', async () => {
    const nova = await startNova();
    const server = nova.addServer({ name: 'w' });
    const r = await runPiped(['server', 'delete', '--wait', '--ledger', 'ftp://x', server.id], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/a ledger must be/);
    expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(0);
  }, 60_000);
});
