import { afterEach, describe, expect, it, vi } from 'vitest';
import { startNova as start, untilReal } from '../helpers.js';
import { FRONTS, via } from './fakeNovaFetch.js';

afterEach(() => {
  vi.useRealTimers();
});

describe.each(FRONTS)('fault injection (%s front)', (front) => {
  const { call, createServer } = via(front);

  it('status + body applies once by default, then the real handler answers', async () => {
    const n = await start();
    n.inject({ method: 'GET', path: '/limits', status: 503, body: { computeFault: { code: 503, message: 'down' } } });
    const r1 = await call(n, 'GET', '/limits');
    expect([r1.status, r1.text]).toEqual([503, '{"computeFault": {"code": 503, "message": "down"}}']);
    expect(r1.headers.get('content-type')).toBe('application/json; charset=UTF-8');
    expect(r1.headers.get('x-openstack-request-id')).toMatch(/^req-/);
    const r2 = await call(n, 'GET', '/limits');
    expect(r2.status).toBe(200);
    expect(n.requestsTo('GET', '/limits').map((r) => r.status)).toEqual([503, 200]);
  });

  it('default body is Nova envelope; string body and headers are sent as is', async () => {
    const n = await start();
    n.inject({ path: '/servers', method: 'POST', status: 500 });
    const r = await createServer(n, '1');
    expect(r.json).toEqual({
      computeFault: {
        code: 500,
        message:
          'Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.',
      },
    });
    expect(n.listServerStates()).toHaveLength(0);
    n.inject({
      path: '/servers',
      status: 413,
      body: '413 Request Entity Too Large\n\nRequest is too large.',
      headers: { 'Content-Type': 'text/plain', 'Retry-After': '5' },
    });
    const t = await createServer(n, '1');
    expect([t.status, t.text, t.headers.get('content-type'), t.headers.get('retry-after')]).toEqual([
      413,
      '413 Request Entity Too Large\n\nRequest is too large.',
      'text/plain',
      '5',
    ]);
  });

  it('RegExp path, method filter and times', async () => {
    const n = await start({ deletedWindowMs: 0 });
    const id = (await createServer(n, '1')).json.server.id as string;
    n.inject({ method: 'GET', path: /^\/servers\/[^/]+$/, status: 429, times: 2 });
    expect((await call(n, 'DELETE', `/servers/${id}`, { token: 'x:demo' })).status).toBe(204); // DELETE not matched
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(429);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(429);
    expect((await call(n, 'GET', `/servers/${id}`)).status).toBe(404);
    expect(n.requestsTo('GET', /^\/servers\//).map((r) => [r.status, r.serverId])).toEqual([
      [429, id],
      [429, id],
      [404, id],
    ]);
  });

  it('Infinity times until clearFaults', async () => {
    const n = await start();
    n.inject({ path: '/limits', status: 502, times: Infinity });
    for (let i = 0; i < 3; i++) expect((await call(n, 'GET', '/limits')).status).toBe(502);
    n.clearFaults();
    expect((await call(n, 'GET', '/limits')).status).toBe(200);
  });

  it('delayMs without status passes through after the delay', async () => {
    const n = await start();
    n.inject({ path: '/limits', delayMs: 80 });
    vi.useFakeTimers(); // the delay is exact on the fake clock (over either front)
    const t0 = Date.now();
    const pending = call(n, 'GET', '/limits');
    // Once the fake has the request (over a socket that takes real time), 79 ms pass: no answer yet.
    let answered = false;
    void pending.finally(() => (answered = true));
    await untilReal(() => n.requestsTo('GET', '/limits').length === 1);
    await vi.advanceTimersByTimeAsync(79);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const r = await pending;
    expect(r.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(75);
    expect(Date.now() - t0).toBe(80);
  });

  it('reset destroys the socket (fetch fails) and is recorded with status 0', async () => {
    const n = await start();
    n.inject({ path: '/limits', reset: true });
    await expect(call(n, 'GET', '/limits')).rejects.toThrow();
    expect(n.requestsTo('GET', '/limits')).toEqual([expect.objectContaining({ status: 0 })]);
    expect((await call(n, 'GET', '/limits')).status).toBe(200);
  });

  it('hang never answers until the client aborts; close() ends hung sockets', async () => {
    const n = await start();
    n.inject({ path: '/limits', hang: true, times: 2 });
    await expect(call(n, 'GET', '/limits', { signal: AbortSignal.timeout(50) })).rejects.toThrow();
    const pending = call(n, 'GET', '/limits');
    await new Promise((r) => setTimeout(r, 20));
    const t0 = Date.now();
    await n.close();
    await expect(pending).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(n.pendingTimers()).toBe(0);
  });

  it('passThroughAfterMs: the client gets the fault, and Nova handles the request that long later (the POST creates its server then)', async () => {
    const n = await start();
    n.inject({ path: '/servers', method: 'POST', status: 504, body: 'Gateway Time-out', headers: { 'Content-Type': 'text/plain' }, passThroughAfterMs: 50 });
    vi.useFakeTimers();
    const r = await createServer(n, '1');
    expect(r.status).toBe(504);
    expect(n.listServerStates()).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(49);
    expect(n.listServerStates()).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(n.listServerStates()).toHaveLength(1);
    expect(() => n.inject({ path: '/servers', passThroughAfterMs: -1 })).toThrow(/passThroughAfterMs/);
  });

  it('rejects times <= 0', async () => {
    const n = await start();
    expect(() => n.inject({ path: '/limits', times: 0 })).toThrow(/times/);
  });
});

describe.each(FRONTS)('auth and microversions (%s front)', (front) => {
  const { call } = via(front);

  it('validateToken: keystonemiddleware 401 body and WWW-Authenticate; version doc needs no token', async () => {
    const n = await start({ validateToken: (t) => t === 'good' });
    for (const token of [null, 'bad']) {
      const r = await call(n, 'GET', '/limits', { token });
      expect(r.status).toBe(401);
      expect(r.text).toBe(
        '{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}',
      );
      expect(r.headers.get('content-length')).toBe('114');
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(r.headers.get('www-authenticate')).toBe('Keystone uri="http://127.0.0.1:5000/"');
      expect(r.headers.get('x-openstack-request-id')).toMatch(/^req-/);
    }
    expect((await call(n, 'GET', '/limits', { token: 'good' })).status).toBe(200);
    const doc = await call(n, 'GET', '/', { token: null, microversion: '' });
    expect(doc.status).toBe(200);
    const body = doc.json as { version: { id: string; version: string; min_version: string } };
    expect([body.version.id, body.version.min_version, body.version.version]).toEqual(['v2.1', '2.1', '2.93']);
  });

  it('406 out of range, 400 malformed, latest = max, legacy header', async () => {
    const n = await start();
    const high = await call(n, 'GET', '/limits', { microversion: '2.94' });
    expect(high.status).toBe(406);
    expect(high.json).toEqual({
      computeFault: { code: 406, message: 'Version 2.94 is not supported by the API. Minimum is 2.1 and maximum is 2.93.' },
    });
    const bad = await call(n, 'GET', '/limits', { microversion: '2.latest' });
    expect(bad.status).toBe(400);
    expect(bad.json.badRequest.message).toBe(
      'API Version String 2.latest is of invalid format. Must be of format MajorNum.MinorNum.',
    );
    const latest = await call(n, 'GET', '/limits', { microversion: 'latest' });
    expect(latest.headers.get('openstack-api-version')).toBe('compute 2.93');
    const legacy = await call(n, 'GET', '/limits', { microversion: '', headers: { 'X-OpenStack-Nova-API-Version': '2.40' } });
    expect(legacy.headers.get('x-openstack-nova-api-version')).toBe('2.40');
  });

  it('unknown route: 404 itemNotFound', async () => {
    const n = await start();
    const r = await call(n, 'GET', '/os-nothing');
    expect(r.text).toBe('{"itemNotFound": {"code": 404, "message": "The resource could not be found."}}');
  });
});
