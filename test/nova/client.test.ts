import http from 'node:http';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AbortError,
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  NovaApiError,
  NovaClient,
  NovaNetworkError,
  QuotaExceededError,
  RateLimitError,
  RequestTooLargeError,
  ServerError,
  ValidationError,
} from '../../src/index.js';
import { parseAbsoluteLimits } from '../../src/nova/client.js';
import { clientFor, settle, startNova } from '../helpers.js';
import { scriptedAdapter, type ScriptedReply } from '../transport/scriptedAdapter.js';

const TOKEN = 'gAAAAAsecret-token-value';

/** A bare HTTP server that records headers and answers from a script. */
async function scripted(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const seen: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  servers.push(server);
  return { endpoint: `http://127.0.0.1:${port}/v2.1`, seen };
}
const LIMITS_OK: ScriptedReply = { status: 200, body: { limits: { absolute: { maxTotalCores: 20 } } } };

/**
 * A client (with the test helper's fast retries) whose requests a scripted adapter answers: `first`
 * in turn, then `then`. The test runs on fake timers from here on, without jitter.
 */
function scriptedClient(first: ScriptedReply[], then: ScriptedReply = LIMITS_OK, options: Partial<ConstructorParameters<typeof NovaClient>[0]> = {}) {
  vi.useFakeTimers();
  vi.spyOn(Math, 'random').mockReturnValue(0); // p-retry's jitter factor is exactly 1
  const { adapter, sent } = scriptedAdapter((_r, n) => first[n - 1] ?? then);
  // Pinned, so that the script answers the calls under test, not a read of the version document.
  const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: TOKEN, adapter, microversion: '2.1', retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 }, ...options });
  return { client, sent };
}

/** Settle `p`, running the fake clock timer by timer. */
async function onFakeClock<T>(p: Promise<T>): Promise<T> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 1000 && !settled; i++) await vi.advanceTimersToNextTimerAsync();
  return p;
}

const servers: http.Server[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  vi.useRealTimers();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('NovaClient construction', () => {
  it('rejects bad options before any request', () => {
    expect(() => new NovaClient({ endpoint: 'ftp://x', token: 't' })).toThrow(ValidationError);
    expect(() => new NovaClient({ endpoint: 'http://x/v2.1' })).toThrow(/token/);
    expect(() => new NovaClient({ endpoint: 'http://x/v2.1', token: 't', requestTimeoutMs: 0 })).toThrow(/requestTimeoutMs/);
    expect(() => new NovaClient({ endpoint: 'http://x/v2.1', token: 't', microversion: '3' })).toThrow(/microversion/);
    expect(() => new NovaClient({ token: 't' })).toThrow(/endpoint/);
  });

  it('never shows its token through util.inspect or JSON', () => {
    const c = new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: TOKEN });
    expect(inspect(c, { depth: Infinity, showHidden: true })).not.toContain(TOKEN);
    expect(JSON.stringify(c)).not.toContain(TOKEN);
  });
});

describe('request headers', () => {
  it('sends the token, the microversion in both headers, JSON accept, and no Accept-Language', async () => {
    const { endpoint, seen } = await scripted((_req, res) => {
      res.setHeader('x-openstack-request-id', 'req-abc');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ limits: { rate: [], absolute: { maxTotalCores: 20, totalCoresUsed: 3 } } }));
    });
    const c = new NovaClient({ endpoint, token: TOKEN, microversion: '2.79' });
    const limits = await c.getLimits();
    expect(limits.requestId).toBe('req-abc');
    expect(c.lastRequestId).toBe('req-abc');
    const h = seen[0]!.headers;
    expect(seen[0]!.url).toBe('/v2.1/limits');
    expect(h['x-auth-token']).toBe(TOKEN);
    expect(h['x-openstack-nova-api-version']).toBe('2.79');
    expect(h['openstack-api-version']).toBe('compute 2.79');
    expect(h['accept']).toBe('application/json');
    expect(h['accept-language']).toBeUndefined();
  });

  it('unpinned, against an endpoint without a version document: reads it once (no token), then goes at 2.1', async () => {
    const { endpoint, seen } = await scripted((_req, res) => res.end('{"limits":{"absolute":{}}}'));
    const client = new NovaClient({ endpoint, token: 't' });
    await client.getLimits();
    await client.getLimits();
    expect(seen.map((r) => r.url)).toEqual(['/v2.1/', '/v2.1/limits', '/v2.1/limits']);
    expect(seen[0]!.headers['x-auth-token']).toBeUndefined();
    expect(seen[0]!.headers['openstack-api-version']).toBeUndefined();
    expect(seen[1]!.headers['openstack-api-version']).toBe('compute 2.1');
    expect(seen[1]!.headers['x-openstack-nova-api-version']).toBe('2.1');
  });
});

