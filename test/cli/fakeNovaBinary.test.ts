// `nova-guard fake-nova` through the built binary: the line to paste into another shell, and a taken port.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { NovaClient, QuotaExceededError } from '../../src/index.js';
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

/** Start `fake-nova` with `args`; its endpoint and project once printed, and `stop(signal)` for the rest of stdout and the exit. */
function startFakeNovaBinary(args: string[]): Promise<{ endpoint: string; projectId: string; stop: (signal: NodeJS.Signals) => Promise<{ stdout: string; code: number | null }> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'fake-nova', ...args], { env: cleanEnv({}), cwd: '/' });
    let stdout = '';
    const closed = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const limit = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fake-nova printed no endpoint: ${stdout}`));
    }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /export OS_ENDPOINT=(\S+) OS_TOKEN=fake:(\S+)\n/.exec(stdout);
      if (m === null) return;
      clearTimeout(limit);
      resolve({
        endpoint: m[1]!,
        projectId: m[2]!,
        stop: async (signal) => {
          child.kill(signal);
          const code = await closed;
          return { stdout, code };
        },
      });
    });
  });
}

describe('nova-guard fake-nova: the account when stopped', () => {
  it('SIGTERM: one line with the requests served, the quota 403s sent and the servers left (with their ids)', async () => {
    const fake = await startFakeNovaBinary(['--cores', '1', '--build-delay', '0s']);
    const client = new NovaClient({ endpoint: fake.endpoint, token: `fake:${fake.projectId}`, microversion: '2.37' });
    const body = { flavorRef: '1', imageRef: 'cirros', networks: 'none' as const };
    const kept = await client.createServer({ ...body, name: 'kept' });
    await expect(client.createServer({ ...body, name: 'refused' })).rejects.toBeInstanceOf(QuotaExceededError);
    await client.getLimits();
    const r = await fake.stop('SIGTERM');
    expect(r.code).toBe(0);
    const last = r.stdout.trimEnd().split('\n').at(-1);
    expect(last).toBe(`fake Nova stopped (SIGTERM): 3 requests served, 1 quota 403 sent, 1 server left: ${kept.id}`);
  });

  it('SIGINT with nothing served: 0 of each; many servers left are counted, not listed', async () => {
    const idle = await startFakeNovaBinary([]);
    const quiet = await idle.stop('SIGINT');
    expect(quiet.code).toBe(0);
    expect(quiet.stdout.trimEnd().split('\n').at(-1)).toBe('fake Nova stopped (SIGINT): 0 requests served, 0 quota 403s sent, 0 servers left');
    const busy = await startFakeNovaBinary(['--build-delay', '0s']);
    const client = new NovaClient({ endpoint: busy.endpoint, token: `fake:${busy.projectId}`, microversion: '2.37' });
    for (let i = 0; i < 6; i++) await client.createServer({ name: `s${i}`, flavorRef: '1', imageRef: 'cirros', networks: 'none' });
    const r = await busy.stop('SIGINT');
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('fake Nova stopped (SIGINT): 6 requests served, 0 quota 403s sent, 6 servers left');
  });
});

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
    const r = await runFakeNovaUntil(['--delete-delay', '5s', '--build-delay', '500ms'], /OS_TOKEN=\S+\n/);
    const m = /^fake Nova listening on http:\/\/127\.0\.0\.1:(\d+)\/v2\.1 /m.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    expect(m![1]).not.toBe('8774');
    expect(r.stdout).toContain('nova-guard server create try --flavor m1.tiny');
    expect(r.code).toBe(0);
  });

  it('a delay that is not a duration, or a bare number, is bad usage (exit 2) naming the flag', async () => {
    const r = await runPiped(['fake-nova', '--delete-delay-ms', '5 s'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('nova-guard: --delete-delay-ms must be a duration with a unit (500ms, 5s, 2m, 1h), got "5 s"\n');
    const bare = await runPiped(['fake-nova', '--build-delay', '500'], {});
    expect(bare).toMatchObject({ code: 2, stdout: '', stderr: 'nova-guard: --build-delay 500: a duration needs a unit: --build-delay 500s (seconds) or --build-delay 500ms (units: 500ms, 5s, 2m, 1h)\n' });
  });
});
