// The rest of openstack's habits through the built binary (issue 21 item 4): the domain, project-id,
// auth-type and application-credential flags reach Keystone (FakeKeystone) and no secret is ever
// printed; a missing password names the flag in use; `limits -f/-c`; `--interval` needs `--watch`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKeystone, FakeNova } from '../../src/testing/index.js';
import { ensureBuilt, runPiped } from './binary.js';

const PASSWORD = 'pw-Sekrit-7f3a';
const AC_SECRET = 'ac-Sekrit-91bd';
let nova: FakeNova;
let keystone: FakeKeystone;

beforeAll(async () => {
  await ensureBuilt();
  nova = await FakeNova.start({ maxTotalCores: 20 });
  keystone = await FakeKeystone.start({
    computeUrl: nova.endpoint,
    projects: [{ id: nova.projectId, name: 'ci' }],
    users: [{ name: 'ci-bot', password: PASSWORD, projects: ['ci'] }],
    applicationCredentials: [{ name: 'ci-ac', secret: AC_SECRET, user: 'ci-bot' }],
  });
}, 120_000);
afterAll(async () => {
  await keystone?.stop();
  await nova?.close();
});

const noSecret = (r: { stdout: string; stderr: string }): void => {
  for (const s of [PASSWORD, AC_SECRET, 'wrong-Sekrit']) {
    expect(r.stdout).not.toContain(s);
    expect(r.stderr).not.toContain(s);
  }
};

describe('--os-* auth flags (openstack habits)', () => {
  it('--os-user-domain-name, --os-project-domain-name and --os-project-id reach Keystone (password auth), nothing secret printed with --debug', async () => {
    const r = await runPiped(
      ['--debug', '--os-auth-url', keystone.authUrl, '--os-username', 'ci-bot', '--os-password', PASSWORD, '--os-user-domain-name', 'Default', '--os-project-domain-name', 'Default', '--os-project-id', nova.projectId, 'limits', '-f', 'json', '-c', 'Resource', '-c', 'Max'],
      {},
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toContainEqual({ Resource: 'cores', Max: 20 });
    noSecret(r);
  });

  it('--os-auth-type v3applicationcredential with --os-application-credential-id/-secret authenticates; the OS_* variables too', async () => {
    const id = keystone.applicationCredentialId('ci-ac');
    const flags = await runPiped(['--os-auth-url', keystone.authUrl, '--os-auth-type', 'v3applicationcredential', '--os-application-credential-id', id, '--os-application-credential-secret', AC_SECRET, 'limits', 'show', '--absolute', '-f', 'value', '-c', 'Value'], {});
    expect(flags.code, flags.stderr).toBe(0);
    expect(keystone.requests.at(-1)?.authMethods).toEqual(['application_credential']);
    const env = await runPiped(['limits', '-f', 'value', '-c', 'Resource'], {
      OS_AUTH_URL: keystone.authUrl,
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_APPLICATION_CREDENTIAL_NAME: 'ci-ac',
      OS_APPLICATION_CREDENTIAL_SECRET: AC_SECRET,
      OS_USERNAME: 'ci-bot',
      OS_USER_DOMAIN_NAME: 'Default',
    });
    expect(env.code, env.stderr).toBe(0);
    expect(env.stdout.split('\n')).toContain('cores');
    noSecret(flags);
    noSecret(env);
  });

  it('a wrong application credential secret or password fails (exit 1) without showing it', async () => {
    const id = keystone.applicationCredentialId('ci-ac');
    const ac = await runPiped(['--debug', '--os-auth-url', keystone.authUrl, '--os-auth-type', 'v3applicationcredential', '--os-application-credential-id', id, '--os-application-credential-secret', 'wrong-Sekrit', 'limits'], {});
    expect(ac.code).toBe(1);
    const pw = await runPiped(['--debug', '--os-auth-url', keystone.authUrl, '--os-username', 'ci-bot', '--os-password', 'wrong-Sekrit', '--os-project-name', 'ci', 'limits'], {});
    expect(pw.code).toBe(1);
    noSecret(ac);
    noSecret(pw);
  });

  it('a missing password names the flag in use (--os-password), or the variable (OS_PASSWORD) when the cloud came from OS_*', async () => {
    const flag = await runPiped(['--os-auth-url', keystone.authUrl, '--os-username', 'ci-bot', '--os-project-name', 'ci', 'limits'], {});
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('auth.password is missing: pass --os-password (or set OS_PASSWORD)');
    const env = await runPiped(['limits'], { OS_AUTH_URL: keystone.authUrl, OS_USERNAME: 'ci-bot', OS_PROJECT_NAME: 'ci' });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain('(set OS_PASSWORD)');
    expect(env.stderr).not.toContain('--os-password');
    const secret = await runPiped(['--os-auth-url', keystone.authUrl, '--os-auth-type', 'v3applicationcredential', '--os-application-credential-id', 'x', 'limits'], {});
    expect(secret.stderr).toContain('pass --os-application-credential-secret');
  });
});

describe('formats and usage (openstack habits)', () => {
  const env = (): Record<string, string> => ({ OS_ENDPOINT: nova.endpoint, OS_TOKEN: `admin:${nova.projectId}` });

  it('limits takes -f/-c like every table: -f value -c Headroom prints the numbers alone', async () => {
    const r = await runPiped(['limits', '-f', 'value', '-c', 'Headroom'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(3);
    for (const line of r.stdout.trim().split('\n')) expect(line).toMatch(/^(\d+|unlimited)$/);
    const show = await runPiped(['limits', 'show', '--absolute', '-f', 'json', '-c', 'Name'], env());
    expect(Object.keys((JSON.parse(show.stdout) as Array<Record<string, unknown>>)[0]!)).toEqual(['Name']);
  });

  it('quota audit --interval (or --samples) without --watch is bad usage: exit 2 and a message, no request', async () => {
    const before = nova.requests.length;
    const r = await runPiped(['quota', 'audit', '--interval', '30s'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--interval applies only with --watch');
    const s = await runPiped(['quota', 'audit', '--samples', '3'], env());
    expect(s.code).toBe(2);
    expect(nova.requests.length).toBe(before);
  });
});
