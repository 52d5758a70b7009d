/**
 * A secret of a loaded cloud stays redacted in every copy of its auth block: a spread
 * (`{ ...config.auth }`), `Object.assign`, `structuredClone`, and in every way such a copy is shown
 * (util.inspect, console.log, util.format, JSON.stringify, pino). No part of a secret (4 characters
 * or more) appears. A `structuredClone` copy has lost the value: a client made from it is refused
 * with a message that says so; a spread copy still authenticates with the secret.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Console } from 'node:console';
import { format, inspect } from 'node:util';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientOptionsFromCloud, keystoneOptionsFromCloud, loadCloudConfig, type CloudConfig } from '../../src/config/load.js';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { Secret, revealSecret } from '../../src/core/secret.js';
import { ValidationError } from '../../src/errors/index.js';

// Mixed-case letters: no 4-character part of them occurs in a key name, a timestamp or a pid.
const PASSWORD = 'pwQxZkLmVbNwHjRtYp';
const APPCRED = 'acVbNwHjQxZkLmPyGd';
const TOKEN = 'tkRtYpGdMnBvCxZqWs';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'nova-guard-secret-copies-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function load(cloud: string): CloudConfig {
  const dir = join(root, 'cwd');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'clouds.yaml'),
    'clouds:\n' +
      `  pw:\n    auth:\n      auth_url: http://keystone:5000\n      username: ci\n      password: ${PASSWORD}\n      project_name: ci\n      user_domain_name: Default\n      project_domain_name: Default\n` +
      `  ac:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://keystone:5000\n      application_credential_id: acid\n      application_credential_secret: ${APPCRED}\n` +
      `  tok:\n    auth_type: token\n    auth:\n      auth_url: http://keystone:5000\n      token: ${TOKEN}\n      project_id: pid\n`,
  );
  return loadCloudConfig({ cloud, env: {}, cwd: dir, homeDir: join(root, 'home'), systemDirs: [] });
}

/** Every substring of `secret` of 4 characters or more that occurs in `text`. */
function partsIn(text: string, secret: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) {
    // A 4-character window is the shortest part; a longer one contains one of them.
    const part = secret.slice(i, i + 4);
    if (text.includes(part)) found.push(part);
  }
  return found;
}

/** Every way a copy of the block is shown. */
function shown(copy: object): Record<string, string> {
  const printed: string[] = [];
  const out = new Writable({
    write(chunk, _enc, cb) {
      printed.push(String(chunk));
      cb();
    },
  });
  new Console(out, out).log(copy);
  new Console(out, out).log('auth %o %s %j', copy, copy, copy);
  const logged: string[] = [];
  const logger = pino(
    { level: 'trace' },
    new Writable({
      write(chunk, _enc, cb) {
        logged.push(String(chunk));
        cb();
      },
    }),
  );
  logger.info({ auth: copy }, 'auth block');
  logger.info(copy, 'auth block as the merging object');
  const values = Object.values(copy).map((v) => `${String(v)} ${v as string}`);
  return {
    inspect: inspect(copy, { depth: Infinity, showHidden: true }),
    json: JSON.stringify(copy),
    console: printed.join(''),
    format: format('%o %O %s %j', copy, copy, copy, copy),
    pino: logged.join(''),
    values: values.join(' '),
  };
}

describe("a secret stays redacted in a copy of its cloud's auth block", () => {
  for (const [cloud, secret, key] of [
    ['pw', PASSWORD, 'password'],
    ['ac', APPCRED, 'application_credential_secret'],
    ['tok', TOKEN, 'token'],
  ] as const) {
    it(`${key}: spread, Object.assign and structuredClone copies, inspected, logged, printed and serialised, show no part of it`, () => {
      const config = load(cloud);
      expect(config.auth[key]).toBeInstanceOf(Secret);
      expect(revealSecret(config.auth[key], key)).toBe(secret);
      const copies: Record<string, object> = {
        spread: { ...config.auth },
        assign: Object.assign({}, config.auth),
        structuredClone: structuredClone(config.auth),
        configSpread: { ...config, auth: { ...config.auth } },
        configClone: structuredClone(config),
        keystoneOptions: { ...keystoneOptionsFromCloud(config) },
        clientOptions: { ...clientOptionsFromCloud(config) },
      };
      for (const [how, copy] of Object.entries(copies)) {
        for (const [where, text] of Object.entries(shown(copy))) {
          expect(partsIn(text, secret), `${how} / ${where}: ${text}`).toEqual([]);
        }
      }
      expect(shown({ ...config.auth }).inspect).toContain(`${key}: [REDACTED]`);
      expect(JSON.parse(JSON.stringify({ ...config.auth }))[key]).toBe('[REDACTED]');
    });
  }

  it('a spread copy still authenticates with the secret; a structuredClone copy (which drops it) is refused, saying why', () => {
    const config = load('pw');
    const fromSpread = new KeystoneAuth(keystoneOptionsFromCloud({ ...config, auth: { ...config.auth } }));
    expect(fromSpread.secrets()).toContain(PASSWORD);
    const cloned = { ...config, auth: structuredClone(config.auth) };
    let error: unknown;
    try {
      clientOptionsFromCloud(cloned);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toBe(
      'password is an empty object: a copy of a secret made by structuredClone (or postMessage), which drops its value; pass the loaded configuration itself, or a spread copy of it',
    );
    // A hand-made block keeps taking plain strings.
    const plain = new KeystoneAuth(keystoneOptionsFromCloud({ ...config, auth: { ...config.auth, password: 'plain-string-pw' } }));
    expect(plain.secrets()).toContain('plain-string-pw');
  });
});
