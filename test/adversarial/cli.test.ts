/**
 * CLI misuse: every bad flag exits 2 (argparse's code in `openstack`) and every configuration error
 * exits 1 (as `openstack` does), with one clear line (no stack trace), before any request;
 * `server delete --concurrency` is validated and honoured.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { startNova } from '../helpers.js';

interface Run {
  code: number;
  out: string;
  err: string;
}

const savedEnv = { ...process.env };
afterEach(() => {
  // Restored in place: assigning a new object to process.env would leave the files run after this one in
  // the same worker (isolate: false) with a plain object that no longer sets the process's environment
  // (os.homedir() then ignores a HOME a later test sets).
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  process.exitCode = undefined;
});

/** Run the CLI in-process with only `env` among the OS_* / NOVA_* variables. */
async function run(argv: string[], env: Record<string, string> = {}): Promise<Run> {
  for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('NOVA_')) delete process.env[k];
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-cli-'));
  Object.assign(process.env, { XDG_CONFIG_HOME: dir, XDG_CONFIG_DIRS: dir }, env);
  const out: string[] = [];
  const err: string[] = [];
  const spies = [
    vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' '))),
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' '))),
    vi.spyOn(process.stderr, 'write').mockImplementation((s: unknown) => (err.push(String(s)), true)),
  ];
  process.exitCode = undefined;
  try {
    const code = await main(argv);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    for (const s of spies) s.mockRestore();
    process.exitCode = undefined;
  }
}

/** The one message of a refused duration: a bare number needs a unit; anything else is not a duration. */
function durationRefusal(flag: string, value: string, positive: boolean): string {
  if (/^\d+(\.\d+)?$/.test(value)) return `${flag} ${value}: a duration needs a unit: ${flag} ${value}s (seconds) or ${flag} ${value}ms (units: 500ms, 5s, 2m, 1h)`;
  return `${flag} must be a ${positive ? 'positive ' : ''}duration with a unit (500ms, 5s, 2m, 1h), got ${JSON.stringify(value)}`;
}

function cloudsFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'nova-guard-cli-')), 'clouds.yaml');
  writeFileSync(file, text);
  return file;
}

