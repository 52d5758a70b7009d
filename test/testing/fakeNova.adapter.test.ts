/**
 * FakeNova's in-process axios adapter against its socket front, both driven by plain axios: the
 * same answers, and the same failures as axios's own node:http adapter gives for a reset, a refused
 * connection, an abort, a timeout and an oversized body.
 */
import axios, { AxiosError, CanceledError, type AxiosRequestConfig, type AxiosResponse } from 'axios';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FakeNova } from '../../src/testing/index.js';
import { startNova as start } from '../helpers.js';
import { FRONTS, type Front } from './fakeNovaFetch.js';

afterEach(() => {
  vi.useRealTimers();
});

/** axios to `nova.endpoint + path`: axios's own http adapter for 'http', the fake's adapter for 'adapter'. */
function send(nova: FakeNova, front: Front, path: string, config: AxiosRequestConfig = {}): Promise<AxiosResponse<string>> {
  return axios.request<string>({
    url: nova.endpoint + path,
    headers: { 'X-Auth-Token': 'admin:demo', 'OpenStack-API-Version': 'compute 2.79' },
    responseType: 'text',
    transformResponse: [(d: string) => d],
    validateStatus: () => true,
    ...(front === 'adapter' ? { adapter: nova.adapter } : {}),
    ...config,
  });
}

async function failure(p: Promise<unknown>): Promise<AxiosError> {
  try {
    await p;
  } catch (e) {
    return e as AxiosError;
  }
  throw new Error('expected a rejection');
}

/** Header names a client sees, without the hop-by-hop ones only a socket has. */
function headerNames(res: AxiosResponse): string[] {
  return Object.keys(res.headers)
    .map((h) => h.toLowerCase())
    .filter((h) => h !== 'connection' && h !== 'keep-alive')
    .sort();
}

describe('FakeNova.adapter serves what the socket serves', () => {
  it('same status, body bytes and header names (Date, request ids, microversion); both recorded', async () => {
    const n = await start();
    n.addServer({ flavorId: '2' });
    const [viaHttp, viaAdapter] = [await send(n, 'http', '/limits'), await send(n, 'adapter', '/limits')];
    expect(viaAdapter.status).toBe(viaHttp.status);
    expect(viaAdapter.data).toBe(viaHttp.data);
    expect(headerNames(viaAdapter)).toEqual(headerNames(viaHttp));
    expect(headerNames(viaAdapter)).toEqual(
      ['content-length', 'content-type', 'date', 'openstack-api-version', 'vary', 'x-compute-request-id', 'x-openstack-nova-api-version', 'x-openstack-request-id'].sort(),
    );
    expect(Math.abs(Date.parse(String(viaAdapter.headers['date'])) - Date.now())).toBeLessThan(5000);
    expect(viaAdapter.headers['x-openstack-request-id']).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(viaAdapter.headers['x-openstack-request-id']).not.toBe(viaHttp.headers['x-openstack-request-id']);
    expect(viaAdapter.statusText).toBe('OK');
    expect(n.requestsTo('GET', '/limits').map((r) => r.status)).toEqual([200, 200]);
  });

  it('an injected Date header overrides the default on both fronts (a skewed Nova clock)', async () => {
    const n = await start();
    const skewed = 'Tue, 01 Dec 2026 10:00:00 GMT';
    n.inject({ path: '/limits', delayMs: 0, status: 200, body: { limits: {} }, headers: { Date: skewed }, times: 2 });
    for (const front of FRONTS) expect((await send(n, front, '/limits')).headers['date']).toBe(skewed);
  });

  it('query, body and headers reach the fake; a POST creates through the adapter', async () => {
    const n = await start();
    const r = await send(n, 'adapter', '/servers', {
      method: 'POST',
      data: { server: { name: 'via-adapter', flavorRef: '1', networks: 'none' } },
      transformResponse: undefined,
      responseType: 'json',
    });
    expect(r.status).toBe(202);
    const id = (r.data as unknown as { server: { id: string } }).server.id;
    const listed = await send(n, 'adapter', '/servers', { params: { name: '^via-' } });
    expect(JSON.parse(listed.data).servers.map((s: { id: string }) => s.id)).toEqual([id]);
    expect(n.requestsTo('GET', '/servers')[0]!.query).toEqual({ name: '^via-' });
  });

  it('validateStatus rejects as axios does (ERR_BAD_REQUEST with the response)', async () => {
    const n = await start();
    const e = await failure(send(n, 'adapter', '/servers/nope', { validateStatus: (s) => s < 400 }));
    expect(e).toBeInstanceOf(AxiosError);
    expect([e.code, e.response?.status, e.message]).toEqual(['ERR_BAD_REQUEST', 404, 'Request failed with status code 404']);
  });
});

