/** FakeKeystone over raw HTTP: Keystone's 201/401 shapes, lifetimes, early expiry, request log. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeKeystone } from '../../src/testing/index.js';

const started: FakeKeystone[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(started.splice(0).map((k) => k.stop()));
});

async function start(options: Parameters<typeof FakeKeystone.start>[0] = {}): Promise<FakeKeystone> {
  const k = await FakeKeystone.start(options);
  started.push(k);
  return k;
}

async function post(k: FakeKeystone, body: unknown, query = ''): Promise<{ status: number; headers: Headers; json: unknown }> {
  const res = await fetch(`${k.authUrl}/auth/tokens${query}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const PASSWORD = {
  auth: {
    identity: { methods: ['password'], password: { user: { name: 'ci-bot', domain: { name: 'Default' }, password: 'ci-bot-password' } } },
    scope: { project: { name: 'ci', domain: { id: 'default' } } },
  },
};
const UNAUTHORIZED = { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } };

describe('FakeKeystone', () => {
  it('issues a project-scoped token: 201, X-Subject-Token, Keystone token body with a catalog', async () => {
    const k = await start({ computeUrl: 'http://127.0.0.1:9/v2.1', tokenLifetimeMs: 180_000 });
    const before = Date.now();
    const r = await post(k, PASSWORD);
    expect(r.status).toBe(201);
    const token = r.headers.get('x-subject-token')!;
    expect(token).toMatch(/^gAAAAAB[A-Za-z0-9_-]{176}$/);
    expect(k.isValid(token)).toBe(true);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON body read field by field
    const body = r.json as { token: Record<string, any> };
    expect(body.token['expires_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(body.token['issued_at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}000Z$/);
    expect(Date.parse(body.token['expires_at']) - Date.parse(body.token['issued_at'])).toBe(180_000);
    expect(Date.parse(body.token['issued_at'])).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(body.token['methods']).toEqual(['password']);
    expect(body.token['project']).toEqual({ domain: { id: 'default', name: 'Default' }, id: k.projectId('ci'), name: 'ci' });
    expect(body.token['user']).toEqual({ domain: { id: 'default', name: 'Default' }, id: k.userId('ci-bot'), name: 'ci-bot', password_expires_at: null });
    expect(body.token['roles'].map((x: { name: string }) => x.name)).toEqual(['reader', 'member']);
    expect(body.token['application_credential']).toBeUndefined();
    const compute = body.token['catalog'].find((s: { type: string }) => s.type === 'compute');
    expect(compute.endpoints.map((e: Record<string, string>) => [e['interface'], e['region_id'], e['region'], e['url']])).toEqual([
      ['public', 'RegionOne', 'RegionOne', 'http://127.0.0.1:9/v2.1'],
      ['internal', 'RegionOne', 'RegionOne', 'http://127.0.0.1:9/v2.1'],
    ]);
    expect(((await post(k, PASSWORD, '?nocatalog')).json as { token: object }).token).not.toHaveProperty('catalog');
  });

  it('rejects bad credentials with Keystone 401 body and WWW-Authenticate', async () => {
    const k = await start();
    const bad = structuredClone(PASSWORD);
    bad.auth.identity.password.user.password = 'wrong';
    const r = await post(k, bad);
    expect(r.status).toBe(401);
    expect(r.json).toEqual(UNAUTHORIZED);
    expect(r.headers.get('www-authenticate')).toBe(`Keystone uri="${k.url}"`);
    // A project the user has no role on.
    k.addProject({ name: 'other' });
    const other = structuredClone(PASSWORD);
    other.auth.scope.project.name = 'other';
    expect((await post(k, other)).json).toEqual(UNAUTHORIZED);
    expect((await post(k, { auth: {} })).status).toBe(400);
  });

  it('application credentials: pre-scoped token with application_credential; a scope is refused', async () => {
    const k = await start();
    const id = k.applicationCredentialId('ci-appcred');
    const ok = await post(k, { auth: { identity: { methods: ['application_credential'], application_credential: { id, secret: 'ci-appcred-secret' } } } });
    expect(ok.status).toBe(201);
    const token = (ok.json as { token: Record<string, unknown> }).token;
    expect(token['application_credential']).toEqual({ id, name: 'ci-appcred', restricted: true });
    expect(token['methods']).toEqual(['application_credential']);
    expect((token['project'] as { id: string }).id).toBe(k.projectId('ci'));
    const scoped = await post(k, {
      auth: {
        identity: { methods: ['application_credential'], application_credential: { id, secret: 'ci-appcred-secret' } },
        scope: { project: { id: k.projectId('ci') } },
      },
    });
    expect(scoped.status).toBe(401);
    expect(scoped.json).toEqual({
      error: { code: 401, title: 'Unauthorized', message: 'Error authenticating with application credential: Application credentials cannot request a scope.' },
    });
  });

  it('token lifetime, expireToken, expireAllTokens, isValid', async () => {
    const k = await start({ tokenLifetimeMs: 150 });
    // On the fake clock (the requests still go over the socket): the lifetime is exact.
    vi.useFakeTimers();
    const issuedAt = Date.now();
    const ra = await post(k, PASSWORD);
    const a = ra.headers.get('x-subject-token')!;
    const expiresA = Date.parse((ra.json as { token: { expires_at: string } }).token.expires_at);
    expect(expiresA - issuedAt).toBe(150);
    expect(k.isValid(a) || Date.now() >= expiresA).toBe(true);
    expect(k.isValid(a)).toBe(true);
    k.tokenLifetimeMs = 60_000;
    const b = (await post(k, PASSWORD)).headers.get('x-subject-token')!;
    const c = (await post(k, PASSWORD)).headers.get('x-subject-token')!;
    expect([k.isValid(b), k.isValid(c), k.isValid('nope'), k.isValid(undefined)]).toEqual([true, true, false, false]);
    await vi.advanceTimersByTimeAsync(149);
    expect(k.isValid(a)).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(k.isValid(a)).toBe(false);
    expect(k.expireToken(b)).toBe(true);
    expect(k.expireToken('unknown')).toBe(false);
    expect([k.isValid(b), k.isValid(c)]).toEqual([false, true]);
    expect(k.expireAllTokens()).toBe(1);
    expect(k.isValid(c)).toBe(false);
    expect(k.issuedTokens()).toEqual([a, b, c]);
  });

  it('exchanges a valid token (token method) keeping its expiry; an expired one is refused', async () => {
    const k = await start();
    const first = await post(k, PASSWORD);
    const t = first.headers.get('x-subject-token')!;
    const r = await post(k, { auth: { identity: { methods: ['token'], token: { id: t } } } });
    expect(r.status).toBe(201);
    expect((r.json as { token: Record<string, unknown> }).token['expires_at']).toBe((first.json as { token: Record<string, unknown> }).token['expires_at']);
    k.expireToken(t);
    expect((await post(k, { auth: { identity: { methods: ['token'], token: { id: t } } } })).status).toBe(401);
  });

  it('logs requests without bodies; can fail the next token requests', async () => {
    const k = await start();
    k.failNextTokenRequests(1, 503);
    expect((await post(k, PASSWORD)).status).toBe(503);
    expect((await post(k, PASSWORD)).status).toBe(201);
    expect(k.tokenRequests).toBe(2);
    expect(k.requests.map((r) => [r.method, r.path, r.status, r.authMethods])).toEqual([
      ['POST', '/v3/auth/tokens', 503, ['password']],
      ['POST', '/v3/auth/tokens', 201, ['password']],
    ]);
    expect(JSON.stringify(k.requests)).not.toContain('ci-bot-password');
    const v = await fetch(`${k.authUrl}`);
    expect(v.status).toBe(200);
  });

  it('revokes a token with DELETE /v3/auth/tokens', async () => {
    const k = await start();
    const admin = (await post(k, PASSWORD)).headers.get('x-subject-token')!;
    const victim = (await post(k, PASSWORD)).headers.get('x-subject-token')!;
    const res = await fetch(`${k.authUrl}/auth/tokens`, { method: 'DELETE', headers: { 'X-Auth-Token': admin, 'X-Subject-Token': victim } });
    expect(res.status).toBe(204);
    expect([k.isValid(admin), k.isValid(victim)]).toEqual([true, false]);
  });
});
