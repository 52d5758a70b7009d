/** KeystoneAuth against FakeKeystone: both auth methods, catalog selection, renewal, invalidation, single flight. */
import { afterEach, describe, expect, it } from 'vitest';
import { AuthError, ConfigError, NovaNetworkError, ValidationError } from '../../src/errors/index.js';
import { EndpointNotFoundError, KeystoneAuth, authRequestBody, normaliseAuthUrl, redactSecrets, type KeystoneAuthOptions } from '../../src/auth/keystone.js';
import { FakeKeystone, type FakeKeystoneOptions } from '../../src/testing/fakeKeystone.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { closedPort } from '../helpers.js';

const started: FakeKeystone[] = [];

/** A loopback port nobody listens on. */
afterEach(async () => {
  await Promise.all(started.splice(0).map((k) => k.stop()));
});

async function keystone(options: FakeKeystoneOptions = {}): Promise<FakeKeystone> {
  const k = await FakeKeystone.start({ computeUrl: 'http://127.0.0.1:1/v2.1', ...options });
  started.push(k);
  return k;
}

function password(k: FakeKeystone, extra: Partial<KeystoneAuthOptions> = {}): KeystoneAuth {
  return new KeystoneAuth({
    authUrl: k.url,
    username: 'ci-bot',
    password: 'ci-bot-password',
    userDomainName: 'Default',
    projectName: 'ci',
    projectDomainName: 'Default',
    ...extra,
  });
}

describe('KeystoneAuth: password', () => {
  it('authenticates by user name + domain, scoped to a project by name + domain', async () => {
    const k = await keystone();
    const auth = password(k);
    const token = await auth.getToken();
    expect(k.isValid(token)).toBe(true);
    expect(k.issuedTokens()).toEqual([token]);
    expect(auth.getProjectId()).toBe(k.projectId('ci'));
    expect(auth.tokenInfo()?.methods).toEqual(['password']);
    expect(auth.tokenInfo()?.lifetimeMs).toBe(3_600_000);
    expect(await auth.getEndpoint()).toBe('http://127.0.0.1:1/v2.1');
    expect(k.tokenRequests).toBe(1);
    expect(auth.secrets()).toEqual(['ci-bot-password', token]);
  });

  it('authenticates by user id, scoped by project id', async () => {
    const k = await keystone();
    const auth = new KeystoneAuth({ authUrl: k.authUrl, userId: k.userId('ci-bot'), password: 'ci-bot-password', projectId: k.projectId('ci') });
    expect(k.isValid(await auth.getToken())).toBe(true);
    expect(auth.getProjectId()).toBe(k.projectId('ci'));
  });

  it('builds the request bodies of the Keystone API reference', () => {
    expect(
      authRequestBody({ username: 'u', userDomainName: 'Default', password: 'p', projectName: 'admin', projectDomainId: 'default' }),
    ).toEqual({
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'u', domain: { name: 'Default' }, password: 'p' } } },
        scope: { project: { name: 'admin', domain: { id: 'default' } } },
      },
    });
    // No domain given: the default domain id, like osc-lib's --os-default-domain.
    expect(authRequestBody({ username: 'u', password: 'p', projectName: 'x' }).auth['scope']).toEqual({ project: { name: 'x', domain: { id: 'default' } } });
    expect(authRequestBody({ userId: 'uid', password: 'p', projectId: 'pid', domainName: 'D' })).toEqual({
      auth: { identity: { methods: ['password'], password: { user: { id: 'uid', password: 'p' } } }, scope: { project: { id: 'pid' } } },
    });
    expect(authRequestBody({ applicationCredentialId: 'acid', applicationCredentialSecret: 's' })).toEqual({
      auth: { identity: { methods: ['application_credential'], application_credential: { secret: 's', id: 'acid' } } },
    });
    expect(authRequestBody({ applicationCredentialName: 'n', applicationCredentialSecret: 's', username: 'u', userDomainId: 'd' })).toEqual({
      auth: {
        identity: { methods: ['application_credential'], application_credential: { secret: 's', name: 'n', user: { name: 'u', domain: { id: 'd' } } } },
      },
    });
    expect(authRequestBody({ token: 't', projectId: 'p' })).toEqual({
      auth: { identity: { methods: ['token'], token: { id: 't' } }, scope: { project: { id: 'p' } } },
    });
  });

  it('rejects a wrong password with AuthError carrying Keystone message, status and URL', async () => {
    const k = await keystone();
    const auth = password(k, { password: 'wrong-password' });
    const error = await auth.getToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    const e = error as AuthError;
    expect(e.status).toBe(401);
    expect(e.fault).toBe('error');
    expect(e.url).toBe(`${k.authUrl}/auth/tokens`);
    expect(e.message).toBe(
      'Keystone authentication failed (password, user ci-bot, project ci): HTTP 401: The request you have made requires authentication.',
    );
    expect(e.requestId).toMatch(/^req-/);
    expect(auth.secrets()).toEqual(['wrong-password']);
  });

  it('maps a Keystone 503 to ServerError and a dead Keystone to NovaNetworkError', async () => {
    const k = await keystone();
    k.failNextTokenRequests(1, 503);
    const auth = password(k);
    await expect(auth.getToken()).rejects.toMatchObject({ name: 'ServerError', status: 503 });
    expect(k.isValid(await auth.getToken())).toBe(true);
    const port = await closedPort();
    const dead = new KeystoneAuth({ authUrl: `http://127.0.0.1:${port}/v3`, userId: 'u', password: 'pw-secret' });
    const e = (await dead.getToken().catch((x: unknown) => x)) as NovaNetworkError;
    expect(e).toBeInstanceOf(NovaNetworkError);
    expect(e.code).toBe('ECONNREFUSED');
    expect(e.status).toBe(0);
    expect(e.message).toBe(
      `Keystone POST http://127.0.0.1:${port}/v3/auth/tokens failed without a response: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:${port})`,
    );
  });

  it('times out a Keystone that does not answer (requestTimeoutMs)', async () => {
    const net = await import('node:net');
    const server = net.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const auth = new KeystoneAuth({ authUrl: `http://127.0.0.1:${port}`, userId: 'u', password: 'pw-secret', requestTimeoutMs: 30 });
      const e = (await auth.getToken().catch((x: unknown) => x)) as NovaNetworkError;
      expect(e).toBeInstanceOf(NovaNetworkError);
      expect(e.timedOut).toBe(true);
      expect(e.message).toBe(`Keystone POST http://127.0.0.1:${port}/v3/auth/tokens timed out (no response within 30 ms)`);
    } finally {
      server.close();
    }
  });
});