describe('getLimits parsing', () => {
  it('-1 becomes Infinity, missing or non-numeric becomes undefined, never NaN', () => {
    const a = parseAbsoluteLimits({ maxTotalCores: -1, totalCoresUsed: 514, maxTotalRAMSize: 'lots', totalRAMUsed: null, maxTotalInstances: 0 });
    expect(a.maxTotalCores).toBe(Number.POSITIVE_INFINITY);
    expect(a.totalCoresUsed).toBe(514);
    expect(a.maxTotalRAMSize).toBeUndefined();
    expect(a.totalRAMUsed).toBeUndefined();
    expect(a.maxTotalInstances).toBe(0);
    expect(a.totalInstancesUsed).toBeUndefined();
    expect(Object.values(a).some((v) => Number.isNaN(v))).toBe(false);
    expect(parseAbsoluteLimits(undefined)).toEqual({});
  });

  it('numeric strings are numbers ("514" → 514, "-1" → Infinity); other strings stay unknown', () => {
    const a = parseAbsoluteLimits({ maxTotalCores: '514', totalCoresUsed: ' 12 ', maxTotalRAMSize: '-1', totalRAMUsed: '', maxTotalInstances: '1e3', totalInstancesUsed: '0x10' });
    expect(a).toEqual({ maxTotalCores: 514, totalCoresUsed: 12, maxTotalRAMSize: Number.POSITIVE_INFINITY });
    expect(parseAbsoluteLimits(['514'])).toEqual({});
  });

  it('reads FakeNova limits and quota-set detail', async () => {
    const nova = await startNova({ maxTotalCores: 12 });
    const client = clientFor(nova);
    nova.addServer({ status: 'ACTIVE', flavorId: '2' });
    const l = await client.getLimits();
    expect(l.absolute).toMatchObject({ maxTotalCores: 12, totalCoresUsed: 2, totalInstancesUsed: 1, totalRAMUsed: 2048 });
    const q = await client.getQuotaSetDetail();
    expect(q.cores).toEqual({ in_use: 2, limit: 12, reserved: 0 });
    await expect(new NovaClient({ endpoint: nova.endpoint, token: 'opaque' }).getQuotaSetDetail()).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('servers', () => {
  it('listServers follows pagination links to the last page', async () => {
    const nova = await startNova({ pageSize: 2, maxTotalInstances: -1, maxTotalCores: -1, maxTotalRAMSize: -1 });
    const client = clientFor(nova);
    const ids = Array.from({ length: 5 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const listed = await client.listServers();
    expect(listed.map((s) => s.id).sort()).toEqual([...ids].sort());
    expect(nova.requestsTo('GET', '/servers/detail')).toHaveLength(3);
  });

  it('createServer posts the server member and resolves the created server', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const s = await client.createServer({ name: 'w1', flavorRef: '1', imageRef: 'img', networks: 'none' });
    expect(s.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(nova.getServerState(s.id)?.name).toBe('w1');
    await expect(client.createServer({ name: '', flavorRef: '1' })).rejects.toBeInstanceOf(ValidationError);
    // A key no microversion of Nova's create accepts: refused before the POST; one that some accept
    // (description, from 2.19) is the request's (Nova, or FakeNova, answers at its microversion).
    const before = nova.requests.length;
    await expect(client.createServer({ name: 'w2', flavorRef: '1', imageRef: 'img', netwroks: 'none' } as never)).rejects.toThrow(
      "createServer: body.netwroks (did you mean networks?) is not a key of Nova's create-server body at any microversion (Nova answers 400)",
    );
    expect(nova.requests).toHaveLength(before);
    expect((await client.createServer({ name: 'w3', flavorRef: '1', imageRef: 'img', networks: 'none', description: 'ci' })).id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('getServer of an unknown id throws NotFoundError with Nova\'s message and the request id', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const err = (await client.getServer('00000000-0000-4000-8000-00000000dead').catch((e: unknown) => e)) as NotFoundError;
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.name).toBe('NotFoundError');
    expect(err).toMatchObject({ status: 404, fault: 'itemNotFound', message: 'Instance 00000000-0000-4000-8000-00000000dead could not be found.', method: 'GET', serverId: '00000000-0000-4000-8000-00000000dead' });
    expect(err.url).toBe(`${nova.endpoint}/servers/00000000-0000-4000-8000-00000000dead`);
    expect(err.requestId).toMatch(/^req-/);
  });

  it('getFlavor is cached per id', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const f1 = await client.getFlavor('2');
    const f2 = await client.getFlavor('2');
    expect(f1).toMatchObject({ id: '2', vcpus: 2, ram: 2048 });
    expect(f2).toBe(f1);
    expect(nova.requestsTo('GET', '/flavors/2')).toHaveLength(1);
  });

  it('listFlavors: GET /flavors/detail once; the flavors it listed need no GET /flavors/{id}; a garbled body is InvalidResponseError', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const flavors = await client.listFlavors();
    expect(flavors.find((f) => f.id === '2')).toMatchObject({ id: '2', vcpus: 2, ram: 2048 });
    expect(await client.getFlavor('2')).toMatchObject({ id: '2', vcpus: 2, ram: 2048 });
    expect(nova.requestsTo('GET', '/flavors/2')).toHaveLength(0);
    expect(nova.requestsTo('GET', '/flavors/detail')).toHaveLength(1);
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ name: 'no id' }] } });
    await expect(clientFor(nova).listFlavors()).rejects.toMatchObject({ name: 'InvalidResponseError' });
    await expect(client.listFlavors({ bogus: 1 } as never)).rejects.toMatchObject({ name: 'ValidationError' });
  });

  it('listFlavors keeps only flavors whose vcpus and ram it can trust: one listed without vcpus, or twice with two sizes, is read with GET /flavors/{id}', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    // A proxy's (or a hand-made) listing: m1.small without vcpus, m1.medium twice with two sizes.
    nova.inject({
      method: 'GET',
      path: '/flavors/detail',
      status: 200,
      body: {
        flavors: [
          { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512 },
          { id: '2', name: 'm1.small', ram: 2048 },
          { id: '3', name: 'm1.medium', vcpus: 1, ram: 512 },
          { id: '3', name: 'm1.medium', vcpus: 4, ram: 4096 },
        ],
      },
    });
    await client.listFlavors();
    // The guard's needs come from getFlavor: never 0 cores for m1.small, never 1 core for m1.medium.
    expect(await client.getFlavor('2')).toMatchObject({ id: '2', vcpus: 2, ram: 2048 });
    expect(await client.getFlavor('3')).toMatchObject({ id: '3', vcpus: 4, ram: 4096 });
    expect(await client.getFlavor('1')).toMatchObject({ id: '1', vcpus: 1, ram: 512 });
    expect(nova.requestsTo('GET', '/flavors/2')).toHaveLength(1);
    expect(nova.requestsTo('GET', '/flavors/3')).toHaveLength(1);
    expect(nova.requestsTo('GET', '/flavors/1')).toHaveLength(0);
  });

  it('listFlavors follows flavors_links next pages (Nova pages at its max_limit, 1,000 by default) and stops a listing that loops', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const next = (marker: string) => [{ rel: 'next', href: `${nova.endpoint}/flavors/detail?limit=1&marker=${marker}` }];
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512 }], flavors_links: next('1') } });
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ id: '2', name: 'm1.small', vcpus: 2, ram: 2048 }] } });
    const flavors = await client.listFlavors();
    expect(flavors.map((f) => f.id)).toEqual(['1', '2']);
    expect(nova.requestsTo('GET', '/flavors/detail').map((r) => r.query['marker'])).toEqual([undefined, '1']);
    // A next link that asks for the same marker again: an error, never a listing read for ever.
    nova.inject({ method: 'GET', path: '/flavors/detail', status: 200, body: { flavors: [{ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512 }], flavors_links: next('1') }, times: Infinity });
    await expect(clientFor(nova).listFlavors()).rejects.toMatchObject({ name: 'InvalidResponseError' });
    nova.clearFaults();
  });
});

