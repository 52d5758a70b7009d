/** loadCloudConfig: clouds.yaml search and secure.yaml merge, OS_CLOUD, the environment cloud, errors. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientOptionsFromCloud, keystoneOptionsFromCloud, loadCloudConfig, type LoadCloudConfigOptions } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors/index.js';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { Secret, revealSecret } from '../../src/core/secret.js';

/** An auth block with its secrets revealed (they are Secrets in a loaded config). */
const revealed = (auth: object): Record<string, unknown> => Object.fromEntries(Object.entries(auth).map(([k, v]) => [k, v instanceof Secret ? v.reveal() : v]));

let root: string;
let cwd: string;
let home: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'nova-guard-config-'));
  cwd = join(root, 'cwd');
  home = join(root, 'home');
  mkdirSync(cwd, { recursive: true });
  mkdirSync(join(home, '.config', 'openstack'), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, text: string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** The ConfigError `fn` throws. */
function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

/** Hermetic load: only the temp directories are searched. */
function load(env: Record<string, string> = {}, options: LoadCloudConfigOptions = {}) {
  return loadCloudConfig({ env, cwd, homeDir: home, systemDirs: [join(root, 'etc')], ...options });
}

const CLOUDS = `
clouds:
  prod:
    auth:
      auth_url: https://keystone.example:5000
      username: ci-bot
      project_name: ci
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
  other:
    auth:
      auth_url: https://other.example/identity/v3
      application_credential_id: ac-id
    auth_type: v3applicationcredential
`;
const SECURE = `
clouds:
  prod:
    auth:
      password: s3cret-from-secure
  other:
    auth:
      application_credential_secret: ac-s3cret
`;

describe('clouds.yaml and secure.yaml', () => {
  it('merges secure.yaml over clouds.yaml and selects with OS_CLOUD', () => {
    const clouds = write(join(home, '.config', 'openstack', 'clouds.yaml'), CLOUDS);
    const secure = write(join(home, '.config', 'openstack', 'secure.yaml'), SECURE);
    const c = load({ OS_CLOUD: 'prod' });
    expect({ ...c, auth: revealed(c.auth) }).toEqual({
      name: 'prod',
      auth_type: 'password',
      auth: {
        auth_url: 'https://keystone.example:5000',
        username: 'ci-bot',
        password: 's3cret-from-secure',
        project_name: 'ci',
        user_domain_name: 'Default',
        project_domain_name: 'Default',
      },
      region_name: 'RegionOne',
      interface: 'internal',
      cacert: undefined,
      cert: undefined,
      key: undefined,
      api_timeout_ms: undefined,
      regions: ['RegionOne'],
      verify: true,
      insecure: false,
      compute_api_version: undefined,
      compute_endpoint_override: undefined,
      source: { file: clouds, secureFile: secure, env: false },
      warnings: [],
    });
    const other = load({ OS_CLOUD: 'other' });
    expect(other.auth_type).toBe('v3applicationcredential');
    expect(revealSecret(other.auth.application_credential_secret, 'secret')).toBe('ac-s3cret');
    // The cloud option beats OS_CLOUD.
    expect(load({ OS_CLOUD: 'other' }, { cloud: 'prod' }).name).toBe('prod');
  });

  it('searches cwd first, then ~/.config/openstack, then the system directories; yaml, yml, json', () => {
    write(join(root, 'etc', 'clouds.yaml'), 'clouds: {etc: {auth: {auth_url: "http://etc", token: t}}}');
    expect(load().name).toBe('etc');
    write(join(home, '.config', 'openstack', 'clouds.json'), JSON.stringify({ clouds: { homejson: { auth: { auth_url: 'http://h', token: 't' } } } }));
    expect(load().name).toBe('homejson');
    write(join(home, '.config', 'openstack', 'clouds.yml'), 'clouds: {homeyml: {auth: {auth_url: "http://h", token: t}}}');
    expect(load().name).toBe('homeyml');
    write(join(cwd, 'clouds.yaml'), 'clouds: {cwd: {auth: {auth_url: "http://c", token: t}}}');
    expect(load().name).toBe('cwd');
    const explicit = write(join(root, 'elsewhere', 'my.yaml'), 'clouds: {explicit: {auth: {auth_url: "http://e", token: t}}}');
    expect(load({ OS_CLIENT_CONFIG_FILE: explicit }).name).toBe('explicit');
    expect(load({ OS_CLIENT_CONFIG_FILE: explicit }).source.file).toBe(explicit);
    // XDG_CONFIG_HOME comes before ~/.config/openstack (but after cwd).
    rmSync(join(cwd, 'clouds.yaml'));
    write(join(root, 'xdg', 'openstack', 'clouds.yaml'), 'clouds: {xdg: {auth: {auth_url: "http://x", token: t}}}');
    expect(load({ XDG_CONFIG_HOME: join(root, 'xdg') }).name).toBe('xdg');
  });

  it('takes secure.yaml from OS_CLIENT_SECURE_FILE first', () => {
    write(join(cwd, 'clouds.yaml'), CLOUDS);
    write(join(cwd, 'secure.yaml'), SECURE);
    const secure = write(join(root, 's', 'sec.yaml'), 'clouds: {prod: {auth: {password: from-env-file}}}');
    expect(revealSecret(load({ OS_CLOUD: 'prod', OS_CLIENT_SECURE_FILE: secure }).auth.password, 'password')).toBe('from-env-file');
  });

  it('uses the only cloud of the file without OS_CLOUD; several clouds need a choice', () => {
    const f = write(join(cwd, 'clouds.yaml'), 'clouds:\n  only:\n    auth: {auth_url: "http://k", user_id: u, password: p}\n');
    expect(load().name).toBe('only');
    write(f, CLOUDS);
    expect(thrown(() => load()).message).toBe(`${f} has several clouds (prod, other): choose one with OS_CLOUD or --os-cloud`);
    expect(thrown(() => load({ OS_CLOUD: 'nope' })).message).toBe(`cloud "nope" not found in ${f} (clouds: prod, other)`);
    expect(thrown(() => load({ OS_CLOUD: 'nope' }))).toMatchObject({ file: f, key: 'clouds.nope' });
  });

  it('says where it looked when there is no configuration at all', () => {
    expect(() => load()).toThrow(/^no cloud configured: set OS_CLOUD and write a clouds.yaml, or set OS_AUTH_URL and credentials \(searched: /);
    expect(() => load({ OS_CLOUD: 'x' })).toThrow(/^cloud "x" requested but no clouds.yaml found \(searched: /);
  });

  it('lets OS_REGION_NAME, OS_INTERFACE and OS_COMPUTE_API_VERSION override the file cloud (like the openstack command)', () => {
    write(join(cwd, 'clouds.yaml'), CLOUDS + '    regions: [RegionOne, RegionTwo]\n');
    write(join(cwd, 'secure.yaml'), SECURE);
    const c = load({ OS_CLOUD: 'other', OS_REGION_NAME: 'RegionTwo', OS_INTERFACE: 'admin', OS_COMPUTE_API_VERSION: '2.79', OS_PASSWORD: 'ignored' });
    expect([c.region_name, c.interface, c.compute_api_version]).toEqual(['RegionTwo', 'admin', '2.79']);
    expect(revealed(c.auth)).toEqual({ auth_url: 'https://other.example/identity/v3', application_credential_id: 'ac-id', application_credential_secret: 'ac-s3cret' });
    expect(load({ OS_CLOUD: 'other' }).region_name).toBe('RegionOne');
    expect(thrown(() => load({ OS_CLOUD: 'other', OS_REGION_NAME: 'RegionSix' })).message).toBe(`cloud "other" in ${join(cwd, 'clouds.yaml')}: region_name is "RegionSix", which is not one of the cloud's regions (RegionOne, RegionTwo)`);
  });

  it('maps legacy and top-level names (tenant_name, endpoint_type, auth_plugin, dashes, top-level auth keys)', () => {
    write(
      join(cwd, 'clouds.yaml'),
      'clouds:\n  old:\n    auth_plugin: v3password\n    auth_url: http://k:5000\n    username: u\n    password: p4ssword\n    tenant-name: proj\n    endpoint_type: internalURL\n    verify: false\n    cacert: /ignored.pem\n',
    );
    const c = load();
    expect(c.auth_type).toBe('password');
    expect(revealed(c.auth)).toEqual({ auth_url: 'http://k:5000', username: 'u', password: 'p4ssword', project_name: 'proj' });
    expect(c.interface).toBe('internal');
    expect([c.verify, c.insecure]).toEqual([false, true]);
    // verify: false beats cacert when building the client options.
    const options = clientOptionsFromCloud(c);
    expect(options.insecure).toBe(true);
    expect(options.caCert).toBeUndefined();
  });

  it('a malformed clouds.yaml is a ConfigError naming the file, line and key, never the secret', () => {
    const f = write(join(cwd, 'clouds.yaml'), 'clouds:\n  prod:\n    auth:\n      auth_url: http://k\n      password: "hunter2-secret\n      username: u\n');
    const e = (() => {
      try {
        load();
      } catch (x) {
        return x as ConfigError;
      }
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect(e!.file).toBe(f);
    expect(e!.message.startsWith(`cannot parse ${f} at line `)).toBe(true);
    expect(e!.message).toMatch(/: not valid YAML \([A-Z_]+\)$/);
    for (const text of [e!.message, e!.stack ?? '', inspect(e, { depth: Infinity }), JSON.stringify(e)]) expect(text).not.toContain('hunter2');
    const j = write(join(cwd, 'clouds.json'), '{"clouds": {"p": {"auth": {"password": "hunter2-secret" "x": 1}}}}');
    rmSync(f);
    const ej = (() => {
      try {
        load();
      } catch (x) {
        return x as ConfigError;
      }
    })();
    expect(ej!.message).toBe(`cannot parse ${j} at line 1, column 57: not valid JSON`);
    expect(ej!.file).toBe(j);
  });

  it('names the key on the broken line', () => {
    const f = write(join(cwd, 'clouds.yaml'), 'clouds:\n  prod:\n    auth:\n      auth_url: http://k\n      password: [oops\n');
    expect(() => load()).toThrow(ConfigError);
    try {
      load();
    } catch (e) {
      expect((e as ConfigError).file).toBe(f);
      expect((e as ConfigError).message).not.toContain('oops');
    }
    write(f, 'clouds:\n  prod:\n    auth: {auth_url: http://k}\n    auth: {auth_url: http://j}\n');
    expect(thrown(() => load()).message).toBe(`cannot parse ${f} at line 4, column 5 (key auth): not valid YAML (DUPLICATE_KEY)`);
  });

  it('a missing required field names the file and the key', () => {
    const f = write(join(cwd, 'clouds.yaml'), CLOUDS);
    const e = (() => {
      try {
        load({ OS_CLOUD: 'prod' });
      } catch (x) {
        return x as ConfigError;
      }
    })();
    expect(e!.message).toBe(`cloud "prod" in ${f}: auth.password is missing`);
    expect([e!.file, e!.key]).toEqual([f, 'auth.password']);
    expect(thrown(() => load({ OS_CLOUD: 'other' })).message).toBe(`cloud "other" in ${f}: auth.application_credential_secret is missing`);
    write(f, 'clouds: {x: {auth_type: v3oidc, auth: {auth_url: "http://k"}}}');
    expect(thrown(() => load()).message).toBe(`cloud "x" in ${f}: auth_type is "v3oidc"; supported: password, v3password, v3applicationcredential, token, v3token`);
    write(f, 'clouds: {x: {profile: vexxhost, auth: {password: p}}}');
    expect(() => load()).toThrow(/vendor profile/);
    write(f, 'clouds: {x: {auth: {auth_url: "http://k", user_id: u, password: p}, compute_api_version: "2.x"}}');
    expect(thrown(() => load()).message).toBe(`cloud "x" in ${f}: compute_api_version is "2.x"; use a microversion like 2.79, or latest`);
    write(f, 'clouds: {x: {auth: {auth_url: "http://k", user_id: u, password: {a: 1}}}}');
    expect(thrown(() => load()).message).toBe(`cloud "x" in ${f}: auth.password must be a string, got object`);
  });

  it('a cloud named like the environment cloud is refused when OS_* variables are set', () => {
    const f = write(join(cwd, 'clouds.yaml'), 'clouds: {envvars: {auth: {auth_url: "http://k", token: t}}}');
    expect(() => load({ OS_AUTH_URL: 'http://k' })).toThrow(ConfigError);
    expect(load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CLOUD_NAME: 'mine' }).name).toBe('mine');
    expect(load().source.file).toBe(f);
  });
});

describe('the environment cloud', () => {
  const PASSWORD_ENV = {
    OS_AUTH_URL: 'http://127.0.0.1:5000/v3',
    OS_AUTH_TYPE: 'password',
    OS_USERNAME: 'ci-bot',
    OS_PASSWORD: 'env-pass-secret',
    OS_PROJECT_NAME: 'ci',
    OS_USER_DOMAIN_NAME: 'Default',
    OS_PROJECT_DOMAIN_NAME: 'Default',
    OS_REGION_NAME: 'RegionOne',
    OS_INTERFACE: 'public',
    OS_IDENTITY_API_VERSION: '3',
  };

  it('builds "envvars" from OS_* variables (like the env file of scripts/real-nova)', () => {
    const c = load(PASSWORD_ENV);
    expect(c.name).toBe('envvars');
    expect(c.source).toEqual({ file: undefined, secureFile: undefined, env: true });
    expect(revealed(c.auth)).toEqual({
      auth_url: 'http://127.0.0.1:5000/v3',
      username: 'ci-bot',
      password: 'env-pass-secret',
      project_name: 'ci',
      user_domain_name: 'Default',
      project_domain_name: 'Default',
    });
    expect([c.auth_type, c.region_name, c.interface]).toEqual(['password', 'RegionOne', 'public']);
    expect(load({ ...PASSWORD_ENV, OS_CLOUD_NAME: 'ci' }).name).toBe('ci');
  });

  it('the environment cloud wins over a single file cloud unless OS_CLOUD is set', () => {
    write(join(cwd, 'clouds.yaml'), 'clouds: {file: {auth: {auth_url: "http://k", token: t}}}');
    expect(load(PASSWORD_ENV).name).toBe('envvars');
    expect(load({ ...PASSWORD_ENV, OS_CLOUD: 'file' }).name).toBe('file');
    // Selector-only variables make no environment cloud.
    expect(load({ OS_REGION_NAME: 'RegionOne', OS_CLOUD_NAME: 'x' }).name).toBe('file');
  });

  it('reads application credentials (and drops a leftover project scope, like keystoneauth)', () => {
    const c = load({
      OS_AUTH_URL: 'http://k:5000',
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_APPLICATION_CREDENTIAL_ID: 'acid',
      OS_APPLICATION_CREDENTIAL_SECRET: 'ac-secret-env',
      OS_PROJECT_NAME: 'leftover',
    });
    expect(c.auth_type).toBe('v3applicationcredential');
    expect(revealed(keystoneOptionsFromCloud(c))).toEqual({
      interface: 'public',
      authUrl: 'http://k:5000',
      method: 'application_credential',
      applicationCredentialSecret: 'ac-secret-env',
      applicationCredentialId: 'acid',
    });
    expect(() => new KeystoneAuth(keystoneOptionsFromCloud(c))).not.toThrow();
  });

  it('infers the auth type from what is set, and reads TLS and compute options', () => {
    const ca = write(join(root, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    const c = load({
      OS_AUTH_URL: 'http://k',
      OS_TOKEN: 'tok-secret',
      OS_CACERT: ca,
      OS_COMPUTE_API_VERSION: '2',
      OS_COMPUTE_ENDPOINT_OVERRIDE: 'http://nova:8774/v2.1/',
    });
    expect([c.auth_type, c.cacert, c.verify, c.compute_api_version, c.compute_endpoint_override]).toEqual(['token', ca, true, '2.1', 'http://nova:8774/v2.1']);
    const options = clientOptionsFromCloud(c);
    expect(String(options.caCert)).toContain('-----BEGIN CERTIFICATE-----');
    expect(options.microversion).toBe('2.1');
    expect(load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_INSECURE: 'True' }).insecure).toBe(true);
    expect(load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_INSECURE: 'yes' }).insecure).toBe(false);
    const missingCa = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CACERT: join(root, 'nope.pem') });
    expect(thrown(() => clientOptionsFromCloud(missingCa)).message).toBe(`cannot read the CA certificate file ${join(root, 'nope.pem')} (cacert): ENOENT`);
  });

  it('names the environment variable of a missing field', () => {
    expect(thrown(() => load({ OS_AUTH_URL: 'http://k', OS_USERNAME: 'u' })).message).toBe('environment cloud "envvars": auth.password is missing (set OS_PASSWORD)');
    expect(thrown(() => load({ OS_USERNAME: 'u', OS_PASSWORD: 'pw-secret' })).message).toBe('environment cloud "envvars": auth.auth_url is missing (set OS_AUTH_URL)');
  });
});

