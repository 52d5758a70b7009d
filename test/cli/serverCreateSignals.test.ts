// Signals during `nova-guard server create` (the built binary, as a child process, against FakeNova
// over HTTP): SIGTERM and SIGHUP are handled as Ctrl-C is, a POST with no answer is said at once,
// and no signal ends the command without naming the server it may leave (or the name to look for).
import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_IMAGES, type FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { CLI, cleanEnv, ensureBuilt } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

/** The CLI as a child process whose stderr can be waited on while it runs. */
function start(args: string[], nova: FakeNova) {
  const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` }), cwd: '/' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return {
    kill: (signal: NodeJS.Signals) => child.kill(signal),
    stderr: () => stderr,
    stdout: () => stdout,
    ended,
    /** Resolves the ms until stderr matched `pattern`, or undefined after `limitMs`. */
    async stderrMatches(pattern: RegExp, limitMs: number): Promise<number | undefined> {
      const t0 = performance.now();
      while (performance.now() - t0 < limitMs) {
        if (pattern.test(stderr)) return performance.now() - t0;
        await sleep(20);
      }
      return undefined;
    },
  };
}

async function until(what: () => boolean, limitMs = 20_000): Promise<void> {
  const t0 = performance.now();
  while (!what()) {
    if (performance.now() - t0 > limitMs) throw new Error('timed out waiting');
    await sleep(20);
  }
}

const createArgs = (name: string): string[] => ['server', 'create', name, '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--wait', '-f', 'value', '-c', 'id'];

describe('signals during server create', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGINT', 130],
  ] as const) {
    it(`${signal} during the wait for ACTIVE names the server and the command that deletes it, exit ${code}, the server kept`, async () => {
      const nova = await startNova({ buildDelayMs: 600_000 });
      const run = start(createArgs(`sig-${signal.toLowerCase()}`), nova);
      // Nova accepted the POST and the guard polls the building server.
      await until(() => nova.requestsTo('GET', /^\/servers\/[0-9a-f-]{36}$/).length > 0);
      const [server] = nova.listServerStates();
      expect(server?.status).toBe('BUILD');
      run.kill(signal);
      const r = await run.ended;
      expect(r.code).toBe(code);
      expect(run.stdout()).toBe('');
      expect(run.stderr()).toContain(`Server ${server!.id} was created and is NOT deleted`);
      expect(run.stderr()).toContain(`nova-guard server delete --wait ${server!.id}`);
      // Kept: no DELETE was sent.
      expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(0);
      expect(nova.getServerState(server!.id)?.status).toBe('BUILD');
    }, 60_000);
  }

  it('Ctrl-C while POST /servers hangs says so within seconds (not at the 30 s request limit); a second Ctrl-C exits 130 naming the server name and the command to find it', async () => {
    const nova = await startNova({ buildDelayMs: 600_000 });
    // A proxy that never answers, while Nova gets the POST and makes the server 300 ms later.
    nova.inject({ method: 'POST', path: '/servers', hang: true, passThroughAfterMs: 300 });
    const run = start(createArgs('hung-post'), nova);
    await until(() => nova.requestsTo('POST', '/servers').length > 0);
    run.kill('SIGINT');
    const firstMs = await run.stderrMatches(/POST \/servers for "hung-post" was sent .* Nova has not answered yet/, 5_000);
    // Before: nothing at all until the client's 30 s request limit.
    expect(firstMs).toBeDefined();
    expect(firstMs!).toBeLessThan(5_000);
    expect(run.stderr()).toContain(`nova-guard server list --name '^hung-post$'`);
    expect(run.stderr()).toMatch(/Waiting up to \d+(\.\d)? s more for Nova's answer/);
    run.kill('SIGINT');
    const r = await run.ended;
    if (process.env['SHOW']) console.log(run.stderr());
    expect(r.code).toBe(130);
    expect(run.stderr()).toContain('A server named "hung-post" may exist or appear shortly');
    expect(run.stderr().match(/nova-guard server list --name '\^hung-post\$'/g)?.length).toBe(2);
    expect(run.stderr()).toMatch(/\(the one whose properties, in nova-guard server show, carry nova-guard-claim-id=[0-9a-f-]+\)/);
    // Nova did make it: the name printed finds it.
    await until(() => nova.listServerStates().length === 1, 5_000);
    expect(nova.listServerStates()[0]!.name).toBe('hung-post');
  }, 60_000);

  it('Ctrl-C while POST /servers hangs, and the answer never comes: at the request limit (2 s here) the command ends by itself, exit 130, naming the name, its claim tag and the commands', async () => {
    const nova = await startNova({ buildDelayMs: 600_000 });
    nova.inject({ method: 'POST', path: '/servers', hang: true });
    const run = start(['--request-timeout', '2s', ...createArgs('never-answered')], nova);
    await until(() => nova.requestsTo('POST', '/servers').length > 0);
    run.kill('SIGINT');
    expect(await run.stderrMatches(/Waiting up to [0-2](\.\d)? s more for Nova's answer/, 5_000)).toBeDefined();
    const r = await run.ended;
    expect(r.code).toBe(130);
    expect(run.stderr()).toContain('A server named "never-answered" may exist or appear shortly');
    expect(run.stderr()).toMatch(/\(the one whose properties, in nova-guard server show, carry nova-guard-claim=[0-9a-f-]+\)/);
    expect(run.stderr()).toContain('nova-guard server delete --wait SERVER_ID');
    // One search by name after the time limit, then no re-sent POST.
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
  }, 60_000);

  it('SIGTERM while the POST is slow to answer: said at once; the answer, when it comes, names the server (kept), exit 143', async () => {
    const nova = await startNova({ buildDelayMs: 600_000 });
    nova.inject({ method: 'POST', path: '/servers', delayMs: 3_000 });
    const run = start(createArgs('slow-post'), nova);
    await until(() => nova.requestsTo('POST', '/servers').length > 0);
    run.kill('SIGTERM');
    expect(await run.stderrMatches(/Interrupted by SIGTERM\. POST \/servers for "slow-post" was sent/, 2_500)).toBeDefined();
    const r = await run.ended;
    if (process.env['SHOW']) console.log(run.stderr());
    expect(r.code).toBe(143);
    const [server] = nova.listServerStates();
    expect(server?.name).toBe('slow-post');
    expect(run.stderr()).toContain(`Server ${server!.id} was created and is NOT deleted`);
    expect(run.stderr()).toContain(`nova-guard server delete --wait ${server!.id}`);
    expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(0);
  }, 60_000);

  it('SIGTERM while waiting for quota headroom: no POST was sent, no server made, exit 143', async () => {
    const nova = await startNova({ buildDelayMs: 600_000, maxTotalCores: 1 });
    nova.addServer({ flavorId: '1', status: 'ACTIVE' }); // holds the one core
    const run = start([...createArgs('no-room'), '--max-wait', '5m'], nova);
    await until(() => /waiting .* for quota headroom/.test(run.stderr()));
    run.kill('SIGTERM');
    const r = await run.ended;
    expect(r.code).toBe(143);
    expect(run.stderr()).toContain('Interrupted before Nova accepted a create: no server was created.');
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
  }, 60_000);
});
