/**
 * The no-secrets sweep: across the auth scenarios (success, bad password, bad application credential
 * secret, expired token, 401 twice, Keystone down, Keystone hanging, TLS failure, broken and
 * incomplete configuration), capture ALL pino output at level trace and every error thrown (message,
 * stack, JSON, util.inspect at any depth, every own property, the cause chain), plus util.inspect
 * and JSON of the client, the providers and the configuration; no password, application credential
 * secret or token issued may occur anywhere.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NovaClient, type NovaClientOptions } from '../src/nova/client.js';
import { clientOptionsFromCloud, loadCloudConfig } from '../src/config/load.js';
import { KeystoneAuth, type KeystoneAuthOptions } from '../src/auth/keystone.js';
import { FakeKeystone, FakeNova } from '../src/testing/index.js';
import { revealSecret } from '../src/core/secret.js';

const PASSWORD = 'pw-Secret-0123456789';
const APPCRED_SECRET = 'ac-Secret-9876543210';
const WRONG_PASSWORD = 'wrong-Secret-pw-42424242';
const WRONG_APPCRED = 'wrong-Secret-ac-31313131';
const URL_SECRET = 'url-Secret-77777777';
const FILE_SECRET = 'file-Secret-55555555';
const PREMADE_TOKEN = 'premade-Secret-token-66666666';

/** Everything the library wrote or threw, as text. */
const outputs: string[] = [];
const logChunks: string[] = [];
const logger: Logger = pino(
  { level: 'trace' },
  new Writable({
    write(chunk, _enc, cb) {
      logChunks.push(String(chunk));
      cb();
    },
  }),
);
/** Secrets of every provider made, and every token a Keystone issued. */
const providers: KeystoneAuth[] = [];
const keystones: FakeKeystone[] = [];
const cleanup: Array<() => Promise<void> | void> = [];
let errorsSeen = 0;

/** Every text form of a thrown value, recursing (4 levels) into own properties and the cause chain. */
function errorTexts(value: unknown, seen = new Set<unknown>(), level = 0): string[] {
  if (value === null || value === undefined || seen.has(value)) return [];
  if (typeof value !== 'object' && typeof value !== 'function') return [String(value)];
  seen.add(value);
  const out = [inspect(value, { depth: Infinity }), inspect(value, { depth: Infinity, showHidden: true })];
  try {
    out.push(JSON.stringify(value) ?? '');
  } catch {
    // circular
  }
  if (value instanceof Error) out.push(value.message, value.stack ?? '', String(value));
  if (level >= 4) return out;
  for (const key of Reflect.ownKeys(value)) {
    let v: unknown;
    try {
      v = (value as Record<string | symbol, unknown>)[key];
    } catch {
      continue;
    }
    out.push(String(key), ...errorTexts(v, seen, level + 1));
  }
  return out;
}

async function record(promise: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    const v = typeof promise === 'function' ? promise() : await promise;
    return v;
  } catch (e) {
    errorsSeen++;
    outputs.push(...errorTexts(e));
    return e;
  }
}

function provider(options: KeystoneAuthOptions): KeystoneAuth {
  const p = new KeystoneAuth({ logger, ...options });
  providers.push(p);
  return p;
}

function clientOf(auth: KeystoneAuth, extra: Partial<NovaClientOptions> = {}): NovaClient {
  const c = new NovaClient({ auth, logger, microversion: '2.79', retry: { retries: 1, minDelayMs: 1, maxDelayMs: 2, maxRetryTimeMs: 500 }, ...extra });
  outputs.push(inspect(c, { depth: Infinity }), JSON.stringify(c));
  return c;
}

async function stack(validate?: (t: string) => boolean, keystoneOptions: Parameters<typeof FakeKeystone.start>[0] = {}) {
  const ref: { k?: FakeKeystone } = {};
  const nova = await FakeNova.start({ validateToken: validate ?? ((t) => ref.k!.isValid(t)), deleteDelayMs: 40 });
  cleanup.push(() => nova.close());
  const k = await FakeKeystone.start({
    computeUrl: nova.endpoint,
    projects: [{ id: nova.projectId, name: 'ci' }],
    users: [{ name: 'ci-bot', password: PASSWORD, projects: ['ci'] }],
    applicationCredentials: [{ name: 'ci-ac', secret: APPCRED_SECRET, user: 'ci-bot' }],
    ...keystoneOptions,
  });
  cleanup.push(() => k.stop());
  keystones.push(k);
  ref.k = k;
  return { nova, k };
}

