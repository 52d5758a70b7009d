/**
 * Only nova-api's own answer settles a lost POST at once: a 500 with Nova's fault body and a request
 * id of Nova's form (`req-<uuid>`). A 502, 503 or 504 comes from a proxy or load balancer (nova-api
 * answers an exception with 500) even with a JSON fault body and a request id, and a 500 without a
 * `req-<uuid>` request id is not known to be Nova's: the POST is uncertain. It is re-sent after one
 * clean search, and its tag stays watched until its time surely passed (2000 ms request limit +
 * novaApiTimeoutMs 10000): the server Nova makes late is a twin, deleted, and the call keeps
 * exactly one server. FakeNova on fake timers (`passThroughAfterMs`).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { QuotaGuard, type QuotaGuardOptions } from '../../src/guard/quotaGuard.js';
import { NovaClient } from '../../src/nova/client.js';
import type { FakeNova } from '../../src/testing/index.js';
import { FAST, body, liveServers, startNova } from './fixtures.js';
import { runUntil, settle } from '../helpers.js';

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

/** Run until the call's tag is no longer watched; then the deletes of the twins. */
async function settledDeletes(guard: QuotaGuard, nova: FakeNova): Promise<Array<string | undefined>> {
  await runUntil(() => guard.unsettledCreates().length === 0);
  return nova.requests.filter((r) => r.method === 'DELETE').map((r) => r.serverId);
}

describe.each([502, 503, 504])('a %i with a JSON fault body and a request id, while Nova makes the server 5 s later (after the first search)', (status) => {
  it('is uncertain: re-sent after one clean search, the late server a twin deleted by the watch, exactly one server', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status, body: fault(status), passThroughAfterMs: 5000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(postTimes(nova, t0)).toEqual([0, 0]);
    expect(guard.unsettledCreates()).toMatchObject([{ keptServerId: server.id, boundInMs: expect.any(Number) }]);
    const deleted = await settledDeletes(guard, nova);
    expect(deleted).toHaveLength(1);
    expect(deleted).not.toContain(server.id);
    expect(liveServers(nova)).toEqual([server.id]);
    expect(guard.stats).toMatchObject({ ambiguousCreates: 1, adoptedServers: 0, lateCreatesDeleted: 1 });
    await guard.close();
  });
});

describe('a 500 with a JSON fault body', () => {
  it('with an empty request id, while Nova makes the server 5 s later (after the first search): uncertain, re-sent after one clean search, the twin deleted, exactly one server', async () => {
    vi.useFakeTimers();
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 500, body: fault(500), headers: { 'x-openstack-request-id': '', 'x-compute-request-id': '' }, passThroughAfterMs: 5000 });
    const guard = new QuotaGuard(clientOf(nova), OPTS);
    const t0 = Date.now();
    const server = await settle(guard.createServer(body('ci-1')));
    expect(postTimes(nova, t0)).toEqual([0, 0]);
    expect(guard.unsettledCreates()).toHaveLength(1);
    expect(await settledDeletes(guard, nova)).toHaveLength(1);
    expect(liveServers(nova)).toEqual([server.id]);
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