describe('retries', () => {
  it('GET is retried on 503 and a reset, then succeeds', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({ method: 'GET', path: '/limits', status: 503, body: { computeFault: { code: 503, message: 'down' } } });
    nova.inject({ method: 'GET', path: '/limits', reset: true });
    await client.getLimits();
    expect(nova.requestsTo('GET', '/limits').map((r) => r.status)).toEqual([503, 0, 200]);
    expect(client.stats.requests).toBe(3);
  });

  it('GET is retried on 500 (the README: 5xx is retried), not on 403 or 404', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({ method: 'GET', path: '/limits', status: 500, body: { computeFault: { code: 500, message: 'x' } } });
    await client.getLimits();
    expect(nova.requestsTo('GET', '/limits').map((r) => r.status)).toEqual([500, 200]);
    nova.inject({ method: 'GET', path: '/limits', status: 500, body: { computeFault: { code: 500, message: 'x' } }, times: Infinity });
    await expect(clientFor(nova, { retry: { retries: 1, minDelayMs: 1, maxDelayMs: 1 } }).getLimits()).rejects.toBeInstanceOf(ServerError);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(4);
    nova.clearFaults();
  });

  it('GET is not retried on 403 or 404', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({ method: 'GET', path: '/limits', status: 403, body: { forbidden: { code: 403, message: 'Policy does not allow it.' } } });
    await expect(client.getLimits()).rejects.toBeInstanceOf(ForbiddenError);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
    await expect(client.getServer('00000000-0000-4000-8000-00000000dead')).rejects.toBeInstanceOf(NotFoundError);
    expect(nova.requestsTo('GET', '/servers/00000000-0000-4000-8000-00000000dead')).toHaveLength(1);
  });

  it('retries are bounded', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { retry: { retries: 2, minDelayMs: 1, maxDelayMs: 2 } });
    nova.inject({ method: 'GET', path: '/limits', status: 502, body: 'Bad Gateway', times: Infinity });
    await expect(client.getLimits()).rejects.toBeInstanceOf(ServerError);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(3);
  });

  it('honours Retry-After on 429 before retrying', async () => {
    const { client, sent } = scriptedClient([{ status: 429, headers: { 'Retry-After': '0.1' }, body: { error: { status: '429 Too Many Requests', message: 'Too Many Requests' } } }]);
    await onFakeClock(client.getLimits());
    const [a, b] = sent;
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(95);
    expect(b!.atMs - a!.atMs).toBe(100); // the fake clock: exactly Retry-After
  });

  it('Rate limits and the other 413s: a rate-limited POST (413 overLimit with retryAfter) is retried once', async () => {
    const { client, sent } = scriptedClient(
      [
        {
          status: 413,
          headers: { 'Retry-After': '0.05' },
          body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAfter: '0.05', details: 'Only 10 POST request(s) can be made to * every minute.' } },
        },
      ],
      { status: 202, body: { server: { id: 'new-1' } } },
      { microversion: '2.79' },
    );
    const s = await onFakeClock(client.createServer({ name: 'x', flavorRef: '1', imageRef: 'i', networks: 'none' }));
    expect(s.id).toBeTruthy();
    expect(sent.map((p) => p.method)).toEqual(['POST', 'POST']);
    expect(sent[1]!.atMs - sent[0]!.atMs).toBeGreaterThanOrEqual(45);
    expect(sent[1]!.atMs - sent[0]!.atMs).toBe(50);
  });

  it('a create is never retried on 503 or a timeout', async () => {
    const nova = await startNova();
    vi.useFakeTimers();
    const client = clientFor(nova, { requestTimeoutMs: 50 });
    nova.inject({ method: 'POST', path: '/servers', status: 503, body: { computeFault: { code: 503, message: 'x' } } });
    await expect(settle(client.createServer({ name: 'x', flavorRef: '1' }))).rejects.toBeInstanceOf(ServerError);
    nova.inject({ method: 'POST', path: '/servers', hang: true });
    const t0 = Date.now();
    const err = await settle(client.createServer({ name: 'x', flavorRef: '1' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NovaNetworkError);
    expect((err as NovaNetworkError).timedOut).toBe(true);
    expect(Date.now() - t0).toBe(50);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
  });

  it('a hung GET is cut at requestTimeoutMs and retried', async () => {
    const { client, sent } = scriptedClient([{ hang: true }], LIMITS_OK, { requestTimeoutMs: 40 });
    const t0 = performance.now();
    await onFakeClock(client.getLimits());
    expect(performance.now() - t0).toBeGreaterThanOrEqual(38);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.aborted).toBe(true);
    expect(sent[1]!.atMs - sent[0]!.atMs).toBe(42); // 40 ms limit, then the 2 ms backoff
  });

  it('abort rejects with AbortError and stops retrying', async () => {
    const { client, sent } = scriptedClient(Array(100).fill({ status: 503, body: 'x' }), LIMITS_OK, { retry: { minDelayMs: 200, maxDelayMs: 200 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 30);
    await expect(onFakeClock(client.getLimits({ signal: ac.signal }))).rejects.toBeInstanceOf(AbortError);
    // the first attempt reached Nova before the abort; no retry ever does
    const count = sent.length;
    expect(count).toBeLessThanOrEqual(1);
    await vi.advanceTimersByTimeAsync(250);
    expect(sent).toHaveLength(count);
    expect(count).toBe(1);
  });
});

describe('errors', () => {
  it('a quota 403 is QuotaExceededError with parsed resources', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    const client = clientFor(nova);
    nova.addServer({ status: 'ACTIVE', flavorId: '2' });
    const err = (await client.createServer({ name: 'x', flavorRef: '2', imageRef: 'i', networks: 'none' }).catch((e: unknown) => e)) as QuotaExceededError;
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect(err.message).toBe('Quota exceeded for cores: Requested 2, but already used 2 of 2 cores');
    expect(err.resources).toEqual([{ name: 'cores', requested: 2, used: 2, allowed: 2 }]);
    expect(err.permanent).toBe(false);
    expect(err.fault).toBe('forbidden');
  });

  it('Forbidden, but not by quota: a policy 403 and an HTML proxy 403 are ForbiddenError with a clear message', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:servers:create to be performed." } } });
    const e1 = (await client.createServer({ name: 'x', flavorRef: '1' }).catch((e: unknown) => e)) as ForbiddenError;
    expect(e1).toBeInstanceOf(ForbiddenError);
    expect(e1.message).toBe("Policy doesn't allow os_compute_api:servers:create to be performed.");
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 403,
      headers: { 'Content-Type': 'text/html' },
      body: '<html><body><h1>403 Forbidden</h1>Request forbidden by administrative rules.</body></html>',
    });
    const e2 = (await client.createServer({ name: 'x', flavorRef: '1' }).catch((e: unknown) => e)) as ForbiddenError;
    expect(e2).toBeInstanceOf(ForbiddenError);
    expect(e2.message).toContain('HTTP 403 Forbidden from POST');
    expect(e2.message).toContain('Request forbidden by administrative rules.');
    expect(e2.fault).toBeUndefined();
  });

  it('an empty 502 body still gives a clear error', async () => {
    const nova = await startNova();
    const client = clientFor(nova, { retry: { retries: 0 } });
    nova.inject({ method: 'GET', path: '/limits', status: 502, body: '' });
    const e = (await client.getLimits().catch((x: unknown) => x)) as ServerError;
    expect(e.message).toBe(`HTTP 502 Bad Gateway from GET ${nova.endpoint}/limits (empty body)`);
  });

  it('Rate limits and the other 413s: a 413 quota is QuotaExceededError; a 413 body-too-large is RequestTooLargeError, not retried', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 413,
      headers: { 'Retry-After': '0' },
      body: { overLimit: { code: 413, message: 'Quota exceeded for cores: Requested 2, but already used 10 of 10 cores', retryAfter: '0' } },
    });
    await expect(client.createServer({ name: 'x', flavorRef: '1' })).rejects.toBeInstanceOf(QuotaExceededError);
    nova.inject({ method: 'POST', path: '/servers', status: 413, headers: { 'Content-Type': 'text/plain' }, body: '413 Request Entity Too Large\n\nRequest is too large.' });
    await expect(client.createServer({ name: 'x', flavorRef: '1' })).rejects.toBeInstanceOf(RequestTooLargeError);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(2);
  });

  it('400 is BadRequestError; every error class names itself', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const e = await client.createServer({ name: 'x', flavorRef: '999', imageRef: 'i', networks: 'none' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BadRequestError);
    expect((e as BadRequestError).message).toBe('Flavor 999 could not be found.');
    expect(new RateLimitError({ status: 429, message: 'm' }).name).toBe('RateLimitError');
  });

  it('errors never carry the token, not even through util.inspect', async () => {
    const { endpoint } = await scripted((_req, res) => {
      res.statusCode = 401;
      res.end(JSON.stringify({ error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } }));
    });
    const c = new NovaClient({ endpoint, token: TOKEN });
    const e = (await c.getLimits().catch((x: unknown) => x)) as NovaApiError;
    expect(e.name).toBe('AuthError');
    expect(e.status).toBe(401);
    for (const text of [e.message, e.stack ?? '', JSON.stringify(e), inspect(e, { depth: Infinity, showHidden: true }), JSON.stringify(Object.entries(e))]) {
      expect(text).not.toContain(TOKEN);
    }
  });
});