describe.each(FRONTS)('network failures as axios reports them (%s front)', (front) => {
  it('reset: AxiosError ECONNRESET "socket hang up", recorded with status 0', async () => {
    const n = await start();
    n.inject({ path: '/limits', reset: true });
    const e = await failure(send(n, front, '/limits'));
    expect(axios.isAxiosError(e)).toBe(true);
    expect([e.code, e.message]).toEqual(['ECONNRESET', 'socket hang up']);
    expect(e.response).toBeUndefined();
    expect(n.requestsTo('GET', '/limits')).toEqual([expect.objectContaining({ status: 0 })]);
  });

  it('hang: pending until the signal aborts, then CanceledError ERR_CANCELED', async () => {
    const n = await start();
    n.inject({ path: '/limits', hang: true });
    const controller = new AbortController();
    let settled = false;
    const p = failure(send(n, front, '/limits', { signal: controller.signal })).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 60));
    expect(settled).toBe(false);
    controller.abort();
    const e = await p;
    expect(e).toBeInstanceOf(CanceledError);
    expect(axios.isCancel(e)).toBe(true);
    expect(e.code).toBe('ERR_CANCELED');
  });

  it('hang with axios timeout: ECONNABORTED "timeout of 50ms exceeded"', async () => {
    const n = await start();
    n.inject({ path: '/limits', hang: true });
    const e = await failure(send(n, front, '/limits', { timeout: 50 }));
    expect([e.code, e.message]).toEqual(['ECONNABORTED', 'timeout of 50ms exceeded']);
  });

  it('close() while hung: ECONNRESET; after close: ECONNREFUSED', async () => {
    const n = await start();
    n.inject({ path: '/limits', hang: true });
    const hung = failure(send(n, front, '/limits'));
    await new Promise((r) => setTimeout(r, 30));
    await n.close();
    expect((await hung).code).toBe('ECONNRESET');
    const e = await failure(send(n, front, '/limits'));
    expect(e.code).toBe('ECONNREFUSED');
    expect(e.message).toMatch(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });

  it('maxContentLength: ERR_BAD_RESPONSE "maxContentLength size of 10 exceeded"', async () => {
    const n = await start();
    const e = await failure(send(n, front, '/limits', { maxContentLength: 10 }));
    expect([e.code, e.message]).toEqual(['ERR_BAD_RESPONSE', 'maxContentLength size of 10 exceeded']);
  });
});

describe('FakeNova.adapter on fake timers', () => {
  it('a delayed reply resolves after its delay in fake time, not before; a hang waits for the abort', async () => {
    const n = await start();
    vi.useFakeTimers();
    n.inject({ path: '/limits', delayMs: 5000 });
    let status = 0;
    const p = send(n, 'adapter', '/limits').then((r) => (status = r.status));
    await vi.advanceTimersByTimeAsync(4999);
    expect(status).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(status).toBe(200);

    n.inject({ path: '/limits', hang: true });
    const controller = new AbortController();
    let settled = false;
    const hung = failure(send(n, 'adapter', '/limits', { signal: controller.signal })).finally(() => (settled = true));
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(settled).toBe(false);
    controller.abort();
    expect((await hung).code).toBe('ERR_CANCELED');
    expect(n.pendingTimers()).toBe(0);
  });

  it('a request to another host is refused', async () => {
    const n = await start();
    const e = await failure(axios.get('http://nova.invalid:8774/v2.1/limits', { adapter: n.adapter }));
    expect([e.code, e.message]).toEqual(['ECONNREFUSED', 'connect ECONNREFUSED nova.invalid:8774']);
    expect(n.requests).toHaveLength(0);
  });
});
