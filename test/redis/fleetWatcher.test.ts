/**
 * The fleet watcher (`RedisQuotaLedger.forClient`, on by default since issue 31) on a real redis-server and
 * FakeNova, on the real clock with generous bounds. Each "host" is a NovaClient (its own delete
 * engine) whose requests to FakeNova are counted per client, with its own ledger on the shared Redis.
 * A watcher is "paused" by freezing the timers of its clock (its lease is not renewed, it publishes
 * nothing); `fleetFailover.test.ts` stops a real process with SIGSTOP.
 */
import type { AxiosAdapter } from 'axios';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/index.js';
import { waitForActive } from '../../src/guard/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { fleetKeys } from '../../src/redis/fleetScripts.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { haveRedis, RedisServer, skipReason, until } from './support.js';
import { reply } from '../delete/support/hostile.js';
import { pausableClock } from '../pausableClock.js';

const TTL = 600;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What one host sent to Nova: `GET /servers/{id}`, listings (`/servers/detail`, brief `/servers`), DELETEs. */
interface Sent {
  /** Set: every `GET /servers/{id}` of this host gets a proxy's 404 page (a failed look). */
  failGets?: boolean;
  /** Set: this host's brief listings (`GET /servers`) after its first keep only what it keeps (a front cutting them, no next link). */
  cut?: (ids: readonly string[]) => readonly string[];
  briefs?: number;
  gets: number;
  listings: number;
  deletes: number;
  all: string[];
}

interface Host {
  client: NovaClient;
  ledger: RedisQuotaLedger;
  sent: Sent;
  warnings: string[];
  clock: ReturnType<typeof pausableClock>;
}

function counting(nova: FakeNova, sent: Sent): AxiosAdapter {
  return (config) => {
    const method = (config.method ?? 'get').toUpperCase();
    const path = new URL(config.url ?? '', config.baseURL ?? nova.endpoint).pathname.replace(/^\/v2\.1/, '');
    sent.all.push(`${method} ${path}`);
    if (method === 'GET' && /^\/servers(\/detail)?$/.test(path)) sent.listings++;
    else if (method === 'GET' && /^\/servers\/[^/]+$/.test(path)) {
      sent.gets++;
      if (sent.failGets) return Promise.resolve(reply(config, 404, '<html>Not Found</html>', { 'content-type': 'text/html' }));
    } else if (method === 'DELETE') sent.deletes++;
    const cut = sent.cut;
    if (method === 'GET' && path === '/servers' && cut) {
      return Promise.resolve(nova.adapter(config)).then((res) => {
        sent.briefs = (sent.briefs ?? 0) + 1;
        if (res.status !== 200 || sent.briefs === 1) return res;
        const body = JSON.parse(typeof res.data === 'string' ? res.data : JSON.stringify(res.data)) as { servers: Array<{ id: string }> };
        const kept = new Set(cut(body.servers.map((s) => s.id)));
        return { ...res, data: JSON.stringify({ servers: body.servers.filter((s) => kept.has(s.id)) }) };
      });
    }
    return nova.adapter(config);
  };
}