const passwordCreds = (k: FakeKeystone, password = PASSWORD): KeystoneAuthOptions => ({
  authUrl: k.url,
  username: 'ci-bot',
  password,
  userDomainName: 'Default',
  projectName: 'ci',
  projectDomainName: 'Default',
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'nova-guard-secrets-'));
});
afterAll(async () => {
  for (const f of cleanup.splice(0)) await f();
  rmSync(dir, { recursive: true, force: true });
});

describe('no secret reaches a log line, an error or util.inspect', () => {
  it('success path: password and application credential, delete-wait across a token expiry', async () => {
    const { nova, k } = await stack(undefined, { tokenLifetimeMs: 60 });
    // Real sockets (the sweep covers axios's own HTTP adapter); the wait polls every 5 ms with the engine's rate cap off.
    const c = clientOf(provider({ ...passwordCreds(k), minTokenLifeMs: 20 }), { maxRequestsPerSecond: Number.POSITIVE_INFINITY });
    const s = await c.createServer({ name: 'x', flavorRef: '1', imageRef: 'i', networks: 'none' });
    for (let i = 0; i < 200 && nova.getServerState(s.id)?.status !== 'ACTIVE'; i++) await new Promise((r) => setTimeout(r, 2));
    await c.deleteServer(s.id, { wait: true, intervalMs: 5, timeoutMs: 5000 });
    const ac = clientOf(provider({ authUrl: k.url, applicationCredentialId: k.applicationCredentialId('ci-ac'), applicationCredentialSecret: APPCRED_SECRET }));
    await ac.getLimits();
    expect(k.tokenRequests).toBeGreaterThanOrEqual(3);
  });

  it('bad password, bad application credential secret (Keystone 401)', async () => {
    const { k } = await stack();
    const e1 = await record(clientOf(provider(passwordCreds(k, WRONG_PASSWORD))).getLimits());
    expect(e1).toMatchObject({ name: 'AuthError', status: 401 });
    const e2 = await record(
      clientOf(provider({ authUrl: k.url, applicationCredentialId: k.applicationCredentialId('ci-ac'), applicationCredentialSecret: WRONG_APPCRED })).getLimits(),
    );
    expect(e2).toMatchObject({ name: 'AuthError', status: 401 });
  });

  it('expired token (recovered) and 401 twice (AuthError)', async () => {
    const { k } = await stack();
    const c = clientOf(provider(passwordCreds(k)));
    await c.getLimits();
    k.expireAllTokens();
    await c.getLimits();
    const { k: k2 } = await stack(() => false);
    expect(await record(clientOf(provider(passwordCreds(k2))).getLimits())).toMatchObject({ name: 'AuthError' });
    const premade = clientOf(provider({ token: PREMADE_TOKEN, endpointOverride: (await stack(() => false)).nova.endpoint }));
    expect(await record(premade.getLimits())).toMatchObject({ name: 'AuthError' });
  });

  it('Keystone down, Keystone hanging, Keystone with an untrusted certificate', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const closed = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const down = clientOf(provider({ authUrl: `http://127.0.0.1:${closed}`, userId: 'u', password: PASSWORD }));
    expect(await record(down.getLimits())).toMatchObject({ name: 'NovaNetworkError', code: 'ECONNREFUSED' });

    const sockets: net.Socket[] = [];
    const hang = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()));
    cleanup.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((r) => hang.close(() => r()));
    });
    const hangPort = (hang.address() as net.AddressInfo).port;
    const slow = clientOf(provider({ authUrl: `http://127.0.0.1:${hangPort}`, userId: 'u', password: PASSWORD, requestTimeoutMs: 20 }));
    expect(await record(slow.getLimits())).toMatchObject({ name: 'NovaNetworkError', timedOut: true });

    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'),
      '-out', join(dir, 'c.pem'), '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ], { stdio: 'ignore' });
    const tls = await FakeKeystone.start({ tls: { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) }, users: [{ name: 'u', password: PASSWORD }] });
    cleanup.push(() => tls.stop());
    const untrusted = clientOf(provider({ authUrl: tls.url, username: 'u', password: PASSWORD }));
    expect(await record(untrusted.getLimits())).toMatchObject({ name: 'NovaNetworkError', code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  it('bad options and configuration: user info in auth_url, a broken clouds.yaml, a missing field, fromEnv with a wrong password', async () => {
    expect(await record(() => provider({ authUrl: `http://ci:${URL_SECRET}@k:5000`, userId: 'u', password: PASSWORD }))).toMatchObject({ name: 'ValidationError' });
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, `clouds:\n  c:\n    auth:\n      auth_url: http://k\n      password: "${FILE_SECRET}\n      username: u\n`);
    const env = { OS_CLIENT_CONFIG_FILE: file };
    expect(await record(() => loadCloudConfig({ env, cwd: dir, homeDir: dir, systemDirs: [] }))).toMatchObject({ name: 'ConfigError', file });
    writeFileSync(file, `clouds:\n  c:\n    auth:\n      password: ${FILE_SECRET}\n      username: u\n`);
    expect(await record(() => loadCloudConfig({ env, cwd: dir, homeDir: dir, systemDirs: [] }))).toMatchObject({ name: 'ConfigError', key: 'auth.auth_url' });
    const { k } = await stack();
    writeFileSync(file, `clouds:\n  c:\n    auth:\n      auth_url: ${k.url}\n      password: ${FILE_SECRET}\n      username: ci-bot\n      project_name: ci\n`);
    const config = loadCloudConfig({ env, cwd: dir, homeDir: dir, systemDirs: [] });
    expect(revealSecret(config.auth.password, 'password')).toBe(FILE_SECRET);
    outputs.push(inspect(config, { depth: Infinity }), JSON.stringify(config), inspect(clientOptionsFromCloud(config, { logger }), { depth: Infinity }));
    const wrong = { OS_AUTH_URL: k.url, OS_USERNAME: 'ci-bot', OS_PASSWORD: WRONG_PASSWORD, OS_PROJECT_NAME: 'ci' };
    expect(await record(NovaClient.fromEnv(wrong, { logger }))).toMatchObject({ name: 'AuthError' });
    const good = await NovaClient.fromEnv({ ...wrong, OS_PASSWORD: PASSWORD }, { logger });
    outputs.push(inspect(good, { depth: Infinity }), JSON.stringify(good), inspect(good.auth, { depth: Infinity }), JSON.stringify(good.auth));
  });

  it('the sweep: no secret anywhere', () => {
    for (const p of providers) outputs.push(inspect(p, { depth: Infinity, showHidden: true }), JSON.stringify(p));
    const tokens = keystones.flatMap((k) => k.issuedTokens());
    const secrets = [
      ...new Set([PASSWORD, APPCRED_SECRET, WRONG_PASSWORD, WRONG_APPCRED, URL_SECRET, FILE_SECRET, PREMADE_TOKEN, ...tokens, ...providers.flatMap((p) => p.secrets())]),
    ];
    const logText = logChunks.join('');
    const haystack = [logText, ...outputs];
    // Whole secrets, and for long ones (tokens) also their first and last 24 characters after
    // Keystone's fixed `gAAAAAB` prefix: a truncated token in a log line is still a leak.
    const needles = secrets.flatMap((s) => (s.length > 40 ? [s, s.slice(7, 31), s.slice(-24)] : [s]));
    // Report where a leak is, never the secret itself.
    const leaks = needles.flatMap((s, i) => haystack.flatMap((h, j) => (h.includes(s) ? [`needle ${i} in ${j === 0 ? 'the log' : `output ${j}`}`] : [])));
    expect(leaks).toEqual([]);
    // The sweep saw real material: many tokens, log lines of every component, every error.
    expect(tokens.length).toBeGreaterThanOrEqual(8);
    expect(errorsSeen).toBe(11);
    expect(logText).toContain('"msg":"keystone token issued"');
    expect(logText).toContain('"msg":"token rejected (401): re-authenticating once"');
    expect(logText).toContain('"msg":"keystone token request failed without a response"');
    expect(logText).toContain('"msg":"keystone rejected the token request"');
    // The sweep itself can fail: a planted token is found.
    expect([...haystack, `x${tokens[0]}x`].some((h) => h.includes(tokens[0]!))).toBe(true);
  });
});
