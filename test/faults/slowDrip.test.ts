/**
 * Fault matrix, the slow drip: every public operation of the matrix against a server that sends the
 * status and headers at once and then trickles the body a few bytes at a time, slower in total than
 * the request time limit (or never finishing). Only a real socket can do this, so these cells run on
 * the real clock through axios's node:http adapter and a {@link DripFront} on 127.0.0.1 in front of
 * FakeNova / FakeKeystone.
 *
 * The request time limit (`requestTimeoutMs`) bounds the whole exchange, body included, so a drip is
 * a request that timed out (`NovaNetworkError`, `timedOut`): the same documented outcome as a hang.
 * Each cell asserts that outcome, that the call settled by its deadline (generous bounds: the real
 * clock of a busy machine), that the drip was waited out to the time limit and not taken as an
 * answer, that nothing is left open afterwards (no socket, no drip, no timer of the client, no
 * request after the call settled) and no false "deleted".
 */
import { describe, expect, it } from 'vitest';
import {
  DeleteTimeoutError,
  KeystoneAuth,
  NovaClient,
  NovaNetworkError,
  QuotaGuard,
  auditQuota,
  reapServers,
  waitForDelete,
  type DeleteServerResult,
  type Server,
} from '../../src/index.js';
import { FakeKeystone, type FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { DripFront } from './dripFront.js';
import { GUARD_OPTIONS, RenewingTokens, outcomeClass, type Settled } from './support.js';

/** Time limit of one request in these cells (ms): every drip ends here. */
const REQUEST_TIMEOUT_MS = 250;
/** Slack on a deadline for a busy 2-core machine (ms). */
const GRACE_MS = 1500;
const RETRIES = 4;
const MAX_DELAY_MS = 20;
const HOUR = 3_600_000;
/** Options of the waits: fast looks, a small deadline, no re-DELETE. */
const WAIT_ONLY = { intervalMs: 20, jitter: 0, timeoutMs: 4000 } as const;
const WAIT = { ...WAIT_ONLY, redeleteAfterMs: 0 } as const;

const sleepReal = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Timers keeping the event loop alive (the client's timers are; FakeNova's are unref'd). */
const activeTimeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

interface Stack {
  nova: FakeNova;
  front: DripFront;
  client: NovaClient;
}

/** FakeNova behind a drip front, and a matrix client on the real socket through the front. */
async function stack(novaOptions: Parameters<typeof startNova>[0] = {}): Promise<Stack> {
  const nova = await startNova(novaOptions);
  const front = await DripFront.start(nova.url);
  afterThisTest(() => front.close());
  const client = new NovaClient({
    endpoint: front.via(nova.endpoint),
    auth: new RenewingTokens(nova.projectId),
    microversion: '2.79',
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    retry: { retries: RETRIES, minDelayMs: 2, maxDelayMs: MAX_DELAY_MS, maxRetryTimeMs: 10_000 },
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
  });
  return { nova, front, client };
}

/**
 * Run `call` on the real clock: it must settle within `deadlineMs` (+ {@link GRACE_MS}); then
 * within 3 s every socket to the front is closed, no drip writes, no timer of the call is left
 * (back to the count before it), and no request reaches the front after it settled.
 */
async function runRealCell<T>(front: DripFront, call: () => Promise<T>, deadlineMs: number, idle: () => boolean = () => true): Promise<Settled<T>> {
  const timersBefore = activeTimeouts();
  const start = performance.now();
  let out: Settled<T>;
  try {
    const value = await call();
    out = { ok: true, value, atMs: performance.now() - start };
  } catch (error) {
    out = { ok: false, error: error as Error, atMs: performance.now() - start };
  }
  expect(out.atMs, 'settled by its deadline').toBeLessThanOrEqual(deadlineMs + GRACE_MS);
  const seen = front.requests.length;
  const quiet = (): boolean => front.openSockets === 0 && front.activeDrips === 0 && activeTimeouts() <= timersBefore && idle();
  for (let waited = 0; !quiet() && waited < 3000; waited += 10) await sleepReal(10);
  expect(front.openSockets, 'no socket left open').toBe(0);
  expect(front.activeDrips, 'every dripping response was hung up on').toBe(0);
  expect(activeTimeouts(), 'no timer left').toBeLessThanOrEqual(timersBefore);
  expect(idle(), 'the client is idle').toBe(true);
  for (const r of front.dripped) expect(r.closed, `the dripping ${r.method} ${r.path} was closed`).toBe(true);
  await sleepReal(100);
  expect(front.requests.length, 'no request after the call settled').toBe(seen);
  return out;
}

/** The drip was waited out to the request time limit, not taken as an answer (real clock: a lower bound only). */
function waitedOut(s: Settled<unknown>, drips = 1): void {
  expect(s.atMs).toBeGreaterThanOrEqual(drips * REQUEST_TIMEOUT_MS - 20);
}

/** No false "deleted": an outcome of deleted / already-gone only when FakeNova has the server no more; otherwise unconfirmed. */
function checkPromise(nova: FakeNova, client: NovaClient, id: string, s: Settled<DeleteServerResult>): void {
  const unconfirmed = client.unconfirmedDeletes().map((u) => u.serverId);
  if (s.ok && (s.value.outcome === 'deleted' || s.value.outcome === 'already-gone')) {
    expect(nova.getServerState(id), `outcome ${s.value.outcome} but FakeNova still has the server`).toBeUndefined();
    expect(unconfirmed).not.toContain(id);
  } else {
    expect(unconfirmed, 'an unconfirmed delete stays in unconfirmedDeletes()').toContain(id);
  }
}

const engineIdle = (client: NovaClient) => (): boolean => client.deleteEngine.idle;

describe('fault matrix, slow drip: reads', () => {
  const READS: Array<{ name: string; path: (id: string) => string; call: (c: NovaClient, id: string) => Promise<unknown[]> }> = [
    { name: 'getServer', path: (id: string) => `/v2.1/servers/${id}`, call: (c: NovaClient, id: string) => c.getServer(id).then((s) => [s.id]) },
    { name: 'listServers', path: () => '/v2.1/servers/detail', call: (c: NovaClient) => c.listServers().then((l) => l.map((s) => s.id)) },
    { name: 'getLimits', path: () => '/v2.1/limits', call: (c: NovaClient) => c.getLimits().then((l) => [l.absolute.totalInstancesUsed]) },
  ];

  it.each(READS)('$name × slow drip → retried after the request time limit, ok', async ({ name, path, call }) => {
    const { nova, front, client } = await stack();
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'GET', path: path(id) });
    const s = await runRealCell(front, () => call(client, id), 3000);
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value).toEqual(name === 'getLimits' ? [1] : [id]);
    waitedOut(s);
    expect(front.dripped).toHaveLength(1);
    expect(front.requests.filter((r) => r.path === path(id))).toHaveLength(2);
  });

  it('getServer × a slow body that does finish (valid JSON, after the time limit) → still timed out, retried, ok', async () => {
    const { nova, front, client } = await stack();
    const id = nova.addServer({ name: 'ci-1' }).id;
    // 3 bytes every 40 ms: about 1 s for this body, four times the request time limit.
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}`, body: JSON.stringify({ server: { id: 'another-server-id', status: 'DELETED', name: 'x' } }), finish: true });
    const s = await runRealCell(front, () => client.getServer(id), 3000);
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.id).toBe(id);
    waitedOut(s);
  });

  it('getServer × a drip on every attempt → NovaNetworkError (timedOut) after retries+1 attempts', async () => {
    const { nova, front, client } = await stack();
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}`, times: Number.POSITIVE_INFINITY });
    const s = await runRealCell(front, () => client.getServer(id), (RETRIES + 1) * (REQUEST_TIMEOUT_MS + MAX_DELAY_MS));
    expect(outcomeClass(s)).toBe('NovaNetworkError');
    if (!s.ok) expect(s.error).toMatchObject({ timedOut: true });
    waitedOut(s, RETRIES + 1);
    expect(front.dripped).toHaveLength(RETRIES + 1);
    expect(nova.requests).toHaveLength(0);
  });

  it('listServers({ timeoutMs }) × a drip on every page request → NovaNetworkError (timedOut) by timeoutMs', async () => {
    const { nova, front, client } = await stack();
    nova.addServer({ name: 'ci-1' });
    front.drip({ method: 'GET', path: '/v2.1/servers/detail', times: Number.POSITIVE_INFINITY });
    const timeoutMs = 600;
    const s = await runRealCell(front, () => client.listServers({ timeoutMs }), timeoutMs);
    expect(s.ok).toBe(false);
    if (!s.ok) expect(s.error).toBeInstanceOf(NovaNetworkError);
    expect(s.atMs).toBeGreaterThanOrEqual(timeoutMs - 20);
  });
});

