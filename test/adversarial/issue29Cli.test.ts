// Issue 29 attacks on the CLI's signals (the built binary against FakeNova over HTTP): a signal while
// the DELETE of `server delete` has no answer, and two SIGTERMs in a row. The server asked to delete
// must be named before the process ends, with the signal's exit code.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { CLI, cleanEnv, ensureBuilt } from '../cli/binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

function start(args: string[], nova: FakeNova) {
  const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` }), cwd: '/' });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, ms: performance.now() }));
  });
  return { child, stderr: () => stderr, ended };
}

async function until(what: () => boolean, limitMs = 15_000): Promise<void> {
  const t0 = performance.now();
  while (!what()) {
    if (performance.now() - t0 > limitMs) throw new Error('timed out waiting');
    await sleep(20);
  }
}

describe('server delete: signals while the DELETE hangs (issue 29 attack)', () => {
  for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`${signal} while DELETE has no answer: the server is named within 3 s, exit ${code}`, async () => {
      const nova = await startNova({ deleteDelayMs: 60_000 });
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      nova.inject({ method: 'DELETE', path: /^\/servers\//, hang: true, times: Number.POSITIVE_INFINITY });
      const run = start(['server', 'delete', id, '--wait', '--interval', '50ms'], nova);
      await until(() => nova.requestsTo('DELETE', /^\/servers\//).length > 0);
      const t0 = performance.now();
      run.child.kill(signal);
      // A SIGKILL 3 s later, as a supervisor that escalates would send: the first signal must have ended it (and named the server) before.
      const second = setTimeout(() => run.child.kill('SIGKILL'), 3000);
      const end = await run.ended;
      clearTimeout(second);
      expect(end.signal).toBeNull(); // ended by itself, not by the SIGKILL
      expect(end.code).toBe(code);
      expect(end.ms - t0).toBeLessThan(3000);
      expect(run.stderr()).toContain(id);
    }, 30_000);
  }

  it('two SIGTERMs 50 ms apart while waiting: the server is named, exit 143', async () => {
    const nova = await startNova({ deleteDelayMs: 60_000 });
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const run = start(['server', 'delete', id, '--wait', '--interval', '50ms'], nova);
    await until(() => nova.requestsTo('DELETE', /^\/servers\//).length > 0 && nova.requestsTo('GET', /^\/servers\//).length > 0);
    run.child.kill('SIGTERM');
    await sleep(50);
    run.child.kill('SIGTERM');
    const end = await run.ended;
    expect(end.code).toBe(143);
    expect(run.stderr()).toContain(id);
  }, 30_000);
});