describe('KeystoneAuth: application credential', () => {
  it('authenticates by id + secret without a scope; the project comes from the token', async () => {
    const k = await keystone();
    const auth = new KeystoneAuth({ authUrl: k.url, applicationCredentialId: k.applicationCredentialId('ci-appcred'), applicationCredentialSecret: 'ci-appcred-secret' });
    expect(auth.method).toBe('application_credential');
    expect(auth.getProjectId()).toBeUndefined();
    const token = await auth.getToken();
    expect(k.isValid(token)).toBe(true);
    expect(auth.getProjectId()).toBe(k.projectId('ci'));
    expect(auth.tokenInfo()?.applicationCredentialId).toBe(k.applicationCredentialId('ci-appcred'));
    expect(k.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v3/auth/tokens', status: 201, authMethods: ['application_credential'] });
  });

  it('authenticates by name + secret + user id, and by name + user name + domain', async () => {
    const k = await keystone();
    const byId = new KeystoneAuth({ authUrl: k.url, applicationCredentialName: 'ci-appcred', applicationCredentialSecret: 'ci-appcred-secret', userId: k.userId('ci-bot') });
    expect(k.isValid(await byId.getToken())).toBe(true);
    const byName = new KeystoneAuth({
      authUrl: k.url,
      method: 'application_credential',
      applicationCredentialName: 'ci-appcred',
      applicationCredentialSecret: 'ci-appcred-secret',
      username: 'ci-bot',
      userDomainName: 'Default',
    });
    expect(k.isValid(await byName.getToken())).toBe(true);
  });

  it('rejects a wrong secret with AuthError', async () => {
    const k = await keystone();
    const auth = new KeystoneAuth({ authUrl: k.url, applicationCredentialId: k.applicationCredentialId('ci-appcred'), applicationCredentialSecret: 'nope-nope' });
    await expect(auth.getToken()).rejects.toMatchObject({ name: 'AuthError', status: 401 });
  });

  it('refuses a project scope with an application credential before any request', () => {
    expect(() => new KeystoneAuth({ authUrl: 'http://k', applicationCredentialId: 'a', applicationCredentialSecret: 's', projectName: 'p' })).toThrow(
      new ValidationError('application credentials are scoped to their own project: do not give projectId or projectName'),
    );
  });
});

describe('KeystoneAuth: token', () => {
  it('exchanges a token at Keystone for a catalog (token method), keeping its expiry', async () => {
    const k = await keystone();
    const original = await password(k).getToken();
    const auth = new KeystoneAuth({ authUrl: k.url, token: original, projectName: 'ci' });
    const exchanged = await auth.getToken();
    expect(exchanged).not.toBe(original);
    expect(k.isValid(exchanged)).toBe(true);
    expect(auth.tokenInfo()?.methods).toEqual(['token', 'password']);
    expect(await auth.getEndpoint()).toBe('http://127.0.0.1:1/v2.1');
    expect(auth.secrets()).toEqual([original, exchanged]);
  });

  it('uses a token as it is with an endpoint override and no authUrl; it cannot be renewed', async () => {
    const auth = new KeystoneAuth({ token: 'premade-token', endpointOverride: 'http://nova:8774/v2.1/' });
    expect(await auth.getToken()).toBe('premade-token');
    expect(await auth.getEndpoint()).toBe('http://nova:8774/v2.1');
    expect(auth.invalidate('premade-token')).toBe(false);
    expect(auth.tokenRequests).toBe(0);
  });
});

describe('KeystoneAuth: catalog', () => {
  const endpoints: FakeKeystoneOptions['computeEndpoints'] = [
    { interface: 'public', region: 'RegionOne', url: 'https://one.example/compute/v2.1' },
    { interface: 'internal', region: 'RegionOne', url: 'http://one.internal:8774/v2.1' },
    { interface: 'public', region: 'RegionTwo', url: 'https://two.example/compute/v2.1/' },
    { interface: 'admin', region: 'RegionTwo', url: 'http://two.admin:8774/v2.1' },
  ];

  it('selects the endpoint by interface and region', async () => {
    const k = await keystone({ computeEndpoints: endpoints });
    expect(await password(k).getEndpoint()).toBe('https://one.example/compute/v2.1');
    expect(await password(k, { interface: 'internal' }).getEndpoint()).toBe('http://one.internal:8774/v2.1');
    expect(await password(k, { interface: 'internalURL' }).getEndpoint()).toBe('http://one.internal:8774/v2.1');
    expect(await password(k, { regionName: 'RegionTwo' }).getEndpoint()).toBe('https://two.example/compute/v2.1');
    expect(await password(k, { regionName: 'RegionTwo', interface: 'admin' }).getEndpoint()).toBe('http://two.admin:8774/v2.1');
    expect(await password(k, { endpointOverride: 'http://override:1/v2.1' }).getEndpoint()).toBe('http://override:1/v2.1');
  });

  it('names type, interface and region when nothing matches', async () => {
    const k = await keystone({ computeEndpoints: endpoints });
    const e = (await password(k, { regionName: 'RegionThree', interface: 'internal' }).getEndpoint().catch((x: unknown) => x)) as EndpointNotFoundError;
    expect(e).toBeInstanceOf(EndpointNotFoundError);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.key).toBe('region_name');
    expect(e.message).toBe(
      'No compute endpoint with interface internal in region RegionThree in the Keystone service catalog ' +
        '(catalog has: compute[public@RegionOne,internal@RegionOne,public@RegionTwo,admin@RegionTwo] identity[public@RegionOne,internal@RegionOne,admin@RegionOne])',
    );
    const k2 = await keystone({ computeEndpoints: [] });
    await expect(password(k2, { interface: 'admin' }).getEndpoint()).rejects.toThrow(
      'No compute endpoint with interface admin in the Keystone service catalog (catalog has: compute[] identity[',
    );
  });
});

