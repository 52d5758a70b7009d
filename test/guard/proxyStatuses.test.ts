/**
 * Only nova-api's own answer ends the wait for a lost POST at once: a 500 with Nova's fault body and
 * a request id of Nova's form (`req-<uuid>`). A 502, 503 or 504 comes from a proxy or load balancer
 * (nova-api answers an exception with 500) even with a JSON fault body and a request id, and a 500
 * without a `req-<uuid>` request id is not known to be Nova's: the POST is uncertain, never re-sent
 * before its time surely passed (2000 ms request limit + novaApiTimeoutMs 10000), and the server
 * Nova makes late is the one server. FakeNova on fake timers (`passThroughAfterMs`).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { NovaClient } from '../../src/nova/client.js';
import type { FakeNova } from '../../src/testing/index.js';
import { FAST, body, liveServers, startNova } from './fixtures.js';
import { settle } from '../helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

const OPTS: QuotaGuardOptions = { ...FAST, maxWaitMs: 60000, jitter: 0, lostCreateIntervalMs: 1000, lostCreateSearches: 4, novaApiTimeoutMs: 10000 };
const BOUND_MS = 2000 + 10000;

/** A client on `nova` with a 2000 ms request limit and no retries of its own. */
function clientOf(nova: FakeNova): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter, requestTimeoutMs: 2000, retry: { retries: 0 } });
}

const fault = (status: number): Record<string, unknown> => ({ computeFault: { code: status, message: 'The server has either erred or is incapable of performing the requested operation.' } });
const postTimes = (nova: FakeNova, t0: number): number[] => nova.requestsTo('POST', '/servers').map((r) => r.timeMs - t0);

describe.each([502, 503, 504])('a %i with a JSON fault body and a request id, while Nova makes the server 5 s later (after the first searches)', (status) => {
  it('is uncertain: one POST, the late server adopted, exactly one server, nothing unsettled', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status, body: fault(status), passThroughAfterMs: 5000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(postTimes(nova, t0)).toEqual([0]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 1 });
    expect(guard.unsettledCreates()).toEqual([]);
    await guard.close();
  });
});

describe('a 500 with a JSON fault body', () => {
  it("with an empty request id, while Nova makes the server 5 s later (after the first searches): uncertain, one POST, exactly one server", async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 500, body: fault(500), headers: { 'x-openstack-request-id': '', 'x-compute-request-id': '' }, passThroughAfterMs: 5000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(postTimes(nova, t0)).toEqual([0]);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.unsettledCreates()).toEqual([]);
    await guard.close();
  });

  it("with Nova's req-<uuid> request id (nova-api's own answer): settled at once, the POST re-sent before the bound, one server", async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 500, body: fault(500) });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    const posts = postTimes(nova, t0);
    expect(posts).toHaveLength(2);
    expect(posts[1]).toBeLessThan(BOUND_MS);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.unsettledCreates()).toEqual([]);
    await guard.close();
  });
});
