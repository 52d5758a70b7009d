/**
 * The fleet watcher (`src/delete/fleetWatcher.ts`) over each of its three stores, one suite run on
 * each (`describe.each`): in memory (`MemoryFleetStore`), a SQLite ledger file in a tmp directory
 * (`SqliteFleetStore`: each "host" its own connection to the file, as separate processes have), and
 * a real redis-server (`RedisFleetStore`: each host its own connection). First the store's atomic
 * operations (the `FleetStore` contract), then the coordinator's behaviour on FakeNova: election,
 * takeover after the holder stops, a deposed watcher publishing nothing, gaps, proofs by id for a
 * late waiter, interest expiry. Real clock, generous bounds; a host is "stopped" by freezing the
 * timers of its clock (no renewal, no publication, no read).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AxiosAdapter } from 'axios';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { FleetWatcher, MemoryFleetStore, type FleetPublication, type FleetStore } from '../../src/delete/index.js';
import { NovaClient } from '../../src/nova/index.js';
import { waitForDelete } from '../../src/index.js';
import { RedisConnection } from '../../src/redis/connection.js';
import { RedisFleetStore } from '../../src/redis/fleetStore.js';
import { SqliteFleetStore } from '../../src/sqlite/fleetStore.js';
import { LedgerStore } from '../../src/sqlite/store.js';
import { whileBusy } from '../../src/sqlite/busy.js';
import { hostMonotonic } from '../../src/sqlite/hostClock.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { haveRedis, RedisServer, until } from '../redis/support.js';
import { pausableClock } from '../pausableClock.js';

const TTL = 600;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const silent = { info: () => undefined, debug: () => undefined, error: () => undefined, warn: () => undefined, trace: () => undefined, fatal: () => undefined };

/** One backend: a store for each host (its own connection where the backend has one), and a way to drop all state between tests. */
interface Backend {
  readonly name: string;
  readonly skip: boolean;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** A new, empty fleet (a new scope): returns the function that opens one host's store on it. */
  fleet(): () => FleetStore;
}

function memoryBackend(): Backend {
  return {
    name: 'memory',
    skip: false,
    setUp: async () => undefined,
    tearDown: async () => undefined,
    fleet: () => {
      const store = new MemoryFleetStore(systemClock);
      return () => store;
    },
  };
}

function sqliteBackend(): Backend {
  let dir = '';
  let n = 0;
  return {
    name: 'SQLite file',
    skip: false,
    setUp: async () => void (dir = mkdtempSync(join(tmpdir(), 'nova-guard-fleet-store-'))),
    tearDown: async () => rmSync(dir, { recursive: true, force: true }),
    fleet: () => {
      const file = join(dir, `fleet-${++n}.sqlite`);
      return () => {
        const ledgerFile = new LedgerStore(file, 'http://nova.example:8774/v2.1\np', () => 0);
        afterThisTest(() => ledgerFile.close());
        const now = hostMonotonic(systemClock);
        return new SqliteFleetStore({ file: ledgerFile, attempts: (fn) => whileBusy(() => fn(now()), 2000, systemClock) });
      };
    },
  };
}

function redisBackend(): Backend {
  let server: RedisServer | undefined;
  let n = 0;
  return {
    name: 'Redis',
    skip: !haveRedis,
    setUp: async () => void (server = await RedisServer.start()),
    tearDown: async () => server?.kill(),
    fleet: () => {
      const base = `test:{fleet-${++n}}:`;
      return () => {
        const conn = new RedisConnection({ url: server!.url, redis: undefined, password: undefined, clock: systemClock, commandTimeoutMs: 2000, logger: silent as never, channels: [], onMessage: () => undefined, onReconnect: async () => undefined });
        afterThisTest(() => conn.close());
        return new RedisFleetStore(conn, base, silent as never);
      };
    },
  };
}

