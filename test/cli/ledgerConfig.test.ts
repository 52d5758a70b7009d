// `nova-guard server create` with a ledger that cannot work (issue 32 item 1), through the built
// binary against FakeNova over HTTP: one line, the LedgerConfigError's message (cause and fix), exit 1
// as other configuration errors, no POST, and none of the lines that contradicted each other ("creates
// go on with the in-process ledger" / "no create is admitted without it"). The optional module is made
// unloadable as on a host without a C++ compiler (test/ledgers/hideModule.mjs, preloaded through
// NODE_OPTIONS: Node's own MODULE_NOT_FOUND). The wrong Redis password: test/redis/ledgerConfig.test.ts.
import { lookup } from 'node:dns/promises';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { closedPort, startNova, tempDir } from '../helpers.js';
import { ensureBuilt, runPiped } from './binary.js';

/** What this machine's resolver answers for a `.invalid` name (see the host-name tests). */
const systemSaysNotFound = await lookup('nosuchhost.invalid').then(
  () => false,
  (e: { code?: unknown }) => e.code === 'ENOTFOUND',
);

const HIDE = fileURLToPath(new URL('../ledgers/hideModule.mjs', import.meta.url));
const PASSWORD = 'pw-5e1b-secret';
const CREATE = ['server', 'create', 'x', '--flavor', 'm1.tiny', '--image', DEFAULT_IMAGES[0]!.name, '--nic', 'none'];


beforeAll(() => ensureBuilt(), 180_000);

