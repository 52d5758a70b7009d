// `server delete` with `openstack` habits through the built binary against FakeNova over HTTP:
// names, --ignore-missing, durations, the first line when Nova is slow, failures as they happen, Ctrl-C.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova } from '../helpers.js';
import { ensureBuilt, runPiped, runUntilStderr } from './binary.js';

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

const envOf = (nova: FakeNova): Record<string, string> => ({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });

describe('server delete finds names like openstack', () => {
  it('an exact name is deleted; a missing one and a duplicated one fail with openstack messages (exit 1)', async () => {
    const nova = await startNova({ deleteDelayMs: 0 });
    const one = nova.addServer({ name: 'web-1', status: 'ACTIVE' }).id;
    nova.addServer({ name: 'web-10', status: 'ACTIVE' });
    nova.addServer({ name: 'dup', status: 'ACTIVE' });
    nova.addServer({ name: 'dup', status: 'ACTIVE' });
    const r = await runPiped(['server', 'delete', 'web-1', 'nope', 'dup'], envOf(nova));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^${one}: delete-requested `));
    expect(r.stderr).toContain("Failed to delete server with name or ID 'nope': No server with a name or ID of 'nope' exists.");
    expect(r.stderr).toContain("Failed to delete server with name or ID 'dup': More than one server exists with the name 'dup'.");
    expect(r.stderr).toContain('2 of 3 servers failed to delete.');
    expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(1);
  });

  it('--ignore-missing: a server that does not exist is not a failure (exit 0)', async () => {
    const nova = await startNova();
    const r = await runPiped(['server', 'delete', 'gone-already', '--ignore-missing'], envOf(nova));
    expect(r).toMatchObject({ code: 0, stderr: '' });
  });

  it('durations with units: --timeout 30s --interval 50ms (nothing on stderr)', async () => {
    const nova = await startNova({ deleteDelayMs: 20, deletedWindowMs: 50 });
    const a = nova.addServer({ status: 'ACTIVE' }).id;
    const r = await runPiped(['server', 'delete', a, '--wait', '--timeout', '30s', '--interval', '50ms'], envOf(nova));
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(new RegExp(`^${a}: deleted `));
  });
});

describe('a slow Nova, failures and Ctrl-C', () => {
  it('a first line within about a second while Nova has not answered, before the result', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', delayMs: 4000 });
    const r = await runPiped(['limits', 'show', '--absolute', '-f', 'value', '-c', 'Name'], envOf(nova));
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`waiting for nova at ${nova.endpoint} ... (attempt 1 of 5)\n`);
    // The line came while the request was still unanswered (4 s), not with the answer: measured
    // against the answer's own arrival on stdout, so node's start-up on a busy machine cancels out.
    expect(r.firstStderrMs).toBeDefined();
    expect(r.firstStdoutMs).toBeDefined();
    expect(r.firstStderrMs!).toBeLessThan(r.firstStdoutMs! - 1500);
  });

  it('a failure is printed when it happens, not when the last wait ends', async () => {
    const nova = await startNova({ deleteDelayMs: 2500, deletedWindowMs: 0 });
    const locked = nova.addServer({ status: 'ACTIVE' }).id;
    const slow = nova.addServer({ status: 'ACTIVE' }).id;
    nova.lock(locked);
    const started = performance.now();
    // Not admin: Nova lets an admin delete a locked server.
    const r = await runPiped(['server', 'delete', locked, slow, '--wait', '--interval', '100ms'], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `ci-bot:${nova.projectId}` });
    const totalMs = performance.now() - started;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^Failed to delete server with name or ID '${locked}': `));
    expect(r.firstStderrMs).toBeLessThan(totalMs - 1000);
  });

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`${signal} during --wait names the servers asked to delete and not confirmed gone, and the command that waits for them (exit ${code})`, async () => {
      const nova = await startNova({ deleteDelayMs: 60_000 });
      const slow = nova.addServer({ status: 'ACTIVE' }).id;
      const r = await runPiped(['server', 'delete', slow, '--wait', '--interval', '50ms'], envOf(nova), (pid) => {
        const tick = setInterval(() => {
          // After the DELETE and one look at the server, stop it.
          if (nova.requestsTo('DELETE', /^\/servers\//).length > 0 && nova.requestsTo('GET', /^\/servers\//).length > 1) {
            clearInterval(tick);
            process.kill(pid, signal);
          }
        }, 20);
      });
      expect(r.code).toBe(code);
      expect(r.stderr).toContain(`Asked to delete and NOT confirmed gone (1 of 1; Nova goes on deleting them): ${slow}.`);
      expect(r.stderr).toContain(`Wait for them with\n  nova-guard server delete --wait ${slow}`);
      expect(nova.getServerState(slow)).toBeDefined();
    });
  }
});


describe('a Nova that refuses every connection', () => {
  it('server delete --wait says the refusal (ECONNREFUSED) within about a second, long before its 5 min timeout, and gives up (Nova never answered)', async () => {
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const id = '8d3b2c1e-0000-4000-8000-0000000000aa';
    const r = await runUntilStderr(['server', 'delete', id, '--wait'], { OS_ENDPOINT: `http://127.0.0.1:${port}/v2.1`, OS_TOKEN: 'admin:demo' }, /ECONNREFUSED/, 20_000);
    expect(r.stderr).toMatch(new RegExp(`^Failed to delete server with name or ID '${id}': DELETE \\S+ failed without a response: ECONNREFUSED; is Nova running at http://127\\.0\\.0\\.1:${port}/v2\\.1\\?$`, 'm'));
    // Node's start-up included; on main nothing was printed for 300 s.
    expect(r.matchedMs).toBeLessThan(10_000);
  });
});
