/**
 * Fault matrix, more cells, on fake timers through the fakes' in-process adapters:
 * - `QuotaGuard.withQuotaGuard({ flavorRef, count }, fn)`, `fn` creating its own server, with every
 *   fault of the matrix on `GET /limits` (README "Quota guard");
 * - a NovaClient on `KeystoneAuth` (FakeKeystone) with faults on the token request (README
 *   "Configuration: Keystone, clouds.yaml, OS_*"): the token is fetched inside the client's attempt,
 *   so a transient token failure is retried by the client's retry policy;
 * - persistent faults on the looks and on the DELETE of `deleteServer` with wait (README "Delete and
 *   wait").
 * Every cell settles by its deadline and leaves no timer and no request behind.
 */
import type { AxiosAdapter, AxiosResponse, InternalAxiosRequestConfig } from 'axios';
import { describe, expect, it } from 'vitest';
import { DeleteTimeoutError, KeystoneAuth, NovaApiError, NovaClient, QuotaGuard, ServerError, type Server } from '../../src/index.js';
import { FakeKeystone, type FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova, useFakeClock } from '../helpers.js';
import { FAULT_NAMES, GARBLED, REQUEST_TIMEOUT_MS, TRANSIENT, inject, matrixClient, outcomeClass, runCell, GUARD_DEADLINE_MS, GUARD_OPTIONS, type FaultName } from './support.js';

useFakeClock();


/** The documented outcome of `withQuotaGuard` whose first `GET /limits` meets `fault`, and how many reads it makes. */
function expectedLimits(fault: FaultName): { outcome: string; reads: number } {
  // An idempotent GET: the client retries it (or re-authenticates once) and the call goes on.
  if (TRANSIENT.includes(fault)) return { outcome: 'ok', reads: 2 };
  if (fault === '401 twice') return { outcome: 'AuthError', reads: 2 };
  // A body without `limits.absolute`: headroom unknown, Nova decides (one read, then `fn`).
  if (GARBLED.includes(fault)) return { outcome: 'ok', reads: 1 };
  // `headroom()` / the guard throw the client's errors of `GET /limits`.
  if (fault === 'proxy 404') return { outcome: 'NotFoundError', reads: 1 };
  throw new Error(`no expectation for ${fault}`);
}

