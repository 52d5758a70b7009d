/** openstacksdk loader parity: client certificates, api_timeout, region lists and values, OS_AUTH_TOKEN, cacert as the only bundle, platform folders, warnings. */
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, win32 } from 'node:path';
import https from 'node:https';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientOptionsFromCloud, keystoneOptionsFromCloud, loadCloudConfig, searchDirs, type LoadCloudConfigOptions } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors/index.js';
import { revealSecret } from '../../src/core/secret.js';
import { NovaClient } from '../../src/nova/index.js';
import { makeTestCert, type TestCert } from '../tlsCert.js';

let root: string;
let cwd: string;
let home: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'nova-guard-parity-'));
  cwd = join(root, 'cwd');
  home = join(root, 'home');
  mkdirSync(cwd, { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function load(env: Record<string, string>, options: LoadCloudConfigOptions = {}) {
  const warnings: string[] = [];
  const config = loadCloudConfig({ env, cwd, homeDir: home, systemDirs: [join(root, 'etc')], onWarning: (m) => warnings.push(m), ...options });
  return { config, warnings };
}
function clouds(text: string): string {
  const path = join(cwd, 'clouds.yaml');
  writeFileSync(path, text);
  return path;
}
const BASE = '    auth: {auth_url: "http://k:5000", username: u, password: pw-secret, project_name: p}\n';

describe('clouds.yaml parity with openstacksdk', () => {
  it('cert/key (OS_CERT/OS_KEY) and api_timeout (OS_API_TIMEOUT) reach the client options', () => {
    const { config } = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CERT: '~/c.pem', OS_KEY: '/k.pem', OS_API_TIMEOUT: '2.5' });
    expect([config.cert?.endsWith('/c.pem'), config.cert?.startsWith('~'), config.key, config.api_timeout_ms]).toEqual([true, false, '/k.pem', 2500]);
    expect(keystoneOptionsFromCloud(config)).toMatchObject({ clientCert: config.cert, clientKey: '/k.pem', requestTimeoutMs: 2500 });
    const inline = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CERT: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----', OS_API_TIMEOUT: '7' }).config;
    const options = clientOptionsFromCloud(inline);
    expect([options.requestTimeoutMs, String(options.clientCert), String(options.clientKey)]).toEqual([7000, inline.cert, inline.cert]);
    expect(() => load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_API_TIMEOUT: 'soon' })).toThrow('environment cloud "envvars": api_timeout must be a positive number of seconds (set OS_API_TIMEOUT)');
    // Out of range or not decimal: a ConfigError naming the key, never a later ValidationError of requestTimeoutMs.
    for (const bad of ['0x10', '0.0004', '10000000', '1e3']) {
      expect(() => load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_API_TIMEOUT: bad }), bad).toThrow(ConfigError);
      expect(() => load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_API_TIMEOUT: bad }), bad).toThrow(/api_timeout must be/);
    }
    expect(load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_API_TIMEOUT: ' 2.5 ' }).config.api_timeout_ms).toBe(2500);
    expect(() => load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_KEY: '/k.pem' })).toThrow(ConfigError);
    const missing = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CERT: join(root, 'nope.pem') }).config;
    expect(() => clientOptionsFromCloud(missing)).toThrow(`cannot read the client certificate file ${join(root, 'nope.pem')} (cert): ENOENT`);
  });

  it('the client options of a cloud with cert, key and api_timeout are accepted by NovaClient', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----';
    const { config } = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_CERT: pem, OS_KEY: pem, OS_API_TIMEOUT: '3', OS_COMPUTE_ENDPOINT_OVERRIDE: 'http://nova:8774/v2.1' });
    const options = clientOptionsFromCloud(config);
    expect(Object.keys(options).sort()).toEqual(['auth', 'clientCert', 'clientKey', 'requestTimeoutMs']);
    const agent = vi.spyOn(https, 'Agent');
    new NovaClient(options);
    expect(agent.mock.calls.map(([o]) => [String(o?.cert), String(o?.key)])).toEqual([[pem, pem]]);
    const plain = clientOptionsFromCloud(load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_API_TIMEOUT: '3', OS_COMPUTE_ENDPOINT_OVERRIDE: 'http://nova:8774/v2.1' }).config);
    expect(new NovaClient(plain).requestTimeoutMs).toBe(3000);
  });

  it('OS_AUTH_TOKEN is the token (openstacksdk auth_token)', () => {
    const { config } = load({ OS_AUTH_URL: 'http://k', OS_AUTH_TOKEN: 'tok-secret' });
    expect([config.auth_type, revealSecret(config.auth.token, 'token')]).toEqual(['token', 'tok-secret']);
  });

  it('region_name: R1,R2 lists the regions (first chosen, with the deprecation warning); regions: values apply to the chosen region', () => {
    clouds(`clouds:\n  c:\n${BASE}    region_name: R1,R2\n`);
    const a = load({});
    expect([a.config.region_name, a.config.regions]).toEqual(['R1', ['R1', 'R2']]);
    expect(a.warnings).toEqual([`cloud "c" in ${join(cwd, 'clouds.yaml')}: a comma-separated region_name is deprecated (openstacksdk); use a list in regions`]);
    expect(load({ OS_REGION_NAME: 'R2' }).config.region_name).toBe('R2');
    expect(() => load({ OS_REGION_NAME: 'R3' })).toThrow('region_name is "R3", which is not one of the cloud\'s regions (R1, R2)');

    clouds(
      `clouds:\n  c:\n${BASE}    interface: public\n    regions:\n      - R1\n      - name: R2\n        values:\n          interface: internal\n          compute_api_version: "2.79"\n          auth: {project_name: other}\n`,
    );
    const r1 = load({}).config;
    expect([r1.region_name, r1.interface, r1.compute_api_version, r1.auth.project_name, r1.regions]).toEqual(['R1', 'public', undefined, 'p', ['R1', 'R2']]);
    const r2 = load({}, { regionName: 'R2' });
    expect([r2.config.region_name, r2.config.interface, r2.config.compute_api_version, r2.config.auth.project_name, revealSecret(r2.config.auth.password, 'password')]).toEqual(['R2', 'internal', '2.79', 'other', 'pw-secret']);
    expect(r2.warnings).toEqual([]);
    clouds(`clouds:\n  c:\n${BASE}    regions:\n      - {name: R1, value: {}}\n`);
    expect(() => load({})).toThrow('regions[0] must have a name and nothing but name and values (found value)');
  });

  it('a setting nova-guard does not support is a warning naming the key, never its value', () => {
    clouds(`clouds:\n  c:\n${BASE}    identity_api_version: 2\n    image_api_version: 2\n    floating_ip_source: secret-ish\n    cache: {max_age: 3}\n`);
    const { warnings } = load({});
    const where = `cloud "c" in ${join(cwd, 'clouds.yaml')}`;
    expect(warnings).toEqual([
      `${where}: floating_ip_source is not supported by nova-guard and is ignored`,
      `${where}: cache is not supported by nova-guard and is ignored`,
      `${where}: settings of other services are ignored (image_api_version)`,
      `${where}: identity_api_version 2 is not supported and is ignored: nova-guard speaks Keystone v3`,
    ]);
    expect(warnings.join('\n')).not.toContain('secret-ish');
    const env = load({ OS_AUTH_URL: 'http://k', OS_TOKEN: 't', OS_PASSCODE: '123456', OS_IDENTITY_API_VERSION: '3' });
    expect(env.warnings).toEqual(['environment cloud "envvars": passcode is not supported by nova-guard and is ignored']);
  });

  it('a misspelled key gets the closest key nova-guard reads (did you mean ...?), as an unknown option name does; never a value', () => {
    clouds(
      'clouds:\n  c:\n    auth: {auth_url: "http://k:5000", usernme: u, username: u, password: pw-secret, project_nam: p-secret-ish, project_name: p}\n' +
        '    regoin_name: R1\n    verfy: false\n    auth_ulr: http://x\n    timeout: 30\n    auht: {}\n',
    );
    const { warnings } = load({});
    const where = `cloud "c" in ${join(cwd, 'clouds.yaml')}`;
    expect(warnings).toEqual([
      `${where}: regoin_name is not supported by nova-guard and is ignored (did you mean region_name?)`,
      `${where}: verfy is not supported by nova-guard and is ignored (did you mean verify?)`,
      `${where}: auth_ulr is not supported by nova-guard and is ignored (did you mean auth_url?)`,
      `${where}: timeout is not supported by nova-guard and is ignored (did you mean api_timeout?)`,
      `${where}: auht is not supported by nova-guard and is ignored (did you mean auth?)`,
      `${where}: auth.usernme is not supported by nova-guard and is ignored (did you mean auth.username?)`,
      `${where}: auth.project_nam is not supported by nova-guard and is ignored (did you mean auth.project_name?)`,
    ]);
    expect(warnings.join('\n')).not.toContain('secret-ish');
    // A required key misspelled: the "missing" error names the key found (the warnings are not given when the cloud fails).
    clouds('clouds:\n  c:\n    auth: {auth_url: "http://k:5000", usernme: u, password: pw, project_name: p}\n');
    expect(() => load({})).toThrow(`${where}: auth.username is missing; auth.usernme is given, a misspelling?`);
    // The environment cloud: the variables.
    const env = load({ OS_AUTH_URL: 'http://k', OS_USERNAME: 'u', OS_PASSWORD: 'pw', OS_PROJECT_NAM: 'p', OS_PROJECT_ID: 'p' });
    expect(env.warnings).toEqual(['environment cloud "envvars": project_nam is not supported by nova-guard and is ignored (did you mean OS_PROJECT_NAME?)']);
    expect(() => load({ OS_AUTH_URL: 'http://k', OS_USERNME: 'u', OS_PASSWORD: 'pw' })).toThrow(
      'environment cloud "envvars": auth.username is missing; OS_USERNME is set, a misspelling? (set OS_USERNAME)',
    );
    // Keys openstacksdk knows that nova-guard does not read get no suggestion.
    clouds(`clouds:\n  c:\n${BASE}    floating_ip_source: x\n    split_loggers: true\n`);
    expect(load({}).warnings.join('\n')).not.toContain('did you mean');
  });

  it('searches the macOS and Windows config folders of openstacksdk (platformdirs)', () => {
    expect(searchDirs({ env: {}, cwd: '/w', homeDir: '/Users/me', platform: 'darwin' })).toEqual([
      '/w',
      '/Users/me/Library/Application Support/openstack',
      '/Users/me/.config/openstack',
      '/Library/Application Support/openstack',
      '/etc/openstack',
    ]);
    const win = searchDirs({ env: { LOCALAPPDATA: 'C:\\Users\\me\\AppData\\Local', PROGRAMDATA: 'C:\\ProgramData' }, cwd: 'C:\\w', homeDir: 'C:\\Users\\me', platform: 'win32' });
    expect(win.slice(0, 2)).toEqual(['C:\\w', win32.join('C:\\Users\\me\\AppData\\Local', 'OpenStack', 'openstack')]);
    expect(win).toContain(win32.join('C:\\ProgramData', 'OpenStack', 'openstack'));
    expect(searchDirs({ env: { XDG_CONFIG_HOME: '/x' }, cwd: '/w', homeDir: '/home/me', platform: 'linux' }).slice(0, 4)).toEqual(['/w', '/x/openstack', '/home/me/.config/openstack', '/etc/xdg/openstack']);
    const mac = join(home, 'Library', 'Application Support', 'openstack');
    mkdirSync(mac, { recursive: true });
    writeFileSync(join(mac, 'clouds.yaml'), `clouds:\n  mac:\n${BASE}`);
    expect(load({}, { platform: 'darwin' }).config.name).toBe('mac');
  });
});