describe('KeystoneAuth: renewal', () => {
  it('renews a token that has less than minTokenLifeMs left, before use', async () => {
    const k = await keystone({ tokenLifetimeMs: 1000 });
    // The provider's clock stands still unless moved: no real time window to miss on a busy machine.
    const startMs = Date.now();
    let passedMs = 0;
    const clock: Clock = { ...systemClock, wallNow: () => startMs + passedMs };
    const auth = password(k, { minTokenLifeMs: 900, clock });
    const first = await auth.getToken();
    expect(await auth.getToken()).toBe(first);
    expect(k.tokenRequests).toBe(1);
    passedMs = 130; // 870 ms left on the provider's clock
    expect(k.isValid(first)).toBe(true); // still valid, but less than 900 ms left
    const second = await auth.getToken();
    expect(second).not.toBe(first);
    expect(k.tokenRequests).toBe(2);
    expect(auth.secrets()).toEqual(['ci-bot-password', first, second]);
  });

  it('by default renews 120 s before expiry (keystoneauth MIN_TOKEN_LIFE)', async () => {
    const k = await keystone({ tokenLifetimeMs: 119_000 });
    const auth = password(k);
    expect(auth.minTokenLifeMs).toBe(120_000);
    const a = await auth.getToken();
    const b = await auth.getToken();
    expect(b).not.toBe(a);
    expect(k.tokenRequests).toBe(2);
    const k2 = await keystone({ tokenLifetimeMs: 125_000 });
    const auth2 = password(k2);
    expect(await auth2.getToken()).toBe(await auth2.getToken());
    expect(k2.tokenRequests).toBe(1);
  });

  it('invalidate(token) returns true and makes the next getToken fetch a new token', async () => {
    const k = await keystone();
    const auth = password(k);
    const first = await auth.getToken();
    expect(auth.invalidate(first)).toBe(true);
    const second = await auth.getToken();
    expect(second).not.toBe(first);
    // A stale token (already replaced) does not cause another renewal.
    expect(auth.invalidate(first)).toBe(true);
    expect(await auth.getToken()).toBe(second);
    expect(k.tokenRequests).toBe(2);
  });

  it('shares one renewal between concurrent callers (single flight)', async () => {
    const k = await keystone();
    const auth = password(k);
    const tokens = await Promise.all(Array.from({ length: 20 }, () => auth.getToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(k.tokenRequests).toBe(1);
    auth.invalidate(tokens[0]!);
    const again = await Promise.all(Array.from({ length: 20 }, () => auth.getToken()));
    expect(new Set(again).size).toBe(1);
    expect(again[0]).not.toBe(tokens[0]);
    expect(k.tokenRequests).toBe(2);
  });

  it('an aborted caller does not abort the shared renewal', async () => {
    const k = await keystone();
    const auth = password(k);
    const controller = new AbortController();
    const aborted = auth.getToken({ signal: controller.signal });
    const other = auth.getToken();
    controller.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    expect(k.isValid(await other)).toBe(true);
    expect(k.tokenRequests).toBe(1);
  });
});

describe('KeystoneAuth: options', () => {
  it('normalises auth_url', () => {
    expect(normaliseAuthUrl('http://k:5000')).toBe('http://k:5000/v3');
    expect(normaliseAuthUrl('http://k:5000/')).toBe('http://k:5000/v3');
    expect(normaliseAuthUrl('https://k/identity')).toBe('https://k/identity/v3');
    expect(normaliseAuthUrl('https://k/identity/v3/')).toBe('https://k/identity/v3');
    expect(() => normaliseAuthUrl('http://k:5000/v2.0')).toThrow(ValidationError);
    expect(() => normaliseAuthUrl('keystone:5000')).toThrow(ValidationError);
    expect(() => normaliseAuthUrl('http://user:pw@k:5000')).toThrow(new ValidationError('authUrl must not contain user info (user:password@)'));
  });

  it('rejects bad options before any request, naming the option, never the value', () => {
    expect(() => new KeystoneAuth({ authUrl: 'http://k', username: 'u' })).toThrow(new ValidationError('password auth needs password'));
    expect(() => new KeystoneAuth({ authUrl: 'http://k', password: 'secret-pw' })).toThrow(
      new ValidationError('password auth needs username (with a user domain) or userId'),
    );
    expect(() => new KeystoneAuth({ userId: 'u', password: 'secret-pw' })).toThrow(new ValidationError('password auth needs authUrl'));
    expect(() => new KeystoneAuth({ authUrl: 'http://k', applicationCredentialName: 'n', applicationCredentialSecret: 's' })).toThrow(
      new ValidationError('applicationCredentialName needs userId, or username with a user domain'),
    );
    expect(() => new KeystoneAuth({ token: 't' })).toThrow(ValidationError);
    expect(() => new KeystoneAuth({ authUrl: 'http://k', userId: 'u', password: '' })).toThrow(new ValidationError('password must be a non-empty string'));
    expect(() => new KeystoneAuth({ authUrl: 'http://k', userId: 'u', password: 'p', interface: 'private' })).toThrow(ValidationError);
    expect(() => new KeystoneAuth({ authUrl: 'http://k', userId: 'u', password: 'p', minTokenLifeMs: -1 })).toThrow(ValidationError);
    expect(() => new KeystoneAuth({ authUrl: 'http://k', userId: 'u', password: 'p', requestTimeoutMs: 0 })).toThrow(ValidationError);
  });

  it('redacts secrets from text', () => {
    expect(redactSecrets('a hunter2 b hunter2', ['hunter2'])).toBe('a [REDACTED] b [REDACTED]');
  });
});