describe('server create with a ledger that cannot work: one line, exit 1', () => {
  it('NOVA_GUARD_LEDGER=sqlite:DIR where better-sqlite3 is not installed: the error naming npm install better-sqlite3, no file, no POST', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const dir = tempDir('nova-guard-cli-ledger-');
    const r = await runPiped(CREATE, { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}`, NOVA_GUARD_LEDGER: `sqlite:${dir}/`, NODE_OPTIONS: `--import=${HIDE}`, NOVA_GUARD_TEST_HIDE: 'better-sqlite3' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^nova-guard: the SQLite ledger needs the optional dependency better-sqlite3 .*Fix: npm install better-sqlite3@12 .*or use NOVA_GUARD_LEDGER=in-process \(or unset it\)$/)]);
    // the CLI's words (the ledger came from the environment), not the library's option syntax
    expect(r.stderr).not.toContain("ledger: 'in-process'");
    expect(readdirSync(dir)).toEqual([]);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);

  it('--ledger redis://… where ioredis is not installed: the error naming npm install ioredis, not an outage (no wait lines, no contradiction)', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const r = await runPiped([...CREATE, '--ledger', `redis://127.0.0.1:${await closedPort()}`], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}`, NODE_OPTIONS: `--import=${HIDE}`, NOVA_GUARD_TEST_HIDE: 'ioredis' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^nova-guard: the Redis ledger needs the optional peer dependency ioredis \(5\.x\), which is not installed\. Fix: npm install ioredis@\^5, or use --ledger in-process$/)]);
    expect(r.stderr).not.toContain('NOVA_GUARD_LEDGER'); // the ledger came from --ledger: the environment is not the fix
    expect(r.stderr).not.toMatch(/in-process ledger|no create is admitted|waiting/);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);

  it('NOVA_GUARD_LEDGER=sqlite: under a regular file: the error naming the path and the fix', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const file = join(tempDir('nova-guard-cli-ledger-'), 'file.txt');
    writeFileSync(file, 'x');
    const r = await runPiped(CREATE, { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}`, NOVA_GUARD_LEDGER: `sqlite:${file}/ledger.db` });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^nova-guard: the SQLite ledger cannot create or open ${file}/ledger\\.db: .*Fix: give a path in a directory this user can create and write`))]);
    // plainly why, the file system's code said once, and the fix in the CLI's words
    expect(r.stderr).toContain(`(ENOTDIR: ${file} is not a directory, so ${file} cannot be made). Fix:`);
    expect(r.stderr).not.toContain('EEXIST: EEXIST');
    expect(r.stderr.trimEnd()).toMatch(/or use NOVA_GUARD_LEDGER=in-process \(or unset it\)$/);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);

  it('OS_ENDPOINT + a plain OS_TOKEN (no project id) + NOVA_GUARD_LEDGER=sqlite:DIR/: the missing-project error, its fix in the CLI\'s words, no file, no POST', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const dir = tempDir('nova-guard-cli-ledger-');
    const r = await runPiped(CREATE, { OS_ENDPOINT: nova.endpoint, OS_TOKEN: 'plain-token-0123', NOVA_GUARD_LEDGER: `sqlite:${dir}/` });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      'nova-guard: the SQLite ledger serves one project and the client has no project id. Fix: set OS_PROJECT_ID (or --os-project-id, or auth.project_id in clouds.yaml)',
    ]);
    expect(readdirSync(dir)).toEqual([]);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);

  it('a Redis that refuses the connection (a password in the URL) is an outage, not a setup error: the create goes on; one warning, true and agreeing with the wait lines (their total is the wait it says), no password, no process warning', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const port = await closedPort();
    const started = performance.now();
    const r = await runPiped([...CREATE, '-f', 'value', '-c', 'id', '--ledger', `redis://:${PASSWORD}@127.0.0.1:${port}`], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });
    const endedMs = performance.now() - started;
    expect(r.code).toBe(0);
    // the process ends soon after it prints the server (it printed after closing the guard): before,
    // a probe's time limit and ioredis's disconnect timer of the never-connected socket held it 2 s
    expect(endedMs - r.firstStdoutMs!).toBeLessThan(1500);
    expect(r.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
    const lines = r.stderr.trim().split('\n');
    const waits = lines.filter((l) => l.startsWith('waiting'));
    // one warning, nothing else beside the wait lines: before, "Redis ledger: cannot connect yet", the
    // process warning "going on with the in-process ledger" while the creates waited, and "creates
    // wait up to 3000 ms" where the waits made 5-7 s
    const others = lines.filter((l) => !l.startsWith('waiting'));
    expect(others).toHaveLength(1);
    const m = /creates wait up to (\d+) ms more/.exec(others[0]!);
    expect(m).not.toBeNull();
    const leftMs = Number(m![1]);
    expect(leftMs).toBeGreaterThan(2000);
    expect(leftMs).toBeLessThanOrEqual(3000);
    expect(others[0]).toBe(
      `Warning: quota ledger (redis) is down: Redis ledger at redis://[REDACTED]@127.0.0.1:${port}: Redis cannot be reached (connect ECONNREFUSED 127.0.0.1:${port}); skipping it and probing it from 1000 ms to every 5000 ms; it was never reached: creates wait up to ${leftMs} ms more for it (it may be starting), then admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back`,
    );
    expect(waits.length).toBeGreaterThan(0);
    let total = 0;
    for (const line of waits) {
      const w = /^waiting ([\d.]+) s for the quota ledger redis:\/\/\[REDACTED\]@127\.0\.0\.1:(\d+), out of reach: no create is admitted without it for now \(the warning above says until when\)$/.exec(line);
      expect(w, line).not.toBeNull();
      total += Number(w![1]) * 1000;
    }
    expect(total).toBeLessThanOrEqual(leftMs + 100 * waits.length); // the lines round to 0.1 s
    expect(r.stderr).not.toMatch(/going on with the in-process ledger|NovaGuardLedgerWarning|cannot connect yet|connection lost/);
    expect(r.stderr).not.toContain(PASSWORD);
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(1);
  }, 60_000);

  // The binary asks this machine's resolver: a `.invalid` name gets ENOTFOUND where a DNS answers
  // (a machine without one answers EAI_AGAIN, which goes on as an outage: test/cli/ledgerHost.test.ts).
  it.skipIf(!systemSaysNotFound).each([
    ['--ledger', 'flag'],
    ['NOVA_GUARD_LEDGER', 'env'],
  ] as const)('a Redis host name that does not resolve, from %s: exit 1 before any request, one error naming the host, where to check it and the fix, no password', async (where, how) => {
    const nova = await startNova({ maxTotalCores: 10 });
    const url = `redis://:${PASSWORD}@nosuchhost.invalid:6379`;
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` };
    const started = performance.now();
    const r = how === 'flag' ? await runPiped([...CREATE, '--ledger', url], env) : await runPiped(CREATE, { ...env, NOVA_GUARD_LEDGER: url });
    const ms = performance.now() - started;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const fix = how === 'flag' ? '--ledger in-process' : 'NOVA_GUARD_LEDGER=in-process (or unset it)';
    expect(r.stderr.trim().split('\n')).toEqual([
      'waiting for the quota ledger host nosuchhost.invalid to resolve ...',
      `nova-guard: the Redis ledger's host name nosuchhost.invalid (${where} redis://[REDACTED]@nosuchhost.invalid:6379) does not resolve (getaddrinfo ENOTFOUND nosuchhost.invalid, looked up for 3000 ms). Fix: check the host name in ${where}, or use ${fix}`,
    ]);
    expect(r.stderr).not.toContain(PASSWORD);
    // before any request: not a token, a flavor or a /limits (before, the create went on after 6-9 s)
    expect(nova.requests).toHaveLength(0);
    expect(ms).toBeLessThan(20_000);
  }, 60_000);
});

describe('server create with a Redis ledger URL whose password breaks the URL: its user info never on stderr', () => {
  it("NOVA_GUARD_LEDGER='redis://:my secret pw@' and --ledger with an unencoded '/' and '@': exit 2 (bad input), the rule on stderr, no piece of the password, no POST", async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` };
    for (const [pw, run] of [
      ['my secret pw', () => runPiped(CREATE, { ...env, NOVA_GUARD_LEDGER: 'redis://:my secret pw@' })],
      ['quo"te<p4ss>\nw0rd', () => runPiped(CREATE, { ...env, NOVA_GUARD_LEDGER: 'redis://:quo"te<p4ss>\nw0rd@' })],
      ['s3cr3t@Pr0dPa55w0rdTail/2024', () => runPiped([...CREATE, '--ledger', 'redis://:s3cr3t@Pr0dPa55w0rdTail/2024@127.0.0.1:6379'], env)],
    ] as const) {
      const r = await run();
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/Redis ledger URL "redis:\/\/\[REDACTED\]@/);
      for (let i = 0; i + 4 <= pw.length; i++) expect(r.stderr, pw.slice(i, i + 4)).not.toContain(pw.slice(i, i + 4));
      expect(r.stderr).not.toMatch(/ENOTFOUND|in-process ledger|waiting/);
    }
    expect(nova.requestsTo('POST', /^\/servers$/)).toHaveLength(0);
  }, 60_000);
});
