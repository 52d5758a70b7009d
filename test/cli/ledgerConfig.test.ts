// `nova-guard server create` with a ledger that cannot work (issue 32 item 1), through the built
// binary against FakeNova over HTTP: one line, the LedgerConfigError's message (cause and fix), exit 1
// as other configuration errors, no POST, and none of the lines that contradicted each other ("creates
// go on with the in-process ledger" / "no create is admitted without it"). The optional module is made
// unloadable as on a host without a C++ compiler (test/ledgers/hideModule.mjs, preloaded through
// NODE_OPTIONS: Node's own MODULE_NOT_FOUND). The wrong Redis password: test/redis/ledgerConfig.test.ts.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGES } from '../../src/testing/index.js';
import { closedPort, startNova, tempDir } from '../helpers.js';
import { ensureBuilt, runPiped } from './binary.js';

const HIDE = fileURLToPath(new URL('../ledgers/hideModule.mjs', import.meta.url));
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

  it('a Redis that refuses the connection is an outage, not a setup error: the create goes on, and the warning and the wait lines agree (a wait of up to 3 s, then alone)', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const r = await runPiped([...CREATE, '-f', 'value', '-c', 'id', '--ledger', `redis://127.0.0.1:${await closedPort()}`], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.stderr).toMatch(/Warning: quota ledger \(redis\) is down: .*it was never reached: creates wait up to 3000 ms for it \(it may be starting\), then go on with the in-process ledger/);
    expect(r.stderr).not.toMatch(/while other hosts may be admitting on it|connection lost/);
    for (const line of r.stderr.split('\n').filter((l) => l.startsWith('waiting'))) expect(line).toMatch(/out of reach: no create is admitted without it for now/);
    // the guard's fallback warning is one of the command's `Warning:` lines, not Node's default print of
    // process.emitWarning (before: `(node:PID) NovaGuardLedgerWarning: …` and `(Use \`node --trace-warnings ...\``)
    expect(r.stderr).toMatch(/^Warning: quota ledger \(redis\) failed \(Redis ledger: Redis cannot be reached .*\): going on with the in-process ledger/m);
    expect(r.stderr).not.toMatch(/\(node:\d+\)|NovaGuardLedgerWarning|--trace-warnings/);
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
