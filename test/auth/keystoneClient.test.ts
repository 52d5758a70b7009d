/**
 * NovaClient + KeystoneAuth against FakeNova requiring FakeKeystone tokens: the catalog endpoint,
 * re-authentication after a 401, a second 401, single flight across requests, a token expiring in
 * the middle of a delete-wait, and NovaClient.fromEnv. On fake timers, through the fakes' in-process
 * adapters, so token lifetimes and renewals are exact.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NovaClient, type NovaClientOptions } from '../../src/nova/client.js';
import { AuthError } from '../../src/errors/index.js';
import { KeystoneAuth, type KeystoneAuthOptions } from '../../src/auth/keystone.js';
import { FakeKeystone, FakeNova, type FakeKeystoneOptions, type FakeNovaOptions } from '../../src/testing/index.js';
import { REFUSED_TOKEN_HOLD_MS } from '../../src/nova/request.js';
import { settle, useFakeClock } from '../helpers.js';

useFakeClock();

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f()));
});

interface Stack {
  nova: FakeNova;
  keystone: FakeKeystone;
}

/** A FakeNova that accepts only valid FakeKeystone tokens, and that FakeKeystone (catalog → FakeNova). */
async function stack(novaOptions: FakeNovaOptions = {}, keystoneOptions: FakeKeystoneOptions = {}, validate?: (t: string) => boolean): Promise<Stack> {
  const ref: { keystone?: FakeKeystone } = {};
  const nova = await FakeNova.start({ validateToken: validate ?? ((t) => ref.keystone!.isValid(t)), ...novaOptions });
  cleanup.push(() => nova.close());
  const keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, projects: [{ id: nova.projectId, name: 'ci' }], ...keystoneOptions });
  cleanup.push(() => keystone.stop());
  ref.keystone = keystone;
  return { nova, keystone };
}

function client(s: Stack, auth: Partial<KeystoneAuthOptions> = {}, options: Partial<NovaClientOptions> = {}): NovaClient {
  return new NovaClient({
    auth: new KeystoneAuth({
      authUrl: s.keystone.url,
      username: 'ci-bot',
      password: 'ci-bot-password',
      userDomainName: 'Default',
      projectName: 'ci',
      projectDomainName: 'Default',
      adapter: s.keystone.adapter,
      ...auth,
    }),
    microversion: '2.79',
    adapter: s.nova.adapter,
    // The waits here poll every 10 ms to span token lifetimes: the delete engine's rate cap is off.
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    retry: { minDelayMs: 1, maxDelayMs: 5, maxRetryTimeMs: 2000 },
    ...options,
  });
}

async function activeServer(c: NovaClient, nova: FakeNova): Promise<string> {
  const s = await settle(c.createServer({ name: 'kt', flavorRef: '1', imageRef: 'img', networks: 'none' }));
  for (let i = 0; i < 500 && nova.getServerState(s.id)?.status !== 'ACTIVE'; i++) await vi.advanceTimersByTimeAsync(2);
  return s.id;
}