describe('fault matrix: QuotaGuard.withQuotaGuard({ flavorRef, count }), fault on GET /limits', () => {
  it.each(FAULT_NAMES.map((fault) => ({ fault, ...expectedLimits(fault) })))('$fault → $outcome after $reads read(s)', async ({ fault, outcome, reads }) => {
    const nova = await startNova();
    const client = matrixClient(nova);
    const guard = new QuotaGuard(client, GUARD_OPTIONS);
    inject(nova, fault, 'GET', '/limits');
    let calls = 0;
    // `fn` resolves once Nova counts its server (out of BUILD), as withQuotaGuard asks.
    const fn = async (): Promise<Server> => {
      calls++;
      const s = await client.createServer({ name: 'ci-1', flavorRef: '2', imageRef: 'img', networks: 'none' });
      for (;;) {
        const now = await client.getServer(s.id);
        if (now.status !== 'BUILD') return now;
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const s = await runCell(nova, guard.withQuotaGuard({ flavorRef: '2', count: 1 }, fn), GUARD_DEADLINE_MS);
    expect(outcomeClass(s)).toBe(outcome);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(reads);
    expect(calls, 'fn called once when the call succeeds, never after a failed read').toBe(outcome === 'ok' ? 1 : 0);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(calls);
    // No server left behind: fn's server after a success, none after a failure; no claim held.
    expect(nova.listServerStates().map((x) => x.id)).toEqual(s.ok ? [s.value.id] : []);
    if (s.ok) expect(s.value.status).toBe('ACTIVE');
    expect(guard.inFlightClaims).toBe(0);
  });
});

/** A fault on Keystone's `POST /v3/auth/tokens`. */
type TokenFault = '500' | '503' | 'reset' | 'hang' | '401 bad credentials' | 'malformed' | 'HTML 200';

/** The client's retry policy in the Keystone cells (as the matrix client's). */
const RETRIES = 4;
const MAX_DELAY_MS = 20;

/**
 * FakeKeystone's adapter, except that the first `times` token requests meet `fault` (a 401 is
 * FakeKeystone's own answer to a wrong password, so it passes through).
 */
function faultyKeystone(keystone: FakeKeystone, fault: TokenFault, times: number): AxiosAdapter {
  let left = times;
  return async (config: InternalAxiosRequestConfig): Promise<AxiosResponse> => {
    const isToken = String(config.method).toUpperCase() === 'POST' && /\/auth\/tokens$/.test(String(config.url));
    if (!isToken || left <= 0 || fault === '401 bad credentials') return keystone.adapter(config);
    left--;
    const reply = (status: number, data: string, type: string, headers: Record<string, string> = {}): AxiosResponse => ({
      status,
      statusText: '',
      headers: { 'content-type': type, ...headers },
      data,
      config,
      request: {},
    });
    switch (fault) {
      case '500':
        return reply(500, JSON.stringify({ error: { code: 500, title: 'Internal Server Error', message: 'An unexpected error prevented the server from fulfilling your request.' } }), 'application/json');
      case '503':
        return reply(503, '<html><body><h1>503 Service Unavailable</h1></body></html>', 'text/html');
      case 'reset':
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      case 'hang':
        return new Promise((_, reject) => {
          const s = config.signal as AbortSignal | undefined;
          s?.addEventListener('abort', () => reject(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED', name: 'CanceledError' })), { once: true });
        });
      case 'malformed':
        return reply(201, '{"token": {"expires_at": ', 'application/json', { 'x-subject-token': 'gAAAAA-malformed' });
      case 'HTML 200':
        return reply(200, '<html><head><title>Welcome</title></head><body>Welcome</body></html>', 'text/html');
    }
  };
}

/** FakeNova requiring FakeKeystone's tokens, and a client on KeystoneAuth whose token requests meet `fault` `times` times. */
async function keystoneStack(fault: TokenFault, times: number): Promise<{ nova: FakeNova; keystone: FakeKeystone; auth: KeystoneAuth; client: NovaClient }> {
  const ref: { keystone?: FakeKeystone } = {};
  const nova = await startNova({ validateToken: (t) => ref.keystone!.isValid(t) });
  const keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, projects: [{ id: nova.projectId, name: 'ci' }] });
  afterThisTest(() => keystone.stop());
  ref.keystone = keystone;
  const auth = new KeystoneAuth({
    authUrl: keystone.url,
    username: 'ci-bot',
    password: fault === '401 bad credentials' ? 'not-the-password' : 'ci-bot-password',
    userDomainName: 'Default',
    projectName: 'ci',
    projectDomainName: 'Default',
    adapter: faultyKeystone(keystone, fault, times),
  });
  const client = new NovaClient({
    auth,
    microversion: '2.79',
    adapter: nova.adapter,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    retry: { retries: RETRIES, minDelayMs: 2, maxDelayMs: MAX_DELAY_MS, maxRetryTimeMs: 5000 },
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
  });
  return { nova, keystone, auth, client };
}

/** Bound of a call whose every attempt spends at most one request time limit: attempts × limit + the backoffs. */
const KEYSTONE_DEADLINE_MS = (RETRIES + 1) * REQUEST_TIMEOUT_MS + RETRIES * MAX_DELAY_MS;

/** `getLimits()` on `client`, with the token requests sent by the time it settled. */
async function limitsCell(s: Awaited<ReturnType<typeof keystoneStack>>): Promise<{ outcome: string; error: Error | undefined; tokenRequests: number }> {
  let atSettle = -1;
  const p = s.client.getLimits().finally(() => (atSettle = s.auth.tokenRequests));
  const out = await runCell(s.nova, p, KEYSTONE_DEADLINE_MS);
  expect(s.auth.tokenRequests, 'no token request after the call settled').toBe(atSettle);
  return { outcome: outcomeClass(out), error: out.ok ? undefined : out.error, tokenRequests: atSettle };
}

describe('fault matrix: NovaClient on KeystoneAuth, fault on the token request', () => {
  const TRANSIENT_TOKEN: Array<{ fault: TokenFault; persistent: string }> = [
    { fault: '500', persistent: 'ServerError' },
    { fault: '503', persistent: 'ServerError' },
    { fault: 'reset', persistent: 'NovaNetworkError' },
    { fault: 'hang', persistent: 'NovaNetworkError' },
  ];

  it.each(TRANSIENT_TOKEN)('$fault once → retried by the client, getLimits succeeds', async ({ fault }) => {
    const s = await keystoneStack(fault, 1);
    const c = await limitsCell(s);
    expect(c.outcome).toBe('ok');
    expect(c.tokenRequests).toBe(2);
    expect(s.nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });

  it.each(TRANSIENT_TOKEN)('$fault on every token request → $persistent after retries+1 token requests, no Nova request', async ({ fault, persistent }) => {
    const s = await keystoneStack(fault, Number.POSITIVE_INFINITY);
    const c = await limitsCell(s);
    expect(c.outcome).toBe(persistent);
    expect(c.error).toBeInstanceOf(NovaApiError);
    expect(c.tokenRequests).toBe(RETRIES + 1);
    expect(s.nova.requests).toHaveLength(0);
    expect(String(c.error?.message)).not.toContain('ci-bot-password');
  });

  it('401 (bad credentials) → AuthError at once, one token request, no Nova request', async () => {
    const s = await keystoneStack('401 bad credentials', 1);
    const c = await limitsCell(s);
    expect(c.outcome).toBe('AuthError');
    expect(c.tokenRequests).toBe(1);
    expect(s.nova.requests).toHaveLength(0);
    expect(String(c.error?.message)).not.toContain('not-the-password');
  });

  it('HTML 200 without X-Subject-Token → a NovaApiError (status 200), never retried, no Nova request', async () => {
    const s = await keystoneStack('HTML 200', 1);
    const c = await limitsCell(s);
    // What the code does: the bare NovaApiError of `KeystoneAuth` ("answered 200 without an X-Subject-Token header").
    expect(c.error).toBeInstanceOf(NovaApiError);
    expect((c.error as NovaApiError).status).toBe(200);
    expect(c.tokenRequests).toBe(1);
    expect(s.nova.requests).toHaveLength(0);
  });

  // A 201 with X-Subject-Token whose body is not a token (not JSON) used to be kept as a token that
  // never expires, with an empty catalog. Now: InvalidResponseError, nothing kept, and the next call
  // authenticates afresh.
  it('malformed 201 body → InvalidResponseError, and the next call authenticates afresh', async () => {
    const s = await keystoneStack('malformed', 1);
    const first = await limitsCell(s);
    expect(first.outcome).toBe('InvalidResponseError');
    const second = await limitsCell(s);
    expect(second.outcome).toBe('ok');
    expect(s.auth.tokenRequests).toBe(2);
  });
});

describe('fault matrix: deleteServer with wait, persistent faults', () => {
  const WAIT = { intervalMs: 20, jitter: 0, timeoutMs: 3000 } as const;
  const POLL_RETRIES = 4;

  it('every look answers 503 → the last failure (ServerError) after pollRetries+1 looks, before timeoutMs; the server stays unconfirmed', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = matrixClient(nova);
    nova.inject({ status: 503, times: Number.POSITIVE_INFINITY, method: 'GET', path: `/servers/${id}` });
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, redeleteAfterMs: 0, pollRetries: POLL_RETRIES, wait: true }), WAIT.timeoutMs);
    expect(outcomeClass(s)).toBe('ServerError');
    if (!s.ok) expect(s.error).toBeInstanceOf(ServerError);
    // A look is one request (the engine, not the transport, retries it); each 503 widens the interval
    // (the engine's poll pace: 2, then 4 intervals at most), so the looks come 40, 80, 80, 80 ms apart.
    expect(nova.requestsTo('GET', `/servers/${id}`)).toHaveLength(POLL_RETRIES + 1);
    expect(nova.requestsTo('DELETE', `/servers/${id}`)).toHaveLength(1);
    expect(s.atMs).toBe((2 + 4 * (POLL_RETRIES - 1)) * WAIT.intervalMs);
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
  });

  it('every DELETE answers 503 → DeleteTimeoutError exactly at timeoutMs; the server stays, unconfirmed', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = matrixClient(nova);
    nova.inject({ status: 503, times: Number.POSITIVE_INFINITY, method: 'DELETE', path: `/servers/${id}` });
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, wait: true }), WAIT.timeoutMs);
    expect(outcomeClass(s)).toBe('DeleteTimeoutError');
    expect(s.atMs).toBe(WAIT.timeoutMs);
    if (!s.ok) expect(s.error).toMatchObject({ serverId: id, timeoutMs: WAIT.timeoutMs, elapsedMs: WAIT.timeoutMs });
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
    expect(client.unconfirmedDeletes().map((u) => u.serverId)).toEqual([id]);
    // Each round is the DELETE and its `deleteRetries` (default 3), then a look; rounds back off.
    const deletes = nova.requestsTo('DELETE', `/servers/${id}`).length;
    expect(deletes % 4).toBe(0);
    expect(deletes).toBeLessThanOrEqual(40);
  });

  // Known defect: the looks between the DELETE rounds answer 200 ACTIVE, but the DeleteTimeoutError
  // reports `polls: 0` and `lastStatus: undefined`, while its fields are documented as "Number of
  // polls made" and "Status seen on the last successful poll".
  it('every DELETE answers 503 → the DeleteTimeoutError reports the looks made and the status they saw', async () => {
    const nova = await startNova({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const client = matrixClient(nova);
    nova.inject({ status: 503, times: Number.POSITIVE_INFINITY, method: 'DELETE', path: `/servers/${id}` });
    const s = await runCell(nova, client.deleteServer(id, { ...WAIT, wait: true }), WAIT.timeoutMs);
    expect(s.ok).toBe(false);
    if (s.ok) return;
    expect(s.error).toBeInstanceOf(DeleteTimeoutError);
    expect(nova.requestsTo('GET', `/servers/${id}`).length).toBeGreaterThan(0);
    expect((s.error as DeleteTimeoutError).lastStatus).toBe('ACTIVE');
    expect((s.error as DeleteTimeoutError).polls).toBeGreaterThan(0);
  });
});
