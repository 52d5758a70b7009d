/**
 * A rejected token gets a hint naming where it came from (src/cli/tokenHint.ts): a 401 from Nova or
 * Keystone to `OS_TOKEN`, `--os-token`, `NOVA_TOKEN` says `; is the token in OS_TOKEN expired or
 * wrong?`, as a refused connection asks whether Nova runs (`refusedHint`). A password's 401 gets no
 * token hint, and the token itself is never printed. In process, against FakeNova and FakeKeystone.
 */
import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { FakeKeystone, FakeNova } from '../../src/testing/index.js';

const BAD = 'expired-Sekrit-4c1d';
const PASSWORD = 'pw-Sekrit-0b7e';
const HINT = "expired or wrong? ('openstack token issue' gives a new one)";
let nova: FakeNova;
let keystone: FakeKeystone;

beforeAll(async () => {
  // Nova accepts only Keystone's valid tokens (keystonemiddleware); Keystone's catalog names Nova.
  nova = await FakeNova.start({ validateToken: (t) => keystone?.isValid(t) ?? false });
  keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, projects: [{ id: nova.projectId, name: 'ci' }], users: [{ name: 'ci-bot', password: PASSWORD, projects: ['ci'] }] });
});
afterAll(async () => {
  await nova?.close();
  await keystone?.stop();
});

const savedEnv = { ...process.env };
afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  process.exitCode = undefined;
});

/** Run the CLI in process with only `env` of the OS_/NOVA_ variables (no clouds.yaml): exit code and stderr. */
async function run(argv: string[], env: Record<string, string>): Promise<{ code: number; err: string }> {
  for (const k of Object.keys(process.env)) if (k.startsWith('OS_') || k.startsWith('NOVA_')) delete process.env[k];
  Object.assign(process.env, { XDG_CONFIG_HOME: '/nonexistent', XDG_CONFIG_DIRS: '/nonexistent', ...env });
  const err: string[] = [];
  const spies = [
    vi.spyOn(console, 'log').mockImplementation(() => undefined),
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' '))),
    vi.spyOn(process.stderr, 'write').mockImplementation((s: unknown) => (err.push(String(s).trimEnd()), true)),
  ];
  try {
    const code = await main(argv);
    return { code, err: err.join('\n') };
  } finally {
    for (const s of spies) s.mockRestore();
    process.exitCode = undefined;
  }
}

describe('a rejected token names where it came from', () => {
  it('OS_TOKEN with OS_ENDPOINT, Nova answers 401: the failure line asks whether OS_TOKEN is expired or wrong', async () => {
    const r = await run(['limits'], { OS_ENDPOINT: nova.endpoint, OS_TOKEN: BAD });
    expect(r.code).toBe(1);
    expect(r.err.trimEnd().split('\n').at(-1)).toMatch(/^nova-guard: The request you have made requires authentication\. \(GET .*\/limits, request req-[0-9a-f-]+\); is the token in OS_TOKEN expired or wrong\? \('openstack token issue' gives a new one\)$/);
    expect(r.err).not.toContain(BAD);
  });

  it('--os-token and NOVA_TOKEN are named as given', async () => {
    const flag = await run(['--os-token', BAD, '--os-endpoint', nova.endpoint, 'server', 'list'], {});
    expect(flag.err).toContain(`; is the token in --os-token ${HINT}`);
    const old = await run(['quota', 'show', nova.projectId], { NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: BAD });
    expect(old.err).toContain(`; is the token in NOVA_TOKEN ${HINT}`);
    expect(flag.err + old.err).not.toContain(BAD);
  });

  it('server delete, quota audit and server reap say it on their own failure lines', async () => {
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: BAD };
    const del = await run(['server', 'delete', 'some-server'], env);
    expect(del.err).toContain(`Failed to delete server with name or ID 'some-server': `);
    expect(del.err).toContain(`; is the token in OS_TOKEN ${HINT}`);
    const audit = await run(['quota', 'audit'], env);
    expect(audit.err).toMatch(new RegExp(`^nova-guard quota audit: AuthError: .*; is the token in OS_TOKEN expired or wrong\\?`, 'm'));
    const reap = await run(['server', 'reap', '--prefix', 'ci-', '--older-than', '2h'], env);
    expect(reap.err).toMatch(new RegExp(`^nova-guard server reap: AuthError: .*; is the token in OS_TOKEN expired or wrong\\?`, 'm'));
  });

  it('OS_TOKEN with OS_AUTH_URL, Keystone answers 401 to the token: the hint names OS_TOKEN', async () => {
    const r = await run(['limits'], { OS_AUTH_URL: keystone.authUrl, OS_TOKEN: BAD, OS_PROJECT_NAME: 'ci', OS_PROJECT_DOMAIN_NAME: 'Default' });
    expect(r.code).toBe(1);
    expect(r.err).toContain(`; is the token in OS_TOKEN ${HINT}`);
    expect(r.err).not.toContain(BAD);
  });

  it('a wrong password (Keystone 401) gets no token hint; a good token gets no failure at all', async () => {
    const r = await run(['limits'], { OS_AUTH_URL: keystone.authUrl, OS_USERNAME: 'ci-bot', OS_PASSWORD: 'wrong-Sekrit', OS_PROJECT_NAME: 'ci', OS_USER_DOMAIN_NAME: 'Default', OS_PROJECT_DOMAIN_NAME: 'Default' });
    expect(r.code).toBe(1);
    expect(r.err).not.toContain('token in');
    const ok = await run(['limits'], { OS_AUTH_URL: keystone.authUrl, OS_USERNAME: 'ci-bot', OS_PASSWORD: PASSWORD, OS_PROJECT_NAME: 'ci', OS_USER_DOMAIN_NAME: 'Default', OS_PROJECT_DOMAIN_NAME: 'Default' });
    expect(ok.code, ok.err).toBe(0);
  });
});

describe('a rejected token is never shown, whole or in part, whatever the 401 echoes', () => {
  const LONG = 'gAAAAABk-expired-Sekrit-4c1d-0123456789abcdef';

  it('Nova or Keystone echoing the token cut short, percent-encoded or in the request body they got: the failure line names OS_TOKEN and shows none of it', async () => {
    // A Keystone (and a Nova behind it) that answer every request 401, echoing what they got.
    const echo = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 401, title: 'Unauthorized', message: `token ${LONG.slice(0, 20)}... (${encodeURIComponent(LONG)}) rejected; got ${body}` } }));
      });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(echo.address() as { port: number }).port}`;
    try {
      const viaKeystone = await run(['limits'], { OS_AUTH_URL: `${base}/v3`, OS_TOKEN: LONG, OS_PROJECT_NAME: 'ci', OS_PROJECT_DOMAIN_NAME: 'Default' });
      const viaNova = await run(['limits'], { OS_ENDPOINT: `${base}/v2.1`, OS_TOKEN: LONG });
      for (const r of [viaKeystone, viaNova]) {
        expect(r.code).toBe(1);
        expect(r.err).toContain(`; is the token in OS_TOKEN ${HINT}`);
        expect(r.err).toContain('[REDACTED]');
        expect(r.err).not.toContain(LONG.slice(0, 10));
        expect(r.err).not.toContain('Sekrit');
      }
    } finally {
      await new Promise((r) => echo.close(r));
    }
  });
});