describe('nova-guard misuse', () => {
  it('server delete --concurrency abc: exit 2, no request', async () => {
    const nova = await startNova();
    const r = await run(['server', 'delete', 'x', '--concurrency', 'abc'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({ code: 2, out: '', err: 'nova-guard: --concurrency must be a positive integer, got "abc"' });
    expect(nova.requests).toHaveLength(0);
  });

  it('server delete with one bad id among good ones: exit 2 before any request, nothing deleted', async () => {
    const nova = await startNova();
    const ids = [nova.addServer().id, nova.addServer().id];
    const r = await run(['server', 'delete', ids[0]!, 'a/b', '..', ids[1]!], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({
      code: 2,
      out: '',
      err: `nova-guard: these 2 are not server ids (an id is a non-empty string without '/', '?' or '#', and not '.' or '..'): "a/b", ".."; nothing was deleted`,
    });
    expect(nova.requests).toHaveLength(0);
    for (const id of ids) expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });

  it('server delete with a single bad id names it (exit 2), even when no cloud is configured', async () => {
    const r = await run(['server', 'delete', 'x?y']);
    expect(r).toEqual({
      code: 2,
      out: '',
      err: `nova-guard: this is not a server id (an id is a non-empty string without '/', '?' or '#', and not '.' or '..'): "x?y"; nothing was deleted`,
    });
  });

  it.each(['0x10', '1e3', '0b1', '0o7', '1.5', ' 5', '5 ', 'Infinity', '-5', '0', '+5', '9007199254740993', '50'])('--interval %j is refused (exit 2), before any request', async (value) => {
    const nova = await startNova();
    const id = nova.addServer().id;
    const r = await run(['server', 'delete', id, '--wait', `--interval=${value}`], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({ code: 2, out: '', err: `nova-guard: ${durationRefusal('--interval', value, true)}` });
    expect(nova.requests).toHaveLength(0);
  });

  // One duration syntax: the duration flags of reap and audit refuse what --interval refuses (0s is
  // a duration where it makes sense: --pass-interval, --retry-delay, --interval, --older-than; a bare
  // number is refused everywhere, see test/cli/durationFlags.test.ts).
  it.each(
    ['0x10', '1e3', '0b1', '1.5', ' 5', '5 ', 'Infinity', '-5', '+5', '9007199254740993', '5 s', '2y', '0', '10'].flatMap((value) => [
      [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h', '--pass-interval', value], '--pass-interval', value],
      [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h', '--timeout', value], '--timeout', value],
      [['server', 'reap', '--prefix', 'ci-', '--older-than', value], '--older-than', value],
      [['quota', 'audit', '--retry-delay', value], '--retry-delay', value],
      [['quota', 'audit', '--watch', '--interval', value], '--interval', value],
    ]),
  )('%j is refused (exit 2), before any request', async (argv, flag, value) => {
    const nova = await startNova();
    const r = await run(argv as string[], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({ code: 2, out: '', err: `nova-guard: ${durationRefusal(flag as string, value as string, flag === '--timeout')}` });
    expect(nova.requests).toHaveLength(0);
  });

  it.each([
    [['server', 'delete', 'x', '--concurrency', '0x2'], '--concurrency must be a positive integer, got "0x2"'],
    [['server', 'delete', 'x', '--timeout-ms', '1e5'], '--timeout-ms must be a positive duration with a unit (500ms, 5s, 2m, 1h), got "1e5"'],
    [['server', 'reap', '--prefix', 'ci-', '--older-than', '2h', '--concurrency', '1e1'], '--concurrency must be a positive integer, got "1e1"'],
    [['quota', 'audit', '--attempts', '0x3'], '--attempts must be a positive integer, got "0x3"'],
    [['quota', 'audit', '--ghost-concurrency', '2.0'], '--ghost-concurrency must be a positive integer, got "2.0"'],
    [['--request-timeout-ms', '0x100', 'limits'], '--request-timeout-ms must be a positive duration with a unit (500ms, 5s, 2m, 1h), got "0x100"'],
    [['--request-timeout', '100', 'limits'], '--request-timeout 100: a duration needs a unit: --request-timeout 100s (seconds) or --request-timeout 100ms (units: 500ms, 5s, 2m, 1h)'],
  ])('%j is refused: exit 2, one line', async (argv, message) => {
    const nova = await startNova();
    const r = await run(argv, { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({ code: 2, out: '', err: `nova-guard: ${message}` });
    expect(nova.requests).toHaveLength(0);
  });

  it('durations with units work: --interval 50ms --timeout 60s --concurrency 2', async () => {
    const nova = await startNova();
    const id = nova.addServer().id;
    const r = await run(['server', 'delete', id, '--interval', '50ms', '--timeout', '60s', '--concurrency', '2'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^${id}: delete-requested `));
  });

  it('a bad flag is reported as such even when no cloud is configured', async () => {
    const r = await run(['server', 'delete', 'x', '--timeout', 'abc']);
    expect(r).toEqual({ code: 2, out: '', err: 'nova-guard: --timeout must be a positive duration with a unit (500ms, 5s, 2m, 1h), got "abc"' });
  });

  it('--os-cacert naming a missing file: exit 1 (a configuration error, as openstack) and the file, not a raw ENOENT', async () => {
    const nova = await startNova();
    const r = await run(['limits', '--os-cacert', '/nonexistent/ca.pem'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r).toEqual({ code: 1, out: '', err: 'nova-guard: cannot read the CA certificate file /nonexistent/ca.pem (cacert): ENOENT' });
  });

  it('--os-cloud naming a cloud that is not there: exit 1, naming the file and its clouds', async () => {
    const file = cloudsFile('clouds:\n  a:\n    auth: {auth_url: "http://127.0.0.1:1", username: u, password: pw-secret}\n');
    const r = await run(['limits', '--os-cloud', 'nope'], { OS_CLIENT_CONFIG_FILE: file });
    expect(r).toEqual({ code: 1, out: '', err: `nova-guard: cloud "nope" not found in ${file} (clouds: a)` });
  });

  it('a broken clouds.yaml is reported, not hidden behind "no cloud given"', async () => {
    const file = cloudsFile('clouds:\n  a:\n    auth:\n      password: "pw-secret\n      username: u\n');
    const r = await run(['limits'], { OS_CLIENT_CONFIG_FILE: file });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^nova-guard: cannot parse ${file} at line \\d+, column \\d+: not valid YAML \\(\\w+\\)$`));
    expect(r.err).not.toContain('pw-secret');
  });

  it('a single cloud whose Keystone refuses the connection says so (exit 1), not "no cloud given"', async () => {
    const file = cloudsFile('clouds:\n  a:\n    auth: {auth_url: "http://127.0.0.1:1", username: u, password: pw-secret, project_name: p}\n');
    const r = await run(['limits'], { OS_CLIENT_CONFIG_FILE: file });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^nova-guard: Keystone POST http:\/\/127\.0\.0\.1:1\/v3\/auth\/tokens failed without a response: ECONNREFUSED/);
  });

  it('nothing configured at all: the usage message, exit 1 (openstack: a configuration error)', async () => {
    const r = await run(['limits']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'nova-guard: no cloud given: pass --os-cloud (or OS_CLOUD), or --os-auth-url and the other --os-* options (or OS_AUTH_URL and the other OS_* variables), or --os-endpoint and --os-token',
    );
  });
});

describe('server delete --concurrency', () => {
  it('at most N DELETEs are in flight', async () => {
    const nova = await startNova();
    const ids = [1, 2, 3, 4, 5, 6].map(() => nova.addServer().id);
    nova.inject({ method: 'DELETE', path: /^\/servers\//, delayMs: 40, times: Number.POSITIVE_INFINITY });
    const r = await run(['server', 'delete', ...ids, '--concurrency', '2'], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' });
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines.map((l) => l.replace(/\d+ ms\)$/, 'N ms)')).sort()).toEqual(ids.map((id) => `${id}: delete-requested (0 polls, N ms)`).sort());
    const arrivals = nova.requestsTo('DELETE', /^\/servers\//).map((q) => q.timeMs);
    expect(arrivals).toHaveLength(6);
    // Two at a time: the third DELETE is sent only after one of the first two was answered (40 ms).
    expect(arrivals[2]! - arrivals[0]!).toBeGreaterThanOrEqual(35);
    expect(arrivals[4]! - arrivals[0]!).toBeGreaterThanOrEqual(75);
  });
});

describe('main() called twice in one process', () => {
  it('the second call does not inherit the first one\'s exit code, and process.exitCode is left alone', async () => {
    const nova = await startNova();
    const env = { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: 'admin:demo' };
    const spies = [vi.spyOn(console, 'log').mockImplementation(() => undefined), vi.spyOn(console, 'error').mockImplementation(() => undefined)];
    try {
      for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('NOVA_')) delete process.env[k];
      Object.assign(process.env, env);
      process.exitCode = undefined;
      // A string that cannot be a server id is bad usage (exit 2, nothing deleted); it was 1 before
      // issue 12 asked for every id to be checked before the first DELETE.
      expect(await main(['server', 'delete', 'a/b'])).toBe(2);
      expect(process.exitCode).toBeUndefined();
      expect(await main(['limits'])).toBe(0);
    } finally {
      for (const s of spies) s.mockRestore();
    }
  });
});
