// `nova-guard fake-nova` through the built binary: the line to paste into another shell, and a taken port.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, ensureBuilt, runPiped } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

/** Run `fake-nova` until stdout has a line matching `pattern` (then SIGTERM); stdout and the exit code. */
function runFakeNovaUntil(args: string[], pattern: RegExp, limitMs = 15_000): Promise<{ stdout: string; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'fake-nova', ...args], { env: cleanEnv({}), cwd: '/' });
    let stdout = '';
    // One SIGTERM only: the lines after the matching one arrive as more chunks, and a second SIGTERM
    // during the orderly stop is the "stop now" signal (exit by signal, not 0).
    let stopping = false;
    const stopOnce = (): void => {
      if (stopping) return;
      stopping = true;
      child.kill('SIGTERM');
    };
    const limit = setTimeout(stopOnce, limitMs);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (pattern.test(stdout)) stopOnce();
    });
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      resolve({ stdout, code, signal });
    });
  });
}

describe('nova-guard fake-nova', () => {
  it('prints `export OS_ENDPOINT=... OS_TOKEN=...` (the variables the CLI reads), and stops on SIGTERM', async () => {
    const r = await runFakeNovaUntil(['--port', '0'], /OS_TOKEN=\S+\n/);
    const m = /^ {2}export OS_ENDPOINT=(http:\/\/127\.0\.0\.1:\d+\/v2\.1) OS_TOKEN=fake:(\S+)$/m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(r.stdout).toContain(`fake Nova listening on ${m![1]} (project ${m![2]})`);
    expect(r.stdout).not.toContain('NOVA_ENDPOINT');
    expect(r.code).toBe(0);
  });

  it('a taken port: exit 1, saying the port is taken and suggesting --port 0', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runPiped(['fake-nova', '--port', String(port)], {});
      expect(r).toMatchObject({ code: 1, stdout: '' });
      expect(r.stderr).toBe(`nova-guard: port ${port} on 127.0.0.1 is taken (EADDRINUSE): pass --port 0 for a free port, or another --port\n`);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('without --port: a free port (not Nova\'s 8774), the URL it bound printed; delays take units (5s, 500ms)', async () => {
    const r = await runFakeNovaUntil(['--delete-delay-ms', '5s', '--build-delay-ms', '500ms'], /OS_TOKEN=\S+\n/);
    const m = /^fake Nova listening on http:\/\/127\.0\.0\.1:(\d+)\/v2\.1 /m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(m![1]).not.toBe('8774');
    expect(r.stdout).toContain('nova-guard server create try --flavor m1.tiny');
    expect(r.code).toBe(0);
  });

  it('a delay that is not a duration is bad usage (exit 2) naming the flag', async () => {
    const r = await runPiped(['fake-nova', '--delete-delay-ms', '5 s'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--delete-delay-ms must be a duration');
  });
});
