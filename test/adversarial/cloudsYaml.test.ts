/**
 * clouds.yaml read the way openstacksdk reads it (PyYAML, YAML 1.1): `verify: yes` keeps TLS
 * verification on, `<<: *anchor` merges; and the odd files give clear ConfigErrors.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, Secret, loadCloudConfig, type CloudConfig } from '../../src/index.js';

function load(text: string, file = 'clouds.yaml', cloud?: string): CloudConfig {
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-adv-'));
  writeFileSync(join(dir, file), text);
  return loadCloudConfig({ env: {}, cwd: dir, homeDir: dir, systemDirs: [], cloud });
}

function loadError(text: string, file = 'clouds.yaml'): ConfigError {
  try {
    load(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const cloud = (extra: string): string => `clouds:\n  a:\n    auth: {auth_url: "http://k:5000", username: u, password: pw-secret}\n${extra}`;

describe('YAML 1.1 booleans, as PyYAML reads them', () => {
  it.each([
    ['verify: yes', true],
    ['verify: Yes', true],
    ['verify: on', true],
    ['verify: true', true],
    ['verify: no', false],
    ['verify: off', false],
    ['verify: false', false],
  ])('%s → verify %s', (line, verify) => {
    const c = load(cloud(`    ${line}\n`));
    expect({ verify: c.verify, insecure: c.insecure }).toEqual({ verify, insecure: !verify });
  });

  it('insecure: yes turns verification off (it was read as the string "yes", i.e. false)', () => {
    expect(load(cloud('    insecure: yes\n')).insecure).toBe(true);
  });
});

describe('anchors', () => {
  it('a merge key (<<: *defaults) brings in the shared auth block', () => {
    const text =
      'defaults: &d\n  auth:\n    auth_url: http://k:5000\n    username: u\n    password: pw-secret\n    project_name: p\n' +
      'clouds:\n  a:\n    <<: *d\n    region_name: R1\n  b:\n    <<: *d\n    region_name: R2\n';
    for (const [name, region] of [['a', 'R1'], ['b', 'R2']] as const) {
      const c = load(text, 'clouds.yaml', name);
      expect(c.region_name).toBe(region);
      // The password is a Secret (issue 29): its value through reveal(), the rest as written.
      expect(c.auth.password).toBeInstanceOf(Secret);
      expect({ ...c.auth, password: (c.auth.password as Secret).reveal() }).toEqual({ auth_url: 'http://k:5000', username: 'u', password: 'pw-secret', project_name: 'p' });
    }
  });

  it('a plain alias works as before', () => {
    expect(load('x: &a\n  auth_url: http://k:5000\n  username: u\n  password: pw-secret\nclouds:\n  a:\n    auth: *a\n').auth.auth_url).toBe('http://k:5000');
  });
});

describe('odd files', () => {
  it('an empty file means no cloud', () => {
    expect(loadError('').message).toMatch(/^no cloud configured: set OS_CLOUD/);
  });

  it.each([['clouds: 5'], ['clouds: [a, b]'], ['clouds: yes']])('%s: "clouds" must be a mapping', (text) => {
    const e = loadError(text);
    expect(e.message).toMatch(/^"clouds" in .*clouds\.yaml must be a mapping of cloud names$/);
    expect(e.key).toBe('clouds');
  });

  it('an unknown auth_type is named, with the supported ones', () => {
    const e = loadError(cloud('    auth_type: kerberos\n'));
    expect(e.message).toMatch(/auth_type is "kerberos"; supported: password, v3password, v3applicationcredential, token, v3token$/);
  });

  it('a clouds.json that does not parse names the line and never the password', () => {
    const e = loadError('{"clouds": {"a": {"auth": {"password": "pw-secret",}}}}', 'clouds.json');
    expect(e.message).toMatch(/^cannot parse .*clouds\.json at line 1, column \d+: not valid JSON$/);
    expect(e.message).not.toContain('pw-secret');
  });
});