describe('fault matrix, slow drip: deletes', () => {
  it('deleteServer without wait × drip on the DELETE → the DELETE is sent again, delete-requested', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'DELETE', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => client.deleteServer(id, { ...WAIT, wait: false }), WAIT.timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.outcome).toBe('delete-requested');
    waitedOut(s);
    expect(front.requests.filter((r) => r.method === 'DELETE')).toHaveLength(2);
    checkPromise(nova, client, id, s);
  });

  it('deleteServer with wait × drip on the DELETE → deleted', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'DELETE', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => client.deleteServer(id, { ...WAIT, wait: true }), WAIT.timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    waitedOut(s);
    checkPromise(nova, client, id, s);
  });

  it('deleteServer without wait × a proxy 404 whose HTML body drips → a timed-out DELETE, sent again; never "already-gone"', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'DELETE', path: `/v2.1/servers/${id}`, status: 404, body: `<html><head><title>404 Not Found</title></head><body>${'<p>nginx</p>'.repeat(500)}` });
    const s = await runRealCell(front, () => client.deleteServer(id, { ...WAIT, wait: false }), WAIT.timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.outcome).toBe('delete-requested');
    waitedOut(s);
    expect(front.requests.filter((r) => r.method === 'DELETE')).toHaveLength(2);
    checkPromise(nova, client, id, s);
  });

  it('deleteServer with wait × drip on a look → deleted (a failed look is followed by another)', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => client.deleteServer(id, { ...WAIT, wait: true }), WAIT.timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    waitedOut(s);
    checkPromise(nova, client, id, s);
  });

  it('deleteServer with wait × drip on every look → DeleteTimeoutError by timeoutMs, the server unconfirmed, never "deleted"', async () => {
    // Nova never deletes it in time: only the looks could tell, and every one of them drips.
    const { nova, front, client } = await stack({ deleteDelayMs: 60_000 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}`, times: Number.POSITIVE_INFINITY });
    front.drip({ method: 'GET', path: /\/v2\.1\/servers(\/detail)?$/, times: Number.POSITIVE_INFINITY });
    const timeoutMs = 1200;
    const s = await runRealCell(front, () => client.deleteServer(id, { ...WAIT, timeoutMs, pollRetries: 100, wait: true }), timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('DeleteTimeoutError');
    if (!s.ok) expect(s.error).toBeInstanceOf(DeleteTimeoutError);
    if (!s.ok) expect(s.error).toMatchObject({ serverId: id, timeoutMs });
    expect(s.atMs).toBeGreaterThanOrEqual(timeoutMs - 20);
    checkPromise(nova, client, id, s);
  });

  it('waitForDelete × drip on a look → deleted', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    await client.requestDelete(id);
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => waitForDelete(client, id, WAIT_ONLY), WAIT.timeoutMs, engineIdle(client));
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.outcome).toBe('deleted');
    expect(nova.getServerState(id)).toBeUndefined();
    waitedOut(s);
  });

  it('deleteServers with wait × drip on the first server’s DELETE → both deleted', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 100 });
    const id = nova.addServer({ name: 'ci-1' }).id;
    const other = nova.addServer({ name: 'ci-2' }).id;
    front.drip({ method: 'DELETE', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => client.deleteServers([id, other], { ...WAIT, wait: true, concurrency: 2 }), WAIT.timeoutMs, engineIdle(client));
    expect(s.ok, 'deleteServers resolves (allSettled)').toBe(true);
    if (!s.ok) return;
    expect(s.value.results.map((r) => [r.serverId, r.status === 'fulfilled' ? r.value.outcome : r.reason])).toEqual([
      [id, 'deleted'],
      [other, 'deleted'],
    ]);
    expect(nova.listServerStates()).toEqual([]);
    expect(client.unconfirmedDeletes()).toEqual([]);
    waitedOut(s);
  });
});

describe('fault matrix, slow drip: the guard', () => {
  const body = { name: 'ci-1', flavorRef: '2', imageRef: 'img', networks: 'none' as const };

  it('createServer × drip on the POST (never reached Nova) → searched, POSTed again, ok; no server left behind', async () => {
    const { nova, front, client } = await stack();
    const guard = new QuotaGuard(client, GUARD_OPTIONS);
    front.drip({ method: 'POST', path: '/v2.1/servers' });
    // The POST is re-sent after one clean search; the dripped one's tag stays watched (a twin may
    // still land) until its time surely passes (200 + 500 ms): the cell ends with that watch.
    const createAndWatch = async (): Promise<Server> => {
      const server = await guard.createServer(body);
      while (guard.unsettledCreates().length > 0) await sleepReal(10);
      return server;
    };
    const s = await runRealCell(front, createAndWatch, 6000);
    expect(outcomeClass(s)).toBe('ok');
    waitedOut(s);
    expect(front.requests.filter((r) => r.method === 'POST')).toHaveLength(2);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(1);
    expect(nova.listServerStates().map((x) => x.id)).toEqual(s.ok ? [s.value.id] : []);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('createServer × the POST reached Nova, its answer drips → the server is adopted, not created twice', async () => {
    const { nova, front, client } = await stack();
    const guard = new QuotaGuard(client, GUARD_OPTIONS);
    front.drip({ method: 'POST', path: '/v2.1/servers', forward: true });
    const s = await runRealCell(front, () => guard.createServer(body), 6000);
    expect(outcomeClass(s)).toBe('ok');
    waitedOut(s);
    expect(nova.requestsTo('POST', '/servers'), 'adopted, not created twice').toHaveLength(1);
    expect(nova.listServerStates().map((x) => x.id)).toEqual(s.ok ? [s.value.id] : []);
    expect(guard.inFlightClaims).toBe(0);
  });

  it('withQuotaGuard × drip on GET /limits → the read is retried, fn runs once, ok', async () => {
    const { nova, front, client } = await stack();
    const guard = new QuotaGuard(client, GUARD_OPTIONS);
    front.drip({ method: 'GET', path: '/v2.1/limits' });
    let calls = 0;
    const fn = async (): Promise<Server> => {
      calls++;
      const created = await client.createServer(body);
      for (;;) {
        const now = await client.getServer(created.id);
        if (now.status !== 'BUILD') return now;
        await sleepReal(5);
      }
    };
    const s = await runRealCell(front, () => guard.withQuotaGuard({ flavorRef: '2', count: 1 }, fn), 6000);
    expect(outcomeClass(s)).toBe('ok');
    waitedOut(s);
    expect(calls).toBe(1);
    expect(front.requests.filter((r) => r.path === '/v2.1/limits')).toHaveLength(2);
    expect(nova.listServerStates().map((x) => x.id)).toEqual(s.ok ? [s.value.id] : []);
    expect(guard.inFlightClaims).toBe(0);
  });
});

describe('fault matrix, slow drip: audit and reaper', () => {
  it('auditQuota × drip on the first /limits read → retried, consistent', async () => {
    const { nova, front, client } = await stack();
    nova.addServer({ name: 'ci-1', flavorId: '2' });
    front.drip({ method: 'GET', path: '/v2.1/limits' });
    const s = await runRealCell(front, () => auditQuota(client), 5000);
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) {
      expect(s.value.verdict).toBe('consistent');
      expect(s.value.ghosts).toEqual([]);
    }
    waitedOut(s);
  });

  it('auditQuota × drip on the ghost check of a live server → never a ghost', async () => {
    const { nova, front, client } = await stack();
    const id = nova.addServer({ name: 'ci-1', flavorId: '2' }).id;
    front.drip({ method: 'GET', path: `/v2.1/servers/${id}` });
    const s = await runRealCell(front, () => auditQuota(client), 5000);
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) {
      expect(s.value.ghosts, 'a live server is never a ghost').toEqual([]);
      expect(s.value.servers.map((x) => x.id)).toEqual([id]);
    }
    expect(nova.getServerState(id)?.status).toBe('ACTIVE');
  });

  it('reapServers dry run × drip on the listing → retried, the server skipped (dry-run), no DELETE', async () => {
    const { nova, front, client } = await stack();
    const id = nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR }).id;
    front.drip({ method: 'GET', path: '/v2.1/servers/detail' });
    const s = await runRealCell(front, () => reapServers(client, { prefix: 'ci-', olderThanMs: HOUR, dryRun: true, passIntervalMs: 100 }), 5000);
    expect(outcomeClass(s)).toBe('ok');
    if (s.ok) expect(s.value.skipped.map((k) => [k.serverId, k.reason])).toEqual([[id, 'dry-run']]);
    expect(front.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    waitedOut(s);
  });

  it('reapServers × drip on the DELETE → deleted, and FakeNova has it no more', async () => {
    const { nova, front, client } = await stack({ deleteDelayMs: 50 });
    const id = nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3 * HOUR }).id;
    front.drip({ method: 'DELETE', path: `/v2.1/servers/${id}` });
    const reap = (): ReturnType<typeof reapServers> =>
      reapServers(client, { prefix: 'ci-', olderThanMs: HOUR, passIntervalMs: 100, deleteIntervalMs: 20, deleteTimeoutMs: 3000, deleteOptions: { jitter: 0, redeleteAfterMs: 0 } });
    const s = await runRealCell(front, reap, 5000, engineIdle(client));
    expect(s.ok, 'deletion failures are in `failed`, not thrown').toBe(true);
    if (!s.ok) return;
    expect(s.value.deleted.map((d) => [d.serverId, d.outcome])).toEqual([[id, 'deleted']]);
    expect(s.value.failed).toEqual([]);
    expect(nova.getServerState(id)).toBeUndefined();
  });
});

describe('fault matrix, slow drip: Keystone auth', () => {
  async function keystoneStack(times: number): Promise<{ nova: FakeNova; front: DripFront; auth: KeystoneAuth; client: NovaClient }> {
    const ref: { keystone?: FakeKeystone } = {};
    const nova = await startNova({ validateToken: (t) => ref.keystone!.isValid(t) });
    const keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, projects: [{ id: nova.projectId, name: 'ci' }] });
    afterThisTest(() => keystone.stop());
    ref.keystone = keystone;
    const front = await DripFront.start(keystone.url);
    afterThisTest(() => front.close());
    front.drip({ method: 'POST', path: /\/auth\/tokens$/, status: 201, times });
    const auth = new KeystoneAuth({
      authUrl: front.via(keystone.url),
      username: 'ci-bot',
      password: 'ci-bot-password',
      userDomainName: 'Default',
      projectName: 'ci',
      projectDomainName: 'Default',
    });
    const client = new NovaClient({
      auth,
      microversion: '2.79',
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      retry: { retries: RETRIES, minDelayMs: 2, maxDelayMs: MAX_DELAY_MS, maxRetryTimeMs: 10_000 },
      maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    });
    return { nova, front, auth, client };
  }

  it('drip on the token request once → retried by the client, getLimits succeeds', async () => {
    const { nova, front, auth, client } = await keystoneStack(1);
    const s = await runRealCell(front, () => client.getLimits(), 3000);
    expect(outcomeClass(s)).toBe('ok');
    waitedOut(s);
    expect(auth.tokenRequests).toBe(2);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });

  it('drip on every token request → NovaNetworkError (timedOut) after retries+1 token requests, no Nova request, no secret', async () => {
    const { nova, front, auth, client } = await keystoneStack(Number.POSITIVE_INFINITY);
    const s = await runRealCell(front, () => client.getLimits(), (RETRIES + 1) * (REQUEST_TIMEOUT_MS + MAX_DELAY_MS));
    expect(outcomeClass(s)).toBe('NovaNetworkError');
    waitedOut(s, RETRIES + 1);
    expect(auth.tokenRequests).toBe(RETRIES + 1);
    expect(nova.requests).toHaveLength(0);
    if (!s.ok) expect(String(s.error.message) + String(s.error.stack)).not.toContain('ci-bot-password');
  });
});