describe('TLS: cacert is the only bundle, cert/key is presented', () => {
  let ca: TestCert;
  let clientId: TestCert;
  let server: Server;
  let url: string;
  let seen: Array<string | undefined>;
  beforeAll(async () => {
    ca = makeTestCert('nova-guard-parity-srv-');
    clientId = makeTestCert('nova-guard-parity-cli-');
    seen = [];
    server = createServer({ cert: ca.cert, key: ca.key, ca: [clientId.cert], requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
      const cn = peer.subject?.CN;
      seen.push(Array.isArray(cn) ? cn.join(",") : cn);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ limits: { absolute: { maxTotalCores: 1 }, rate: [] } }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v2.1`;
  });
  afterAll(() => {
    server.close();
    ca.remove();
    clientId.remove();
  });

  it('a client certificate from cert/key is presented; without one the server sees none', async () => {
    writeFileSync(join(root, 'client.pem'), clientId.cert);
    writeFileSync(join(root, 'client.key'), clientId.key);
    const withCert = new NovaClient({ microversion: '2.1', endpoint: url, token: 'admin:demo', caCert: ca.certPath, clientCert: join(root, 'client.pem'), clientKey: join(root, 'client.key'), retry: false });
    await withCert.getLimits();
    const without = new NovaClient({ microversion: '2.1', endpoint: url, token: 'admin:demo', caCert: ca.cert, retry: false });
    await without.getLimits();
    expect(seen).toEqual(['127.0.0.1', undefined]);
  });
});