describe('clientOptionsFromCloud', () => {
  it('builds a KeystoneAuth, microversion and project id from the cloud; extra wins', () => {
    const c = load({
      OS_AUTH_URL: 'http://k:5000',
      OS_USER_ID: 'uid',
      OS_PASSWORD: 'pw-secret',
      OS_PROJECT_ID: 'pid',
      OS_REGION_NAME: 'R2',
      OS_INTERFACE: 'internal',
      OS_COMPUTE_API_VERSION: '2.79',
    });
    const options = clientOptionsFromCloud(c, { requestTimeoutMs: 1234, keystone: { minTokenLifeMs: 5 } });
    expect(options.auth).toBeInstanceOf(KeystoneAuth);
    const auth = options.auth as KeystoneAuth;
    expect(auth.toJSON()).toEqual({
      type: 'keystone',
      method: 'password',
      authUrl: 'http://k:5000/v3',
      interface: 'internal',
      regionName: 'R2',
      userId: 'uid',
      projectId: 'pid',
      password: '[REDACTED]',
    });
    expect(auth.minTokenLifeMs).toBe(5);
    expect([options.microversion, options.projectId, options.requestTimeoutMs]).toEqual(['2.79', 'pid', 1234]);
  });

  it('util.inspect and JSON.stringify of a config show no secret', () => {
    write(join(cwd, 'clouds.yaml'), CLOUDS);
    write(join(cwd, 'secure.yaml'), SECURE);
    const c = load({ OS_CLOUD: 'prod' });
    expect(revealSecret(c.auth.password, 'password')).toBe('s3cret-from-secure');
    for (const text of [inspect(c, { depth: Infinity }), JSON.stringify(c), inspect(c.auth), String(inspect(clientOptionsFromCloud(c), { depth: Infinity }))]) {
      expect(text).not.toContain('s3cret-from-secure');
    }
    expect(JSON.parse(JSON.stringify(c)).auth.password).toBe('[REDACTED]');
  });
});
