/**
 * The fleet watcher on the SQLite ledger across real processes of one host: three child processes
 * (`fleetProcess.mjs`, the built package) with `SqliteQuotaLedger.forClient(client, { fleetWatcher:
 * true })` on one file in a tmp directory, one FakeNova over HTTP. One is elected through the file;
 * the two others run guarded creates and deletes waited to the 404 while it watches, and send no
 * `GET /servers/{id}` of their own: their ACTIVE waits and delete waits are answered by the watcher's
 * publications, read from the file. Real clock, generous bounds.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeNova } from '../../src/testing/index.js';
import { ensureBuilt, live, posts403 } from '../redis/fleetSupport.js';
import { until } from '../redis/support.js';

const CHILD = fileURLToPath(new URL('./fleetProcess.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Result {
  wasWatching: boolean;
  watching: boolean;
  sent: string[];
  outcomes: string[];
  stats: { elections: number; published: number; consumed: number; proofs: number; fallbacks: number; gaps: number };
}

interface Proc {
  child: ChildProcess;
  state: { watching: boolean; consuming: boolean };
  result: Promise<Result>;
}

describe('fleet watcher on the SQLite ledger, across processes of one host', () => {
  let dir = '';
  const procs: Proc[] = [];
  let nova: FakeNova | undefined;
  beforeAll(() => ensureBuilt(), 120_000);
  afterEach(async () => {
    for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await nova?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function start(n: FakeNova, holder: string, jobs: number): Proc {
    const child = fork(CHILD, [JSON.stringify({ endpoint: n.endpoint, projectId: n.projectId, dir, holder, jobs, ttlMs: 3000 })], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const p: Proc = { child, state: { watching: false, consuming: false }, result: undefined as never };
    p.result = new Promise<Result>((resolve, reject) => {
      child.on('message', (m: { watching?: boolean; consuming?: boolean; result?: Result }) => {
        if (m.result) resolve(m.result);
        else p.state = { watching: m.watching === true, consuming: m.consuming === true };
      });
      child.once('exit', (code, signal) => reject(new Error(`process ${holder} exited (${code ?? signal}) without a result`)));
    });
    p.result.catch(() => undefined);
    procs.push(p);
    return p;
  }

  it("one process is elected through the file; the others' guarded creates and delete waits send no GET /servers/{id} of their own", async () => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-fleet-procs-'));
    nova = await FakeNova.start({ maxTotalCores: 8, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 400, deleteDelayMs: 400 });
    const n = nova;
    const all = ['p0', 'p1', 'p2'].map((h) => start(n, h, 2));
    const settled = (): boolean => all.filter((p) => p.state.watching).length === 1 && all.every((p) => p.state.watching || p.state.consuming);
    expect(await until(settled, 30_000)).toBe(true);
    const watcher = all.find((p) => p.state.watching)!;
    const consumers = all.filter((p) => p !== watcher);
    // The consumers run their jobs while the watcher watches; the watcher's own jobs come after.
    for (const p of consumers) p.child.send({ go: true });
    const results = await Promise.all(consumers.map((p) => p.result));
    watcher.child.send({ go: true });
    const own = await watcher.result;
    for (const r of results) {
      expect(r.wasWatching).toBe(false);
      expect(r.outcomes).toEqual(['deleted', 'deleted']);
      const looks = r.sent.filter((x) => /^GET \/servers\/[^/]+$/.test(x) && x !== 'GET /servers/detail');
      expect(looks, JSON.stringify(r.sent)).toEqual([]);
      expect(r.sent.filter((x) => x === 'POST /servers')).toHaveLength(2);
      expect(r.sent.filter((x) => x.startsWith('DELETE /servers/'))).toHaveLength(2);
      // Both deletions proved by the watcher's 404s, read from the file.
      expect(r.stats.proofs).toBe(2);
      expect(r.stats.elections).toBe(0);
      expect(r.stats.consumed).toBeGreaterThan(0);
      expect(r.stats.fallbacks).toBe(0);
    }
    expect(own.wasWatching).toBe(true);
    expect(own.outcomes).toEqual(['deleted', 'deleted']);
    expect(own.stats.elections).toBe(1);
    expect(own.stats.published).toBeGreaterThan(0);
    // The watcher's looks: a GET of each consumer's server, ending at Nova's 404.
    for (const r of results) {
      for (const del of r.sent.filter((x) => x.startsWith('DELETE /servers/'))) {
        const id = del.slice('DELETE /servers/'.length);
        expect(n.requestsTo('GET', `/servers/${id}`).at(-1)?.status).toBe(404);
      }
    }
    expect(posts403(n)).toBe(0);
    expect(live(n)).toEqual([]);
  }, 120_000);
});
