/** TLS options: verification on by default, cacert (path or PEM) adds trust, insecure turns it off with a warning. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCert, type TestCert } from '../tlsCert.js';
import { NovaClient } from '../../src/nova/client.js';
import { clientOptionsFromCloud, loadCloudConfig } from '../../src/config/load.js';
import { NovaNetworkError } from '../../src/errors/index.js';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { tlsAgentOptions } from '../../src/transport/tls.js';
import { FakeKeystone } from '../../src/testing/index.js';

let certPath: string;
let cert: string;
let key: string;

let made: TestCert;
beforeAll(() => {
  made = makeTestCert('nova-guard-tls-');
  ({ certPath, cert, key } = made);
});
afterAll(() => made.remove());

const started: FakeKeystone[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((k) => k.stop()));
});

async function httpsKeystone(): Promise<FakeKeystone> {
  const k = await FakeKeystone.start({ tls: { key, cert }, computeUrl: 'https://127.0.0.1:1/v2.1' });
  started.push(k);
  return k;
}

function capture(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level: 'trace' }, stream);
  return { logger, lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const creds = { username: 'ci-bot', password: 'ci-bot-password', projectName: 'ci' };

describe('TLS', () => {
  it('insecure gives an agent with rejectUnauthorized false and logs a warning', () => {
    const { logger, lines } = capture();
    const agent = tlsAgentOptions({ insecure: true }, logger, 'Keystone');
    expect(agent?.rejectUnauthorized).toBe(false);
    expect(lines().map((l) => [l['level'], l['msg']])).toEqual([[40, 'TLS verification is turned off (insecure) for Keystone: the server certificate is not checked']]);
    expect(tlsAgentOptions({})).toBeUndefined();
    const withCa = tlsAgentOptions({ caCert: cert });
    expect(withCa?.rejectUnauthorized).toBeUndefined();
    expect((withCa?.ca as string[]).at(-1)).toBe(cert);
  });

  it('verification is on by default: a self-signed Keystone is a NovaNetworkError', async () => {
    const k = await httpsKeystone();
    const auth = new KeystoneAuth({ authUrl: k.url, ...creds });
    const e = (await auth.getToken().catch((x: unknown) => x)) as NovaNetworkError;
    expect(e).toBeInstanceOf(NovaNetworkError);
    expect(e.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    // Node's own text after the code: 'self-signed certificate' on Node 20; Node 22.15+/24 add a
    // hint about --use-system-ca. The prefix, the code and that text are nova-guard's.
    const prefix = `Keystone POST ${k.authUrl}/auth/tokens failed without a response: DEPTH_ZERO_SELF_SIGNED_CERT (self-signed certificate`;
    expect(e.message.startsWith(prefix)).toBe(true);
    expect(e.message.slice(prefix.length)).toMatch(/^(; if the root CA is installed locally, try running Node\.js with --use-system-ca)?\)$/);
    expect(k.tokenRequests).toBe(0);
  });

  it('caCert (a path or PEM text) makes the certificate trusted', async () => {
    const k = await httpsKeystone();
    expect(k.isValid(await new KeystoneAuth({ authUrl: k.url, ...creds, caCert: certPath }).getToken())).toBe(true);
    expect(k.isValid(await new KeystoneAuth({ authUrl: k.url, ...creds, caCert: cert }).getToken())).toBe(true);
  });

  it('insecure (OS_INSECURE=true) connects anyway and warns, for Keystone and for Nova', async () => {
    const k = await httpsKeystone();
    const { logger, lines } = capture();
    const config = loadCloudConfig({
      env: { OS_AUTH_URL: k.url, OS_USERNAME: 'ci-bot', OS_PASSWORD: 'ci-bot-password', OS_PROJECT_NAME: 'ci', OS_INSECURE: 'true' },
      cwd: made.dir,
      homeDir: made.dir,
      systemDirs: [],
    });
    const options = clientOptionsFromCloud(config, { logger });
    expect(options.insecure).toBe(true);
    expect(k.isValid(await options.auth!.getToken())).toBe(true);
    new NovaClient(options);
    const warnings = lines().filter((l) => l['level'] === 40).map((l) => [l['component'], l['msg']]);
    expect(warnings).toEqual([
      ['keystone', 'TLS verification is turned off (insecure) for Keystone: the server certificate is not checked'],
      ['nova', 'TLS verification is turned off (insecure): the server certificate is not checked'],
    ]);
  });
});
