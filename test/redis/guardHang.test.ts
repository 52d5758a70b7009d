/**
 * QuotaGuard on a RedisQuotaLedger whose Redis hangs (SIGSTOP): the guarded call settles on time
 * (maxWaitMs, the caller's signal), never waits for cleanup, and an abandoned ledger call never
 * sends a Nova request once the call settled. Also: one `ready` listener however many calls wait
 * for the connection, and Redis's own error text when the password is wrong. Real redis-server,
 * real clock: outcomes and generous bounds only.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import { RedisLedgerError, RedisQuotaLedger } from '../../src/redis/index.js';
import type { RedisQuotaLedgerOptions } from '../../src/redis/index.js';
import { QuotaWaitTimeoutError } from '../../src/guard/index.js';
import { AbortError, ValidationError } from '../../src/errors/index.js';
import { systemClock } from '../../src/core/clock.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, guardFor, startNova } from '../guard/fixtures.js';
import { ledgerKeys } from '../../src/redis/options.js';
import { haveRedis, RedisServer, skipReason } from './support.js';

const ENDPOINT = 'http://nova.example:8774/v2.1';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const limitsReads = (nova: FakeNova): number => nova.requestsTo('GET', '/limits').length;

/** A FakeNova whose cores are all used (flavor '2' needs 2 of 2). */
async function fullNova(): Promise<FakeNova> {
  const nova = await startNova({ maxTotalCores: 2 });
  nova.addServer({ flavorId: '2' });
  return nova;
}