describe('NovaClient with KeystoneAuth', () => {
  it('finds the compute endpoint in the catalog and works with password and application credential tokens', async () => {
    const s = await stack();
    const c = client(s);
    const id = await activeServer(c, s.nova);
    expect((await settle(c.getServer(id))).status).toBe('ACTIVE');
    expect(await settle(c.endpoint())).toBe(s.nova.endpoint);
    const ac = client(s, {
      username: undefined,
      password: undefined,
      userDomainName: undefined,
      projectName: undefined,
      projectDomainName: undefined,
      applicationCredentialId: s.keystone.applicationCredentialId('ci-appcred'),
      applicationCredentialSecret: 'ci-appcred-secret',
    });
    expect((await settle(ac.getServer(id))).id).toBe(id);
    expect((ac.auth as KeystoneAuth).getProjectId()).toBe(s.nova.projectId);
    expect(s.keystone.tokenRequests).toBe(2);
  });

  it('a 401 from Nova (token expired early) triggers exactly one re-authentication and one repeat', async () => {
    const s = await stack();
    const c = client(s);
    const id = await activeServer(c, s.nova);
    expect(s.keystone.tokenRequests).toBe(1);
    s.keystone.expireAllTokens();
    const before = s.nova.requests.length;
    expect((await settle(c.getServer(id))).id).toBe(id);
    expect(s.nova.requests.slice(before).map((r) => [r.method, r.path, r.status])).toEqual([
      ['GET', `/servers/${id}`, 401],
      ['GET', `/servers/${id}`, 200],
    ]);
    expect(s.keystone.tokenRequests).toBe(2);
  });

  it('a second 401 is an AuthError (no loop)', async () => {
    const s = await stack({}, {}, () => false);
    const c = client(s);
    const error = await settle(c.getLimits()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).status).toBe(401);
    expect((error as AuthError).message).toBe('The request you have made requires authentication.');
    expect(s.nova.requests.map((r) => [r.path, r.status])).toEqual([
      ['/limits', 401],
      ['/limits', 401],
    ]);
    expect(s.keystone.tokenRequests).toBe(2);
  });

  it('N concurrent requests share one token request (single flight)', async () => {
    const s = await stack();
    const c = client(s);
    await settle(Promise.all(Array.from({ length: 25 }, () => c.getLimits())));
    expect(s.keystone.tokenRequests).toBe(1);
    s.keystone.expireAllTokens();
    await settle(Promise.all(Array.from({ length: 25 }, () => c.getLimits())));
    expect(s.keystone.tokenRequests).toBe(2);
    expect(s.nova.requests.filter((r) => r.status === 200)).toHaveLength(50);
  });

  it('renews before expiry: with short lifetimes Nova never sees an expired token', async () => {
    const s = await stack({}, { tokenLifetimeMs: 120 });
    const c = client(s, { minTokenLifeMs: 80 });
    const started = Date.now();
    while (Date.now() - started < 300) {
      await settle(c.getLimits());
      await vi.advanceTimersByTimeAsync(5);
    }
    const elapsed = Date.now() - started;
    expect(s.nova.requests.filter((r) => r.status !== 200)).toEqual([]);
    // No token lives longer than 120 ms and Nova never refused one, so there were renewals before
    // expiry; each token is used for about 40 ms (renewed with 80 ms of its 120 ms left).
    expect(s.keystone.tokenRequests).toBeGreaterThanOrEqual(Math.floor(elapsed / 120));
    expect(s.keystone.tokenRequests).toBeLessThanOrEqual(Math.ceil(elapsed / 35) + 1);
    // On the fake clock, exactly: a look every 5 ms renews at 45, 90, ..., 270 ms (first look with under 80 ms left).
    expect(elapsed).toBe(300);
    expect(s.keystone.tokenRequests).toBe(7);
  });

  it('a delete-wait that outlives its tokens keeps going and succeeds', async () => {
    const s = await stack({ deleteDelayMs: 400 }, { tokenLifetimeMs: 120 });
    const c = client(s, { minTokenLifeMs: 60 });
    const id = await activeServer(c, s.nova);
    const tokensBefore = s.keystone.tokenRequests;
    const result = await settle(c.deleteServer(id, { wait: true, intervalMs: 10, timeoutMs: 5000 }));
    expect(result.outcome).toBe('deleted');
    expect(result.elapsedMs).toBeGreaterThanOrEqual(400);
    // The wait spanned several token lifetimes: tokens were renewed while it ran.
    expect(s.keystone.tokenRequests - tokensBefore).toBeGreaterThanOrEqual(3);
    // Renewed before expiry (60 ms margin): on the fake clock Nova never answers 401.
    expect(s.nova.requests.filter((r) => r.status === 401).length).toBeLessThanOrEqual(1);
    expect(s.nova.requests.filter((r) => r.status === 401)).toEqual([]);
  });

  it('a delete-wait whose token is revoked midway re-authenticates once and succeeds', async () => {
    const s = await stack({ deleteDelayMs: 200 });
    const c = client(s);
    const id = await activeServer(c, s.nova);
    setTimeout(() => s.keystone.expireAllTokens(), 60);
    const result = await settle(c.deleteServer(id, { wait: true, intervalMs: 10, timeoutMs: 5000 }));
    expect(result.outcome).toBe('deleted');
    expect(s.nova.requests.filter((r) => r.status === 401)).toHaveLength(1);
    expect(s.keystone.tokenRequests).toBe(2);
  });

  it('NovaClient.fromEnv authenticates once and takes the project id of the token', async () => {
    vi.useRealTimers(); // fromEnv builds its own clients, on sockets
    const s = await stack();
    const env = {
      OS_AUTH_URL: s.keystone.authUrl,
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_APPLICATION_CREDENTIAL_ID: s.keystone.applicationCredentialId('ci-appcred'),
      OS_APPLICATION_CREDENTIAL_SECRET: 'ci-appcred-secret',
      OS_REGION_NAME: 'RegionOne',
      OS_INTERFACE: 'internal',
      OS_COMPUTE_API_VERSION: '2.79',
    };
    const c = await NovaClient.fromEnv(env, { retry: { retries: 0 } });
    expect(s.keystone.tokenRequests).toBe(1);
    expect(c.projectId).toBe(s.nova.projectId);
    expect(c.microversion).toBe('2.79');
    expect((await c.getQuotaSetDetail())['cores']).toMatchObject({ in_use: 0 });
    expect(s.keystone.tokenRequests).toBe(1);
    await expect(NovaClient.fromEnv({ ...env, OS_APPLICATION_CREDENTIAL_SECRET: 'wrong-secret' })).rejects.toBeInstanceOf(AuthError);
  });
});