describe.skipIf(!haveRedis)(`fleet watcher on a real redis-server${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.kill();
  });

  /** A host; `'default'`: `fleetWatcher` left out (on by default since issue 31). */
  async function host(nova: FakeNova, name: string, fleetWatcher: boolean | 'default' = true, ttlMs = TTL): Promise<Host> {
    const sent: Sent = { gets: 0, listings: 0, deletes: 0, all: [] };
    const warnings: string[] = [];
    const clock = pausableClock();
    const client = new NovaClient({
      endpoint: nova.endpoint,
      token: `admin:${nova.projectId}`,
      microversion: '2.79',
      adapter: counting(nova, sent),
      retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 },
      maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    });
    const logger = { info: () => undefined, debug: () => undefined, error: () => undefined, warn: (m: string) => void (m.startsWith('fleet watcher') && warnings.push(m)) };
    const ledger = await RedisQuotaLedger.forClient(client, { url: server.url, holder: name, ...(fleetWatcher === 'default' ? {} : { fleetWatcher }), fleetLeaseTtlMs: ttlMs, clock, logger });
    afterThisTest(async () => {
      clock.resume();
      await ledger.close();
    });
    return { client, ledger, sent, warnings, clock };
  }

  const watching = (hosts: Host[]): Host[] => hosts.filter((h) => h.ledger.fleetWatcher!.watching);
  const settledFleet = (hosts: Host[]) => () => watching(hosts).length === 1 && hosts.every((h) => h.ledger.fleetWatcher!.watching || h.ledger.fleetWatcher!.consuming);
  const resetSent = (h: Host): void => void Object.assign(h.sent, { gets: 0, listings: 0, deletes: 0, all: [] });

  it('one watcher is elected and keeps its lease (renewed every third of the TTL); the others consume', async () => {
    const nova = await startNova();
    const hosts = await Promise.all(['a', 'b', 'c'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const [leader] = watching(hosts);
    const epoch = leader!.ledger.fleetWatcher!.epoch;
    await sleep(4 * TTL);
    expect(watching(hosts)).toEqual([leader]);
    expect(leader!.ledger.fleetWatcher!.epoch).toBe(epoch);
    expect(hosts.reduce((s, h) => s + h.ledger.fleetWatcher!.stats.elections, 0)).toBe(1);
    // Heartbeats: about three publications a TTL, every one consumed by the others.
    expect(leader!.ledger.fleetWatcher!.stats.published).toBeGreaterThanOrEqual(6);
    for (const h of hosts) if (h !== leader) expect(h.ledger.fleetWatcher!.stats.consumed).toBeGreaterThanOrEqual(4);
    expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
  });

  it("a consumer's deleteServer({ wait: true }) resolves from the watcher's published 404: the consumer sends its DELETE and nothing else", async () => {
    const nova = await startNova({ deleteDelayMs: 300 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    resetSent(consumer);
    const r = await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
    expect(r.outcome).toBe('deleted');
    expect(nova.getServerState(id)).toBeUndefined();
    expect(consumer.sent.all).toEqual([`DELETE /servers/${id}`]);
    expect(consumer.ledger.fleetWatcher!.stats.proofs).toBe(1);
    expect(consumer.client.deleteEngine.idle).toBe(true);
    expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
  });

  it("on by default (issue 31): forClient without fleetWatcher joins the fleet, and a consumer's deleteServer({ wait: true }) sends its DELETE only; fleetWatcher: false stays out", async () => {
    const nova = await startNova({ deleteDelayMs: 200 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n, 'default')));
    expect(hosts.every((h) => h.ledger.fleetWatcher !== undefined)).toBe(true);
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    resetSent(consumer);
    expect((await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
    expect(consumer.sent.all).toEqual([`DELETE /servers/${id}`]);
    const off = await host(nova, 'off', false);
    expect(off.ledger.fleetWatcher).toBeUndefined();
    expect(off.client.deleteEngine.fleetAttached).toBe(false);
  });

  it("a consumer's waitForActive sends no GET: the watcher's published ACTIVE (the whole body, through the stream) ends it", async () => {
    const nova = await startNova({ buildDelayMs: 500 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const s = await consumer.client.createServer({ name: 'via-stream', flavorRef: '1', imageRef: 'img', networks: 'none' });
    resetSent(consumer);
    const r = await waitForActive(consumer.client, s.id, { intervalMs: 100, timeoutMs: 20_000 });
    expect(r.outcome).toBe('active');
    expect(r.server).toMatchObject({ id: s.id, name: 'via-stream', status: 'ACTIVE', flavor: expect.anything() });
    expect(consumer.sent.all).toEqual([]);
    expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
  });

  it('new interest reaches the watcher within a read interval, not at its next round (a 30 s lease: rounds every 10 s)', async () => {
    const nova = await startNova({ buildDelayMs: 300, deleteDelayMs: 300 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n, true, 30_000)));
    expect(await until(settledFleet(hosts), 20_000)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const s = await consumer.client.createServer({ name: 'soon', flavorRef: '1', imageRef: 'img', networks: 'none' });
    const t0 = performance.now();
    expect((await waitForActive(consumer.client, s.id, { intervalMs: 100, timeoutMs: 60_000 })).outcome).toBe('active');
    const activeMs = performance.now() - t0;
    const t1 = performance.now();
    expect((await consumer.client.deleteServer(s.id, { wait: true, intervalMs: 100, timeoutMs: 60_000 })).outcome).toBe('deleted');
    const deletedMs = performance.now() - t1;
    // Before: each waited for the watcher's next round (up to 10 s). Generous bounds for a busy machine.
    expect(activeMs).toBeLessThan(5000);
    expect(deletedMs).toBeLessThan(5000);
    expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
  });

  it('a paused watcher (timers frozen: no renewal, no publication) is replaced within the lease TTL; its consumers fall back once, then consume the new watcher', async () => {
    const nova = await startNova({ deleteDelayMs: 200 });
    const hosts = await Promise.all(['a', 'b', 'c'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const old = watching(hosts)[0]!;
    const oldEpoch = old.ledger.fleetWatcher!.epoch!;
    old.clock.pause();
    const pausedAt = Date.now();
    const others = hosts.filter((h) => h !== old);
    expect(await until(() => watching(others).length === 1, 5 * TTL)).toBe(true);
    // Within the TTL of the pause (plus a scheduling margin on a busy machine).
    expect(Date.now() - pausedAt).toBeLessThan(TTL + 400);
    const next = watching(others)[0]!;
    expect(next.ledger.fleetWatcher!.epoch).toBeGreaterThan(oldEpoch);
    const consumer = others.find((h) => h !== next)!;
    expect(await until(() => consumer.ledger.fleetWatcher!.consuming, 5 * TTL)).toBe(true);
    // The consumer fell back at most once (stalled), with one warning each time.
    expect(consumer.ledger.fleetWatcher!.stats.fallbacks).toBeLessThanOrEqual(1);
    expect(consumer.warnings.length).toBe(consumer.ledger.fleetWatcher!.stats.fallbacks);
    // The old watcher wakes up: its lease is gone, it publishes nothing and becomes a consumer.
    old.clock.resume();
    expect(await until(() => !old.ledger.fleetWatcher!.watching && old.ledger.fleetWatcher!.consuming, 10 * TTL)).toBe(true);
    expect(watching(hosts)).toEqual([next]);
    // And the fleet still answers the consumer's deletes without a look of its own.
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    resetSent(consumer);
    expect((await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
    expect(consumer.sent.all).toEqual([`DELETE /servers/${id}`]);
  });

  it("the watcher's looks at a server fail (a proxy's 404 page: a failed look no later look mends): it publishes that it cannot answer, and the consumer looks at that server by itself (no fallback, no warning)", async () => {
    const nova = await startNova({ deleteDelayMs: 1000 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const leader = watching(hosts)[0]!;
    const consumer = hosts.find((h) => h !== leader)!;
    leader.sent.failGets = true;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    resetSent(consumer);
    const r = await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
    expect(r.outcome).toBe('deleted');
    expect(leader.sent.gets).toBeGreaterThanOrEqual(1);
    expect(consumer.sent.all.at(-1)).toBe(`GET /servers/${id}`);
    expect(consumer.ledger.fleetWatcher!.stats.fallbacks).toBe(0);
    expect(consumer.ledger.fleetWatcher!.consuming).toBe(true);
    expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
  });

  it('a stalled watcher: the consumer falls back to its own looks with exactly one warning and a count, and its wait ends by its own 404', async () => {
    const nova = await startNova({ deleteDelayMs: 1500 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const leader = watching(hosts)[0]!;
    const consumer = hosts.find((h) => h !== leader)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    resetSent(consumer);
    const wait = consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
    await sleep(300);
    // The watcher hangs holding its lease (renewed, as a hung process's keep-alive might): its
    // timers stop, and its publications are refused from now on (the lease is no longer its token's).
    leader.clock.pause();
    const keys = fleetKeys(ledgerKeys('nova-guard:', nova.endpoint, nova.projectId).base);
    await admin.set(keys[0]!, `hung:${leader.ledger.fleetWatcher!.epoch!}`, 'PX', 60_000);
    const r = await wait;
    expect(r.outcome).toBe('deleted');
    expect(consumer.ledger.fleetWatcher!.stats.fallbacks).toBe(1);
    expect(consumer.warnings).toHaveLength(1);
    expect(consumer.warnings[0]).toMatch(/no publication within 600 ms/);
    // Its own looks after the fallback (or as the new watcher) found the 404.
    expect(consumer.sent.gets).toBeGreaterThanOrEqual(1);
    expect(consumer.sent.all.filter((x) => x.startsWith('GET')).at(-1)).toBe(`GET /servers/${id}`);
  });

  it('a gap in the sequence numbers: one warning, a count, own looks, then consuming again at the next publication', async () => {
    const nova = await startNova({ deleteDelayMs: 100_000 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const controller = new AbortController();
    const wait = consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000, signal: controller.signal }).catch((e: unknown) => e);
    await sleep(2 * TTL);
    expect(consumer.sent.gets + consumer.sent.listings).toBe(0);
    // Three publications lost (e.g. trimmed before this host read them).
    const keys = fleetKeys(ledgerKeys('nova-guard:', nova.endpoint, nova.projectId).base);
    await admin.incrby(keys[2]!, 3);
    expect(await until(() => consumer.ledger.fleetWatcher!.stats.gaps === 1, 5 * TTL)).toBe(true);
    expect(await until(() => consumer.sent.gets + consumer.sent.listings > 0, 5 * TTL)).toBe(true);
    expect(await until(() => consumer.ledger.fleetWatcher!.consuming, 5 * TTL)).toBe(true);
    expect(consumer.ledger.fleetWatcher!.stats.fallbacks).toBe(1);
    expect(consumer.warnings).toHaveLength(1);
    expect(consumer.warnings[0]).toMatch(/gap/);
    // Consuming again: no more looks of its own.
    await sleep(150);
    const looks = consumer.sent.gets + consumer.sent.listings;
    await sleep(2 * TTL);
    expect(consumer.sent.gets + consumer.sent.listings).toBe(looks);
    controller.abort();
    await wait;
  });

  it("a publication from an older epoch is ignored but for proofs (fencing), and so is one whose proof is weaker than a 404 ('absent', from a watcher before absence stopped being proof, included)", async () => {
    const nova = await startNova({ deleteDelayMs: 100_000 });
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const leader = watching(hosts)[0]!;
    const consumer = hosts.find((h) => h !== leader)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    const controller = new AbortController();
    const wait = consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000, signal: controller.signal }).catch((e: unknown) => e);
    await sleep(TTL);
    const keys = fleetKeys(ledgerKeys('nova-guard:', nova.endpoint, nova.projectId).base);
    const epoch = leader.ledger.fleetWatcher!.epoch!;
    // In sequence (the counter taken as the watcher takes it), so no gap: only the epoch is wrong.
    const publish = (e: number, o: unknown): Promise<unknown> =>
      admin.eval("local s = redis.call('INCR', KEYS[1]) redis.call('XADD', KEYS[2], '*', 'e', ARGV[1], 's', s, 'd', '', 'o', ARGV[2]) return s", 2, keys[2]!, keys[3]!, String(e), JSON.stringify(o));
    // A deposed watcher's status (it may predate the host's DELETE) and its "cannot answer" are dropped;
    // only its proofs would count (test/delete/fleetConsumer.test.ts).
    await publish(epoch - 1, [{ i: id, s: { status: 'SOFT_DELETED', 'OS-EXT-STS:task_state': null } }, { i: id, x: 'gave up' }]);
    await publish(epoch, [{ i: id, g: 'DELETED' }]);
    await publish(epoch, [{ i: id, g: true }]);
    await publish(epoch, [{ i: id, g: 'absent' }]);
    expect(await until(() => consumer.ledger.fleetWatcher!.stats.staleEpoch === 1, 5 * TTL)).toBe(true);
    await sleep(TTL);
    expect(consumer.ledger.fleetWatcher!.stats.proofs).toBe(0);
    expect(consumer.ledger.fleetWatcher!.stats.gaps).toBe(0);
    expect(consumer.client.deleteEngine.pendingWaits).toBe(1);
    expect(nova.getServerState(id)).toBeDefined();
    controller.abort();
    expect(await wait).toMatchObject({ name: 'AbortError' });
  });

  it("the watcher's brief listing cut in front of Nova (1 of 10 dropped, no next link) ends no other host's wait: each ends after Nova's 404, one GET a server for the fleet", async () => {
    const nova = await startNova({ deleteDelayMs: 3000 });
    const ids = Array.from({ length: 10 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    for (const h of hosts) h.sent.cut = (listed) => listed.filter((x) => x !== ids[3]);
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    resetSent(consumer);
    const ends = new Map<string, { outcome: string; at: number }>();
    await Promise.all(ids.map((id) => consumer.client.deleteServer(id, { wait: true, intervalMs: 200, jitter: 0, timeoutMs: 30_000 }).then((r) => void ends.set(id, { outcome: r.outcome, at: Date.now() }))));
    for (const id of ids) {
      const end = ends.get(id)!;
      const first404 = nova.requestsTo('GET', `/servers/${id}`).find((q) => q.status === 404);
      expect({ id, outcome: end.outcome, after404: first404 !== undefined && end.at >= first404.timeMs }).toEqual({ id, outcome: 'deleted', after404: true });
      expect(nova.requestsTo('GET', `/servers/${id}`).filter((q) => q.status === 404)).toHaveLength(1);
    }
    // The consumer sent its DELETEs and nothing else: the watcher's 404s were its proofs.
    expect(consumer.sent.all.filter((r) => !r.startsWith('DELETE'))).toEqual([]);
  });

  it('one ledger with fleetWatcher per client: a second is refused with ValidationError, and its connections are closed', async () => {
    const nova = await startNova();
    const h = await host(nova, 'a');
    await expect(RedisQuotaLedger.forClient(h.client, { url: server.url, holder: 'again', fleetWatcher: true, fleetLeaseTtlMs: TTL })).rejects.toMatchObject({ name: 'ValidationError' });
    await h.ledger.close();
    // Only the test's own connection is left: nothing of the refused ledger, nothing of the closed one.
    let connections = 0;
    for (let i = 0; i < 100; i++) {
      connections = String(await admin.client('LIST')).split('\n').filter((l) => l.trim() !== '').length;
      if (connections === 1) break;
      await sleep(20);
    }
    expect(connections).toBe(1);
  });

  it('close() stops everything: no timer, no wait, the lease given up at once (another host takes it at its next round)', async () => {
    const nova = await startNova();
    const hosts = await Promise.all(['a', 'b'].map((n) => host(nova, n)));
    expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
    const leader = watching(hosts)[0]!;
    const other = hosts.find((h) => h !== leader)!;
    const closedAt = Date.now();
    await leader.ledger.close();
    expect(leader.ledger.fleetWatcher!.watching).toBe(false);
    expect(leader.client.deleteEngine.idle).toBe(true);
    expect(await until(() => other.ledger.fleetWatcher!.watching, 5 * TTL)).toBe(true);
    expect(Date.now() - closedAt).toBeLessThan(TTL / 3 + 400);
  });

  it('measure: 4 hosts each waiting on its own 5 deletes send about 1/4 of the listings with the fleet watcher', async () => {
    const DELETE_MS = Number(process.env.FLEET_DELETE_MS ?? 3000);
    const run = async (fleet: boolean): Promise<{ listings: number; gets: number; perHost: number[] }> => {
      const nova = await startNova({ deleteDelayMs: DELETE_MS });
      const hosts = await Promise.all(['a', 'b', 'c', 'd'].map((n) => host(nova, `${n}${fleet ? 'f' : 'n'}`, fleet)));
      if (fleet) expect(await until(settledFleet(hosts), 10 * TTL)).toBe(true);
      const ids = hosts.map(() => Array.from({ length: 5 }, () => nova.addServer({ status: 'ACTIVE' }).id));
      hosts.forEach(resetSent);
      const results = await Promise.all(hosts.map((h, i) => h.client.deleteServers(ids[i]!, { wait: true, intervalMs: 200, timeoutMs: 30_000 })));
      for (const r of results) expect(r.failed).toEqual([]);
      for (const h of hosts) await h.ledger.close();
      return { listings: hosts.reduce((s, h) => s + h.sent.listings, 0), gets: hosts.reduce((s, h) => s + h.sent.gets, 0), perHost: hosts.map((h) => h.sent.listings) };
    };
    const without = await run(false);
    const withFleet = await run(true);
    console.log(`fleet watcher, 4 hosts x 5 deletes: listings ${without.listings} -> ${withFleet.listings} (ratio ${(withFleet.listings / without.listings).toFixed(2)}), GETs ${without.gets} -> ${withFleet.gets}; per host ${JSON.stringify(without.perHost)} -> ${JSON.stringify(withFleet.perHost)}`);
    expect(withFleet.listings).toBeLessThanOrEqual(Math.ceil(without.listings * 0.5));
    expect(withFleet.listings + withFleet.gets).toBeLessThan(without.listings + without.gets);
    // Only the watcher lists.
    expect(withFleet.perHost.filter((n) => n > 0)).toHaveLength(1);
  });
});

describe('fleet watcher options', () => {
  const base = { url: 'redis://127.0.0.1:1', endpoint: 'http://nova.example:8774/v2.1', projectId: 'p' };
  it('new RedisQuotaLedger refuses fleetWatcher: true (it needs the client: forClient); a short lease, a fraction and a misspelling are refused', async () => {
    expect(() => new RedisQuotaLedger({ ...base, fleetWatcher: true })).toThrow(/forClient/);
    expect(() => new RedisQuotaLedger({ ...base, fleetLeaseTtlMs: 299 })).toThrow(/fleetLeaseTtlMs must be at least 300/);
    expect(() => new RedisQuotaLedger({ ...base, fleetLeaseTtlMs: 1000.5 })).toThrow(/whole number/);
    expect(() => new RedisQuotaLedger({ ...base, fleetWatch: true } as never)).toThrow(/fleetWatcher/);
    const nova = await startNova();
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, adapter: nova.adapter });
    await expect(RedisQuotaLedger.forClient(client, { url: base.url, fleetwatcher: true } as never)).rejects.toThrow(/fleetWatcher/);
    const off = new RedisQuotaLedger({ ...base, fleetWatcher: false });
    expect(off.fleetWatcher).toBeUndefined();
    await off.close();
  });
});