describe.skipIf(!haveRedis)(`QuotaGuard on a hung Redis${haveRedis ? '' : ` (${skipReason})`}`, () => {
  let server: RedisServer;
  let n = 0;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    server?.resume();
    await server?.kill();
  });
  afterEach(() => server.resume());

  /** A connected ledger (closed after the test). */
  async function ledger(nova: FakeNova, extra: Partial<RedisQuotaLedgerOptions> = {}): Promise<RedisQuotaLedger> {
    n += 1;
    // The guard's own endpoint and project (a ledger of another is refused); one key prefix per test.
    const l = new RedisQuotaLedger({ url: server.url, endpoint: nova.endpoint, projectId: nova.projectId, keyPrefix: `hang${n}:`, holder: `h${n}`, ...extra });
    afterThisTest(() => l.close());
    await l.inFlight(0);
    return l;
  }

  it('an abandoned limits call sends no GET /limits after the call settled, and frees its refresh lock', async () => {
    const nova = await fullNova();
    const l = await ledger(nova, { commandTimeoutMs: 3000 });
    const guard = guardFor(nova, { ledger: l, ledgerTimeoutMs: 300, maxWaitMs: 0 });
    server.pause();
    const started = Date.now();
    const e = await guard.createServer(body('late')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(Date.now() - started).toBeLessThan(2500);
    const settled = limitsReads(nova);
    server.resume();
    // The hung LimitsBegin answers now ("lock": read for the others); the guard refuses the read.
    await sleep(1500);
    expect(limitsReads(nova)).toBe(settled);
    // The refresh lock the abandoned call took was given back at once (not left for limitsLockMs).
    const r = new Redis(server.url);
    try {
      expect(await r.exists(ledgerKeys(`hang${n}:`, nova.endpoint, nova.projectId).limitsLock)).toBe(0);
    } finally {
      r.disconnect();
    }
    const before = Date.now();
    await guard.headroom();
    expect(Date.now() - before).toBeLessThan(3000);
    expect(limitsReads(nova)).toBe(settled + 1);
  });

  it('maxWaitMs bounds the wait while Redis hangs: QuotaWaitTimeoutError near maxWaitMs, not at ledgerTimeoutMs', async () => {
    const nova = await fullNova();
    const l = await ledger(nova, { commandTimeoutMs: 6000 });
    const guard = guardFor(nova, { ledger: l, ledgerTimeoutMs: 6000, maxWaitMs: 500 });
    server.pause();
    const started = Date.now();
    const e = await guard.createServer(body('bounded')).catch((x: unknown) => x);
    const took = Date.now() - started;
    expect(e).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(3000);
  });

  it("the caller's abort ends the call at once while Redis hangs", async () => {
    const nova = await fullNova();
    const l = await ledger(nova, { commandTimeoutMs: 6000 });
    const guard = guardFor(nova, { ledger: l, ledgerTimeoutMs: 6000, maxWaitMs: 60_000 });
    server.pause();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const e = await guard.createServer(body('aborted'), { signal: controller.signal }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AbortError);
    expect(Date.now() - started).toBeLessThan(3000);
    server.resume();
    await sleep(500);
    expect(limitsReads(nova)).toBe(0);
  });

  it('an abort during the backoff sleep does not wait for leave on a hung Redis', async () => {
    const nova = await fullNova();
    const l = await ledger(nova, { commandTimeoutMs: 6000 });
    let waited: () => void = () => undefined;
    const waiting = new Promise<void>((r) => (waited = r));
    const guard = guardFor(nova, { ledger: l, ledgerTimeoutMs: 6000, maxWaitMs: 60_000, minDelayMs: 5000, baseDelayMs: 5000, maxDelayMs: 10_000, onWait: () => waited() });
    const controller = new AbortController();
    const call = guard.createServer(body('sleeping'), { signal: controller.signal }).catch((x: unknown) => x);
    await waiting;
    await sleep(300); // the place is taken (join answered); the call sleeps its backoff
    server.pause();
    const aborted = Date.now();
    controller.abort();
    const e = await call;
    expect(e).toBeInstanceOf(AbortError);
    expect(Date.now() - aborted).toBeLessThan(2000);
  });

  it('11+ calls waiting for the connection share one ready listener (no MaxListenersExceededWarning)', async () => {
    const client = new Redis(server.url, { lazyConnect: true });
    client.on('error', () => undefined);
    afterThisTest(() => client.disconnect());
    const l = new RedisQuotaLedger({ redis: client, endpoint: ENDPOINT, projectId: 'ready', holder: 'r' });
    afterThisTest(() => l.close());
    const before = client.listenerCount('ready');
    const calls = Array.from({ length: 15 }, () => l.inFlight(0));
    expect(client.listenerCount('ready') - before).toBeLessThanOrEqual(1);
    void client.connect().catch(() => undefined);
    const results = await Promise.all(calls);
    expect(results).toHaveLength(15);
    expect(results[0]).toEqual({ cores: 0, ramMiB: 0, instances: 0 });
  });

  it("a wrong password: the error says Redis's WRONGPASS, never the password", async () => {
    const l = new RedisQuotaLedger({ url: `redis://nobody:s3cr3t-pw@127.0.0.1:${server.port}`, endpoint: ENDPOINT, projectId: 'pw', commandTimeoutMs: 800 });
    afterThisTest(() => l.close());
    const error = await l.join({ cores: 1, ramMiB: 0, instances: 1 }).catch((x: unknown) => x);
    expect(error).toBeInstanceOf(RedisLedgerError);
    expect((error as Error).message).toMatch(/WRONGPASS|NOAUTH/);
    expect(inspect(error, { depth: 5 })).not.toContain('s3cr3t-pw');
  });

  it('refuses bad options before connecting', () => {
    const base = { url: server.url, endpoint: ENDPOINT, projectId: 'v' };
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ clock: 5 }, /clock must be a Clock/],
      [{ clock: {} }, /clock must be a Clock/],
      [{ url: undefined, redis: server.url }, /redis must be an ioredis client .*a string: pass a URL as url/],
      [{ placeTtlMs: 1 }, /placeTtlMs must be at least 1000 ms/],
      [{ placeTtlMs: 0.5 }, /placeTtlMs must be a whole number of milliseconds/],
      [{ placeTtlMs: 999 }, /placeTtlMs must be at least 1000 ms/],
      [{ commandTimeoutMs: 10.5 }, /commandTimeoutMs must be a whole number/],
      [{ keyPrefix: 'ci{a}:' }, /keyPrefix must not contain \{ or \}/],
      [{ keyPrefix: 'ci}' }, /keyPrefix must not contain/],
      [{ holder: 5 }, /holder must be a non-empty string without commas/],
      [{ holder: 'a,b' }, /holder must be a non-empty string without commas/],
    ];
    for (const [extra, message] of bad) {
      const options = { ...base, ...extra } as unknown as RedisQuotaLedgerOptions;
      expect(() => new RedisQuotaLedger(options), JSON.stringify(Object.keys(extra))).toThrow(ValidationError);
      expect(() => new RedisQuotaLedger(options)).toThrow(message);
    }
    const ok = new RedisQuotaLedger({ ...base, clock: systemClock, placeTtlMs: 1000, keyPrefix: 'ci:' });
    return ok.close();
  });

  it('close() closes the connections even when something on the way throws', async () => {
    let broken = false;
    const clock = {
      ...systemClock,
      clearTimeout: (h: Parameters<typeof systemClock.clearTimeout>[0]) => {
        if (broken) throw new Error('clock broke');
        systemClock.clearTimeout(h);
      },
    };
    const l = new RedisQuotaLedger({ url: server.url, endpoint: ENDPOINT, projectId: 'close', clock });
    await l.inFlight(0);
    broken = true;
    await expect(l.close()).rejects.toThrow('clock broke');
    broken = false;
    await expect(l.inFlight(0)).rejects.toThrow(/closed/);
  });
});