describe('a 401 on a brand-new token (a revoked role): one authentication for the client, not one per wait', () => {
  it('20 pending delete-waits whose token Nova starts refusing: one re-authentication, every wait ends with AuthError, every server still unconfirmed', async () => {
    let roleRevoked = false;
    const ref: { keystone?: FakeKeystone } = {};
    const s = await stack({}, {}, (t) => !roleRevoked && ref.keystone!.isValid(t));
    ref.keystone = s.keystone;
    // The engine's rate cap on (the default): the waits' requests go out one after another, as in the field.
    const c = client(s, {}, { maxRequestsPerSecond: 10 });
    const ids = Array.from({ length: 20 }, () => s.nova.addServer({ status: 'ACTIVE' }).id);
    s.nova.setDefaultDeleteBehavior('never');
    const run = c.deleteServers(ids, { wait: true, intervalMs: 1000, timeoutMs: 120_000 });
    // Every DELETE accepted, then the role goes.
    for (let i = 0; i < 200 && s.nova.requests.filter((r) => r.method === 'DELETE').length < 20; i++) await vi.advanceTimersByTimeAsync(50);
    expect(s.nova.requests.filter((r) => r.method === 'DELETE' && r.status === 204)).toHaveLength(20);
    const before = s.keystone.tokenRequests;
    roleRevoked = true;
    const result = await settle(run);
    expect(s.keystone.tokenRequests - before).toBe(1);
    expect(result.failed).toHaveLength(20);
    for (const f of result.failed) expect(f.error).toBeInstanceOf(AuthError);
    expect(c.unconfirmedDeletes().map((u) => u.serverId).sort()).toEqual([...ids].sort());
    expect(c.unconfirmedDeletes().every((u) => u.state === 'failed' && u.lastError?.startsWith('AuthError'))).toBe(true);
  });
});

describe('the verdict on a refused fresh token holds for REFUSED_TOKEN_HOLD_MS', () => {
  it('later requests get AuthError without authenticating; after the hold a 401 starts one new generation, and a restored role works again', async () => {
    let roleRevoked = true;
    const ref: { keystone?: FakeKeystone } = {};
    const s = await stack({}, {}, (t) => !roleRevoked && ref.keystone!.isValid(t));
    ref.keystone = s.keystone;
    const c = client(s);
    expect(await settle(c.getLimits()).catch((e: unknown) => e)).toBeInstanceOf(AuthError);
    expect(s.keystone.tokenRequests).toBe(2);
    for (let i = 0; i < 5; i++) expect(await settle(c.getLimits()).catch((e: unknown) => e)).toBeInstanceOf(AuthError);
    expect(s.keystone.tokenRequests).toBe(2);
    await vi.advanceTimersByTimeAsync(REFUSED_TOKEN_HOLD_MS);
    roleRevoked = false; // an operator restored the role: the tokens issued meanwhile lack it still
    s.keystone.expireAllTokens();
    expect((await settle(c.getLimits())).absolute).toBeDefined();
    expect(s.keystone.tokenRequests).toBe(3);
  });
});
