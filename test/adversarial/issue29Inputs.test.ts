/**
 * Issue 29 attacks with bad input: `forClient`'s endpoint spellings (equal ones accepted, others
 * refused before any file or connection), SQLite ledger paths at their edges, and the `Secret`s of a
 * loaded cloud through copies (spread, JSON round trip, structuredClone): never a secret shown,
 * never `[REDACTED]` sent to Keystone as the password without a word.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { parseLedgerSpec } from '../../src/ledgers/index.js';
import { ValidationError } from '../../src/errors/index.js';
import { clientOptionsFromCloud, loadCloudConfig } from '../../src/config/index.js';
import { KeystoneAuth } from '../../src/auth/index.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';

describe('forClient endpoint spellings (issue 29 attack)', () => {
  let dir = '';
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = '';
  });
  const client = new NovaClient({ endpoint: ENDPOINT, token: 'admin:demo', projectId: 'demo' });

  it.each([
    ['the same', ENDPOINT],
    ['a trailing slash', `${ENDPOINT}/`],
    ['an upper-case host and scheme', 'HTTP://NOVA.EXAMPLE:8774/v2.1'],
    ['the project id after the version', `${ENDPOINT}/demo`],
    ['surrounding blanks', `  ${ENDPOINT}  `],
  ])('%s is the client’s endpoint: accepted', async (_what, endpoint) => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-attack-'));
    const ledger = await SqliteQuotaLedger.forClient(client, { path: `${dir}/`, endpoint });
    await ledger.close();
  });

  it.each([
    ['a path prefix', 'http://nova.example:8774/compute/v2.1'],
    ['another port', 'http://nova.example:8775/v2.1'],
    ['another scheme', 'https://nova.example:8774/v2.1'],
    ['another host', 'http://nova2.example:8774/v2.1'],
    ['another version path', 'http://nova.example:8774/v2'],
  ])('%s is another endpoint: refused with a ValidationError, no file made', async (_what, endpoint) => {
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-attack-'));
    await expect(SqliteQuotaLedger.forClient(client, { path: `${dir}/`, endpoint })).rejects.toThrow(ValidationError);
  });

  it('the default port spelled out equals the port left out', async () => {
    const c = new NovaClient({ endpoint: 'https://nova.example/v2.1', token: 'admin:demo', projectId: 'demo' });
    dir = mkdtempSync(join(tmpdir(), 'nova-guard-attack-'));
    const ledger = await SqliteQuotaLedger.forClient(c, { path: `${dir}/`, endpoint: 'https://nova.example:443/v2.1' });
    await ledger.close();
  });
});

describe('SQLite ledger paths at their edges (issue 29 attack)', () => {
  it.each([
    ['sqlite:~', homedir()],
    ['sqlite:~/', `${homedir()}/`],
    ['sqlite:///abs/l.sqlite', '/abs/l.sqlite'],
    ['  sqlite:/abs/l.sqlite  ', '/abs/l.sqlite'],
    ['sqlite:/', '/'],
  ])('%s is accepted as %s', (spec, path) => {
    expect(parseLedgerSpec(spec)).toEqual({ kind: 'sqlite', path });
  });

  it.each([
    'sqlite:relative.sqlite',
    'sqlite: /abs/l.sqlite',
    'sqlite::memory:',
    'sqlite:file:/abs/l.sqlite',
    'sqlite:FILE:/abs/l.sqlite?mode=memory',
    'sqlite:~root/l.sqlite',
    'sqlite:C:\\ci\\ledger.sqlite',
    'sqlite:\\\\server\\share\\l.sqlite',
    'sqlite://host/abs',
    'sqlite:./l.sqlite',
  ])('%s is refused with a ValidationError', (spec) => {
    expect(() => parseLedgerSpec(spec)).toThrow(ValidationError);
  });

  it.each(['relative.sqlite', ':memory:', 'file::memory:', '~root/x', '', 'C:\\x'])('SqliteQuotaLedger path %j is refused before any file is opened', (path) => {
    expect(() => new SqliteQuotaLedger({ endpoint: ENDPOINT, projectId: 'demo', path })).toThrow(ValidationError);
  });
});

describe('a loaded cloud’s secrets through copies (issue 29 attack)', () => {
  const PASSWORD = 's3cr3t-Pa55word-zz';
  const env = { OS_AUTH_URL: 'http://keystone.example:5000/v3', OS_USERNAME: 'u', OS_PASSWORD: PASSWORD, OS_PROJECT_NAME: 'p', OS_USER_DOMAIN_NAME: 'Default', OS_PROJECT_DOMAIN_NAME: 'Default' };
  const load = () => loadCloudConfig({ env, homeDir: '/nonexistent-nova-guard', cwd: '/nonexistent-nova-guard', systemDirs: [] });

  it('never shows the password: inspect, JSON, String, template, spread copy', () => {
    const config = load();
    const shown = [inspect(config, { depth: 10 }), JSON.stringify(config), `${String(config.auth.password)}`, inspect({ ...config.auth }), JSON.stringify({ ...config })];
    for (const s of shown) expect(s).not.toContain(PASSWORD);
    for (let k = 4; k < PASSWORD.length; k++) for (const s of shown) expect(s).not.toContain(PASSWORD.slice(0, k + 1));
  });

  it('a spread copy of the block still authenticates with the real password (the KeystoneAuth holds it)', () => {
    const config = load();
    const copy = { ...config, auth: { ...config.auth } };
    const { auth } = clientOptionsFromCloud(copy);
    expect((auth as unknown as { secrets(): string[] }).secrets()).toContain(PASSWORD);
  });

  it('a structuredClone of the config is refused with a ValidationError that names the cause (no empty or [object Object] password sent)', () => {
    const config = load();
    expect(() => clientOptionsFromCloud(structuredClone(config))).toThrow(/structuredClone/);
  });

  it('a JSON round trip of the config (password "[REDACTED]") is refused with a ValidationError before any request, not sent to Keystone as the password', () => {
    const config = JSON.parse(JSON.stringify(load())) as ReturnType<typeof load>;
    expect(config.auth.password).toBe('[REDACTED]');
    expect(() => clientOptionsFromCloud(config)).toThrow(ValidationError);
    expect(() => clientOptionsFromCloud(config)).toThrow('password is the text [REDACTED], what a secret becomes in a JSON copy');
  });

  it.each(['token', 'applicationCredentialSecret'] as const)('KeystoneAuth refuses %s "[REDACTED]" too', (key) => {
    const base = key === 'token' ? { method: 'token' as const, projectId: 'p' } : { method: 'application_credential' as const, applicationCredentialId: 'ac' };
    expect(() => new KeystoneAuth({ authUrl: 'http://keystone.example:5000/v3', ...base, [key]: '[REDACTED]' })).toThrow(ValidationError);
  });
});