/** What one host sent to Nova (`METHOD /path`). */
function counting(nova: FakeNova, sent: string[]): AxiosAdapter {
  return (config) => {
    const path = new URL(config.url ?? '', config.baseURL ?? nova.endpoint).pathname.replace(/^\/v2\.1/, '');
    sent.push(`${(config.method ?? 'get').toUpperCase()} ${path}`);
    return nova.adapter(config);
  };
}

interface Host {
  client: NovaClient;
  watcher: FleetWatcher;
  clock: ReturnType<typeof pausableClock>;
  sent: string[];
  warnings: string[];
}

const looks = (h: Host): string[] => h.sent.filter((r) => r.startsWith('GET /servers'));

describe.each([memoryBackend(), sqliteBackend(), redisBackend()])('fleet watcher on the $name store', (backend) => {
  beforeAll(() => backend.setUp(), 30_000);
  afterAll(() => backend.tearDown());
  const test = backend.skip ? it.skip : it;

  async function host(nova: FakeNova, open: () => FleetStore, store?: FleetStore): Promise<Host> {
    const sent: string[] = [];
    const warnings: string[] = [];
    const clock = pausableClock();
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: counting(nova, sent), retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 }, maxRequestsPerSecond: Number.POSITIVE_INFINITY });
    const logger = { ...silent, warn: (_o: unknown, m?: string) => void warnings.push(String(m)) };
    const watcher = await FleetWatcher.start({ store: store ?? open(), engine: client.deleteEngine, clock, logger: logger as never, leaseTtlMs: TTL });
    afterThisTest(async () => {
      clock.resume();
      await watcher.close();
    });
    return { client, watcher, clock, sent, warnings };
  }

  const watching = (hosts: Host[]): Host[] => hosts.filter((h) => h.watcher.watching);
  const settled = (hosts: Host[]) => () => watching(hosts).length === 1 && hosts.every((h) => h.watcher.watching || h.watcher.consuming);

  describe('the store', () => {
    test('elect: the first token takes the lease with an epoch, another is told that epoch, the holder renews the same epoch; resign frees it', async () => {
      const s = backend.fleet()();
      const a = await s.elect('a', 5000);
      expect(a.held).toBe(true);
      expect(a.epoch).toBeGreaterThan(0);
      expect(await s.elect('b', 5000)).toEqual({ held: false, epoch: a.epoch });
      expect(await s.elect('a', 5000)).toEqual({ held: true, epoch: a.epoch });
      await s.resign('b'); // not b's: nothing
      expect(await s.elect('b', 5000)).toEqual({ held: false, epoch: a.epoch });
      await s.resign('a');
      const b = await s.elect('b', 5000);
      expect(b.held).toBe(true);
      expect(b.epoch).toBeGreaterThan(a.epoch);
    });

    test('a lapsed lease is taken with a new epoch; the deposed holder publishes nothing and is told it no longer holds', async () => {
      const s = backend.fleet()();
      const a = await s.elect('a', 200);
      expect(await s.publish('a', a.epoch, { novaDateMs: undefined, items: [] }, 60_000)).toBeGreaterThan(0);
      await sleep(300);
      const b = await s.elect('b', 5000);
      expect(b.held).toBe(true);
      expect(b.epoch).toBeGreaterThan(a.epoch);
      expect(await s.publish('a', a.epoch, { novaDateMs: undefined, items: [{ i: 'x', g: 'not-found' }] }, 60_000)).toBe(0);
      // Nor with the new epoch: the token must hold it.
      expect(await s.publish('a', b.epoch, { novaDateMs: undefined, items: [] }, 60_000)).toBe(0);
      expect(await s.elect('a', 5000)).toEqual({ held: false, epoch: b.epoch });
      const kept = await s.register('m', [{ serverId: 'x', remainingMs: 5000, intervalMs: 100, confirmIntervalMs: 100, whole: false }], []);
      expect(kept).toEqual([]);
    });

    test('publications: numbered in order across epochs, read after a number; newest; a publication missed shows as a gap', async () => {
      const open = backend.fleet();
      const s = open();
      expect(await s.newest()).toBeUndefined();
      expect(await s.after(0, 10)).toEqual([]);
      const a = await s.elect('a', 5000);
      const seqs: number[] = [];
      for (let i = 0; i < 3; i++) seqs.push(await s.publish('a', a.epoch, { novaDateMs: 1_700_000_000_000 + i, items: [{ i: `s${i}`, s: { status: 'ACTIVE' } }] }, 60_000));
      expect(seqs[1]).toBe(seqs[0]! + 1);
      expect(seqs[2]).toBe(seqs[1]! + 1);
      expect(await s.newest()).toBe(seqs[2]);
      const all = await s.after(0, 10);
      expect(all.map((p) => p.seq)).toEqual(seqs);
      expect(all[1]).toEqual({ epoch: a.epoch, seq: seqs[1]!, novaDateMs: 1_700_000_000_001, items: [{ i: 's1', s: { status: 'ACTIVE' } }] } satisfies FleetPublication);
      // A second reader reads on from where it stopped (its own connection where the backend has one).
      const reader = open();
      expect((await reader.after(seqs[0]!, 10)).map((p) => p.seq)).toEqual(seqs.slice(1));
      expect((await reader.after(seqs[0]!, 1)).map((p) => p.seq)).toEqual([seqs[1]]);
      // A new watcher's numbers go on from the old one's: one counter for every epoch.
      await s.resign('a');
      const b = await s.elect('b', 5000);
      const next = await s.publish('b', b.epoch, { novaDateMs: undefined, items: [] }, 60_000);
      expect(next).toBe(seqs[2]! + 1);
      const last = (await s.after(seqs[2]!, 10))[0]!;
      expect([last.epoch, last.seq, last.novaDateMs, last.items]).toEqual([b.epoch, next, undefined, []]);
    });

    test('more than the store keeps: the oldest are trimmed, and a reader that far behind sees the numbers it skipped (a gap)', async () => {
      const s = backend.fleet()();
      const a = await s.elect('a', 60_000);
      const first = await s.publish('a', a.epoch, { novaDateMs: undefined, items: [] }, 60_000);
      for (let i = 0; i < 1200; i++) await s.publish('a', a.epoch, { novaDateMs: undefined, items: [] }, 60_000);
      const read = await s.after(first, 10);
      expect(read[0]!.seq).toBeGreaterThan(first + 1);
    }, 30_000);

    test('proofs are kept by server id with their epoch for a member that registers later; interest has expiries and a version', async () => {
      const s = backend.fleet()();
      const a = await s.elect('a', 5000);
      const v0 = await s.interestVersion();
      await s.publish('a', a.epoch, { novaDateMs: undefined, items: [{ i: 'gone-1', g: 'not-found' }, { i: 'alive-1', s: { status: 'ACTIVE' } }] }, 60_000);
      const kept = await s.register('m1', [
        { serverId: 'gone-1', remainingMs: 300, intervalMs: 100, confirmIntervalMs: 50, whole: true },
        { serverId: 'alive-1', remainingMs: 5000, intervalMs: 200, confirmIntervalMs: 60, whole: false },
      ], []);
      expect(kept).toEqual([{ serverId: 'gone-1', epoch: a.epoch, evidence: 'not-found' }]);
      const v1 = await s.interestVersion();
      expect(v1).not.toBe(v0);
      await s.register('m2', [{ serverId: 'alive-1', remainingMs: 5000, intervalMs: 1000, confirmIntervalMs: 1000, whole: false }], []);
      const read = await s.interest();
      expect(read.version).toBe(await s.interestVersion());
      expect(read.version).not.toBe(v1);
      const bySrv = read.entries.map((e) => [e.serverId, e.intervalMs, e.confirmIntervalMs, e.whole]).sort();
      expect(bySrv).toEqual([['alive-1', 1000, 1000, false], ['alive-1', 200, 60, false], ['gone-1', 100, 50, true]].sort());
      const gone = read.entries.find((e) => e.serverId === 'gone-1')!;
      expect(gone.remainingMs).toBeGreaterThan(0);
      expect(gone.remainingMs).toBeLessThanOrEqual(300);
      // Expiry: gone after its remaining time; a removal: gone at once (and the version does not move for it).
      await sleep(400);
      const v2 = await s.interestVersion();
      await s.register('m2', [], ['alive-1']);
      expect(await s.interestVersion()).toBe(v2);
      expect((await s.interest()).entries.map((e) => e.serverId)).toEqual(['alive-1']);
      // Kept proofs drop after their retention.
      await s.publish('a', a.epoch, { novaDateMs: undefined, items: [{ i: 'gone-2', g: 'not-found' }] }, 200);
      await sleep(300);
      await s.publish('a', a.epoch, { novaDateMs: undefined, items: [] }, 200);
      expect(await s.register('m3', [{ serverId: 'gone-2', remainingMs: 1000, intervalMs: 100, confirmIntervalMs: 100, whole: false }], [])).toEqual([]);
    });
  });

  describe('the coordinator on FakeNova', () => {
    test("one watcher is elected and keeps its lease; the others consume; a consumer's delete wait sends its DELETE only", async () => {
      const nova = await startNova({ deleteDelayMs: 300 });
      const open = backend.fleet();
      const hosts = await Promise.all([0, 1, 2].map(() => host(nova, open)));
      expect(await until(settled(hosts), 10 * TTL)).toBe(true);
      const leader = watching(hosts)[0]!;
      const epoch = leader.watcher.epoch;
      await sleep(2 * TTL);
      expect(watching(hosts)).toEqual([leader]);
      expect(leader.watcher.epoch).toBe(epoch);
      expect(hosts.reduce((n, h) => n + h.watcher.stats.elections, 0)).toBe(1);
      const consumer = hosts.find((h) => h !== leader)!;
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      consumer.sent.length = 0;
      const r = await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
      expect(r.outcome).toBe('deleted');
      expect(consumer.sent).toEqual([`DELETE /servers/${id}`]);
      expect(consumer.watcher.stats.proofs).toBe(1);
      expect(nova.requestsTo('GET', `/servers/${id}`).at(-1)!.status).toBe(404);
      expect(hosts.flatMap((h) => h.warnings)).toEqual([]);
    });

    test('the watcher stopped (timers frozen) is replaced within the lease TTL; once it resumes it publishes nothing and consumes the new watcher', async () => {
      const nova = await startNova({ deleteDelayMs: 200 });
      const open = backend.fleet();
      const hosts = await Promise.all([0, 1, 2].map(() => host(nova, open)));
      expect(await until(settled(hosts), 10 * TTL)).toBe(true);
      const old = watching(hosts)[0]!;
      const oldEpoch = old.watcher.epoch!;
      old.clock.pause();
      const pausedAt = Date.now();
      const others = hosts.filter((h) => h !== old);
      expect(await until(() => watching(others).length === 1, 5 * TTL)).toBe(true);
      expect(Date.now() - pausedAt).toBeLessThan(TTL + 400);
      const next = watching(others)[0]!;
      expect(next.watcher.epoch).toBeGreaterThan(oldEpoch);
      const published = old.watcher.stats.published;
      old.clock.resume();
      expect(await until(() => !old.watcher.watching && old.watcher.consuming, 10 * TTL)).toBe(true);
      expect(old.watcher.stats.published).toBe(published);
      expect(watching(hosts)).toEqual([next]);
      const consumer = others.find((h) => h !== next)!;
      expect(await until(() => consumer.watcher.consuming, 5 * TTL)).toBe(true);
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      consumer.sent.length = 0;
      expect((await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
      expect(consumer.sent).toEqual([`DELETE /servers/${id}`]);
    });

    test('a gap (publications this host never read): one warning, own looks, then consuming again', async () => {
      const nova = await startNova({ deleteDelayMs: 100_000 });
      const open = backend.fleet();
      // The consumer's store loses, once armed, the next two publications (never shown to it, as if trimmed).
      const inner = open();
      let drop = 0;
      const hidden = new Set<number>();
      const lossy: FleetStore = {
        carrier: inner.carrier,
        elect: (token, ttlMs) => inner.elect(token, ttlMs),
        resign: (token) => inner.resign(token),
        publish: (token, epoch, draft, retentionMs) => inner.publish(token, epoch, draft, retentionMs),
        newest: () => inner.newest(),
        register: (member, add, remove) => inner.register(member, add, remove),
        interest: () => inner.interest(),
        interestVersion: () => inner.interestVersion(),
        after: async (seq, count) => {
          const got = await inner.after(seq, count);
          for (const p of got) {
            if (drop === 0 || hidden.has(p.seq)) continue;
            hidden.add(p.seq);
            drop--;
          }
          return got.filter((p) => !hidden.has(p.seq));
        },
      };
      const a = await host(nova, open);
      await until(() => a.watcher.watching, 10 * TTL);
      const b = await host(nova, open, lossy);
      expect(await until(settled([a, b]), 10 * TTL)).toBe(true);
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      const controller = new AbortController();
      const wait = waitForDelete(b.client, id, { intervalMs: 100, timeoutMs: 20_000, signal: controller.signal }).catch((e: unknown) => e);
      await sleep(2 * TTL);
      expect(looks(b)).toEqual([]);
      drop = 2;
      expect(await until(() => b.watcher.stats.gaps === 1, 5 * TTL)).toBe(true);
      expect(await until(() => looks(b).length > 0, 5 * TTL)).toBe(true);
      expect(await until(() => b.watcher.consuming, 5 * TTL)).toBe(true);
      expect([b.watcher.stats.fallbacks, b.warnings.length]).toEqual([1, 1]);
      expect(b.warnings[0]).toMatch(/gap/);
      await sleep(150);
      const n = looks(b).length;
      await sleep(2 * TTL);
      expect(looks(b).length).toBe(n);
      controller.abort();
      await wait;
    });

    test("a wait that starts after the server's proof was published ends from the proof kept by id: no look of its own", async () => {
      const nova = await startNova({ deleteDelayMs: 200 });
      const open = backend.fleet();
      const hosts = await Promise.all([0, 1, 2].map(() => host(nova, open)));
      expect(await until(settled(hosts), 10 * TTL)).toBe(true);
      const [first, late] = hosts.filter((h) => !h.watcher.watching) as [Host, Host];
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      expect((await first.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
      // Well after the publication that carried the proof: the late host read past it already.
      await sleep(2 * TTL);
      late.sent.length = 0;
      const proofs = late.watcher.stats.proofs;
      const r = await waitForDelete(late.client, id, { intervalMs: 5000, timeoutMs: 20_000 });
      expect(r.outcome).toBe('deleted');
      expect(looks(late)).toEqual([]);
      expect(late.watcher.stats.proofs).toBe(proofs + 1);
    });

    test("a host stopped with a wait registered: the watcher looks for it until the interest's expiry, then no more", async () => {
      const nova = await startNova({ deleteDelayMs: 1_000_000 });
      const open = backend.fleet();
      const hosts = await Promise.all([0, 1].map(() => host(nova, open)));
      expect(await until(settled(hosts), 10 * TTL)).toBe(true);
      const leader = watching(hosts)[0]!;
      const gone = hosts.find((h) => h !== leader)!;
      const id = nova.addServer({ status: 'ACTIVE' }).id;
      const path = `GET /servers/${id}`;
      void waitForDelete(gone.client, id, { intervalMs: 100, timeoutMs: 1500 }).catch(() => undefined);
      expect(await until(() => leader.sent.includes(path), 5 * TTL)).toBe(true);
      // Stopped: it neither removes its interest nor renews anything.
      gone.clock.pause();
      await sleep(1500 + TTL);
      const n = leader.sent.filter((r) => r === path).length;
      expect(n).toBeGreaterThan(3);
      await sleep(3 * TTL);
      expect(leader.sent.filter((r) => r === path).length).toBeLessThanOrEqual(n + 1);
    });
  });
});
