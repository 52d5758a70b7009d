/**
 * QuotaGuard and the field cases of docs/field-cases.md ("Rate limits and the other 413s", "Quota
 * messages come in several shapes", "A 403 that is not a quota", "Unlimited, zero, and usage above
 * the limit", "Stale or wrong usage in /limits", "Several workers, one quota"), scaled to
 * milliseconds (the guard's delays are options).
 *
 * Tests that assert when requests go out run against a scripted Nova behind the client's axios
 * adapter ({@link ScriptedNova}) and assert the exact schedule; the others run against FakeNova
 * through its in-process adapter. All of them on fake timers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ForbiddenError, NovaApiError, NovaGuardError, QuotaExceededError, RateLimitError, RequestTooLargeError } from '../../src/errors/index.js';
import { QuotaNeverFitsError, QuotaWaitTimeoutError } from '../../src/guard/index.js';
import type { QuotaRetryInfo, QuotaWaitInfo } from '../../src/guard/quotaGuard.js';
import { body, guardFor, limitsAndPosts, limitsBody, liveServers, posts, quota403, startNova } from './fixtures.js';
import { rejection, runUntil, settle, useFakeClock } from '../helpers.js';
import { QuotaGuard } from '../../src/guard/quotaGuard.js';
import { FAST } from './fixtures.js';
import { ScriptedNova, limitsReply, onFakeTimers, quota403Reply } from './scripted.js';

useFakeClock();
afterEach(() => {
  vi.useRealTimers();
});

/** A guard on a scripted Nova, on fake timers. */
function scriptedGuard(nova: ScriptedNova, options: ConstructorParameters<typeof QuotaGuard>[1] = {}): QuotaGuard {
  return new QuotaGuard(nova.client(), { ...FAST, ...options });
}

const MSG_9A = 'Quota exceeded for cores: Requested 2, but already used 514 of 515 cores';
const CORES2 = { cores: 2, ramMiB: 2048, instances: 1 };

describe('Several workers, one quota: deterministic single worker', () => {
  it('GET /limits, POST 403, GET /limits (short), GET /limits, POST 202; delays grow ±20 %', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('GET /limits', limitsReply({ maxTotalCores: 515, totalCoresUsed: 512 }), limitsReply({ maxTotalCores: 515, totalCoresUsed: 514 }), limitsReply({ maxTotalCores: 515, totalCoresUsed: 512 }));
    nova.reply('POST /servers', quota403Reply(MSG_9A));
    const waits: QuotaWaitInfo[] = [];
    const retries: QuotaRetryInfo[] = [];
    const guard = scriptedGuard(nova, {
      baseDelayMs: 100,
      minDelayMs: 10,
      maxDelayMs: 1000,
      jitter: 0.2,
      waitForActive: false,
      onWait: (i) => waits.push(i),
      onRetry: (i) => {
        retries.push(i);
      },
    });
    const server = await onFakeTimers(guard.createServer(body('w14'), { needs: CORES2 }));

    expect(nova.limitsAndPosts()).toEqual(['GET /limits', 'POST /servers', 'GET /limits', 'GET /limits', 'POST /servers']);
    const seq = nova.schedule().map(([, atMs]) => atMs);
    const gap1 = seq[2]! - seq[1]!;
    const gap2 = seq[3]! - seq[2]!;
    // Never earlier than the chosen delay (±20 % of 100, then of 200 ms), and on fake timers exactly it.
    expect(gap1).toBeGreaterThanOrEqual(80 - 1);
    expect(gap1).toBeLessThanOrEqual(120 + 100);
    expect(gap2).toBeGreaterThanOrEqual(160 - 1);
    expect(gap2).toBeLessThanOrEqual(240 + 100);
    expect(gap2).toBeGreaterThan(gap1);
    // The schedule: read and POST at 0, the re-read after the retry's delay, the next read after the
    // wait's delay (twice the first: one draw per call), and the POST at once after it.
    expect(seq[0]).toBe(0);
    expect(seq[1]).toBe(0);
    expect(gap1).toBe(retries[0]!.delayMs);
    expect(gap2).toBe(waits[0]!.delayMs);
    expect(Math.abs(waits[0]!.delayMs - 2 * retries[0]!.delayMs)).toBeLessThanOrEqual(1);
    expect(seq[4]).toBe(seq[3]);
    expect(retries.map((r) => [r.reason, r.attempt, r.attemptsLeft])).toEqual([['quota', 1, 7]]);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(80);
    expect(retries[0]!.delayMs).toBeLessThanOrEqual(120);
    expect(waits).toHaveLength(1);
    expect(waits[0]!.shortfalls).toEqual([{ resource: 'cores', needed: 2, max: 515, used: 514, inFlight: 0, headroom: 1 }]);
    expect(waits[0]!.delayMs).toBeGreaterThanOrEqual(160);
    expect(waits[0]!.delayMs).toBeLessThanOrEqual(240);
    expect(nova.posts().map((r) => r.status)).toEqual([403, 202]);
    expect(server.id).toBe(nova.posts()[1]!.serverId);
    expect(guard.stats).toMatchObject({ succeeded: 1, failed: 0, waits: 1, attempts: 2, quota403s: 1, quotaRetries: 1 });
  });
});

describe('onRetry veto', () => {
  it('returning false on a quota 403 throws it after exactly 1 POST', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403(MSG_9A) });
    const seen: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { onRetry: (i) => (seen.push(i), false) });
    const err = await rejection(settle(guard.createServer(body('x'), { needs: CORES2 })));
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect(err.message).toBe(MSG_9A);
    expect(seen.map((i) => [i.reason, i.attempt, i.attemptsLeft])).toEqual([['quota', 1, 7]]);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
  });

  it('returning false on a rate limit throws the RateLimitError after exactly 1 POST', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 413, headers: { 'Retry-After': '0.05' }, body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAfter: '0.05' } } });
    const guard = guardFor(nova, { onRetry: (i) => i.reason !== 'rate-limit' });
    const err = await rejection(settle(guard.createServer(body('x'), { needs: CORES2 })));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.name).toBe('RateLimitError');
    expect(posts(nova)).toHaveLength(1);
  });

  it('a hook that throws is ignored (logged): the retry goes ahead', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403(MSG_9A) });
    const guard = guardFor(nova, {
      waitForActive: false,
      onRetry: () => {
        throw new Error('hook bug');
      },
    });
    await settle(guard.createServer(body('x'), { needs: CORES2 }));
    expect(posts(nova).map((p) => p.status)).toEqual([403, 202]);
  });
});

describe('Several workers, one quota: three workers (separate guards) share one project', () => {
  it('no POST while short, jittered retries, one wins per freed slot, all done within maxAttempts', async () => {
    const nova = await startNova({ maxTotalCores: 6, deleteDelayMs: 5 });
    const seedA = nova.addServer({ flavorId: '2', name: 'seed-a' }).id;
    const seedB = nova.addServer({ flavorId: '2', name: 'seed-b' }).id;
    // All three read the same headroom (2 of 6 free) before any POST lands: the race of the case.
    nova.inject({ method: 'GET', path: '/limits', status: 200, body: limitsBody({ maxTotalCores: 6, totalCoresUsed: 4 }), times: 3 });
    const delays: number[][] = [[], [], []];
    const postsPerWorker = [0, 0, 0];
    const guards = [0, 1, 2].map((w) =>
      guardFor(nova, {
        baseDelayMs: 40,
        minDelayMs: 5,
        maxDelayMs: 120,
        maxAttempts: 8,
        onRetry: (i) => {
          delays[w]!.push(i.delayMs);
        },
        onWait: (i) => delays[w]!.push(i.delayMs),
      }),
    );
    const runs = guards.map((g, w) =>
      g.createServer(body(`w${w}`), { needs: CORES2 }).then((s) => {
        postsPerWorker[w] = g.stats.attempts;
        return s;
      }),
    );
    const settled = Promise.allSettled(runs); // nothing left unhandled if an assertion fails
    // Let the three first POSTs be answered, hold 150 ms with nothing freed (the losers must only
    // re-read /limits, never POST), then free one slot, later the other.
    await runUntil(() => posts(nova).filter((p) => p.status !== 0).length === 3, 1000);
    await vi.advanceTimersByTimeAsync(150);
    const freedAtMs = Date.now();
    expect(posts(nova).filter((p) => p.timeMs < freedAtMs)).toHaveLength(3);
    expect(nova.requestsTo('GET', '/limits').length).toBeGreaterThan(3);
    expect(posts(nova).map((p) => p.status).sort()).toEqual([202, 403, 403]);
    nova.destroyServer(seedA);
    await vi.advanceTimersByTimeAsync(400);
    nova.destroyServer(seedB);
    const results = await settle(settled);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const servers = await Promise.all(runs);

    expect(new Set(servers.map((s) => s.id)).size).toBe(3);
    expect(postsPerWorker.every((n) => n >= 1 && n <= 8)).toBe(true);
    // The two losers backed off with jitter: their delay sequences are not identical.
    const losers = [0, 1, 2].filter((w) => postsPerWorker[w]! > 1 || delays[w]!.length > 0);
    expect(losers.length).toBe(2);
    expect(JSON.stringify(delays[losers[0]!])).not.toBe(JSON.stringify(delays[losers[1]!]));
    expect(liveServers(nova).sort()).toEqual(servers.map((s) => s.id).sort());
    expect(nova.usage().cores).toBe(6);
  });

  it('attempts exhausted: QuotaExceededError permanent:false after exactly maxAttempts POSTs', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', status: 200, body: limitsBody({ maxTotalCores: 515, totalCoresUsed: 0 }), times: Infinity });
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403(MSG_9A), times: Infinity });
    const guard = guardFor(nova, { maxAttempts: 3 });
    const err = await rejection(settle(guard.createServer(body('x'), { needs: CORES2 })));
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect((err as QuotaExceededError).permanent).toBe(false);
    expect((err as QuotaExceededError).resources).toEqual([{ name: 'cores', requested: 2, used: 514, allowed: 515 }]);
    expect(posts(nova)).toHaveLength(3);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers', 'GET /limits', 'POST /servers', 'GET /limits', 'POST /servers']);
  });
});

describe('Stale or wrong usage in /limits', () => {
  it('re-reads /limits before every attempt (8, 8, 4 of 10 → 3 reads, 1 POST)', async () => {
    const nova = await startNova();
    for (const used of [8, 8, 4]) nova.inject({ method: 'GET', path: '/limits', status: 200, body: limitsBody({ maxTotalCores: 10, totalCoresUsed: used }) });
    const guard = guardFor(nova, { waitForActive: false });
    await settle(guard.createServer(body('x', '3')));
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'GET /limits', 'GET /limits', 'POST /servers']);
    expect(nova.requestsTo('GET', '/flavors/3')).toHaveLength(1);
  });

  it('stuck over-count (phantom usage, two 2-core servers) → QuotaWaitTimeoutError with the numbers, 0 POSTs', async () => {
    vi.useFakeTimers();
    // Two 2-core servers, but /limits reports 8 of 10 cores used (phantom usage of 4).
    const nova = new ScriptedNova();
    nova.absolute = { maxTotalCores: 10, totalCoresUsed: 8, maxTotalInstances: 10, totalInstancesUsed: 2, maxTotalRAMSize: 51200, totalRAMUsed: 4096 };
    const guard = scriptedGuard(nova, { maxWaitMs: 300, baseDelayMs: 20, maxDelayMs: 60 });
    const started = performance.now();
    const err = await rejection(onFakeTimers(guard.createServer(body('x', '3'))));
    const elapsed = performance.now() - started;
    expect(err).toBeInstanceOf(QuotaWaitTimeoutError);
    // The guard's verdict, not an HTTP error: no status, not a QuotaExceededError.
    expect(err).toBeInstanceOf(NovaGuardError);
    expect(err).not.toBeInstanceOf(NovaApiError);
    expect(err).not.toBeInstanceOf(QuotaExceededError);
    expect(err).not.toHaveProperty('status');
    const e = err as QuotaWaitTimeoutError;
    expect(e.permanent).toBe(false);
    expect(e.message).toContain('maxTotalCores=10 totalCoresUsed=8 requested=4');
    expect(e.resources).toEqual([{ name: 'cores', requested: 4, used: 8, allowed: 10 }]);
    expect(e.needs).toEqual({ cores: 4, ramMiB: 4096, instances: 1 });
    expect(e.headroom.cores).toEqual({ max: 10, used: 8, inFlight: 0, headroom: 2 });
    expect(e.maxWaitMs).toBe(300);
    expect(e.waitedMs).toBe(300);
    expect(e.lastQuotaMessage).toBeUndefined();
    const reads = nova.sent.filter((r) => r.path === '/limits');
    expect(e.limitsReads).toBe(reads.length);
    expect(e.limitsReads).toBeGreaterThanOrEqual(3);
    expect(nova.posts()).toHaveLength(0);
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(300 + 200);
    // The schedule: delays double from the call's first (20 ms ±20 %) up to maxDelayMs, the last
    // wait is cut at maxWaitMs, and the read at 300 ms ends the wait.
    const times = reads.map((r) => r.atMs);
    expect(times[0]).toBe(0);
    expect(times.at(-1)).toBe(300);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(16);
    expect(gaps[0]).toBeLessThanOrEqual(24);
    // Each wait but the last doubles the one before (±1 ms of rounding), capped at maxDelayMs 60.
    for (let i = 1; i < gaps.length - 1; i++) expect(Math.abs(gaps[i]! - Math.min(60, 2 * gaps[i - 1]!))).toBeLessThanOrEqual(1);
    expect(gaps.at(-2)).toBe(60);
    expect(gaps.at(-1)).toBeLessThanOrEqual(60);
  });

  it("onStaleLimits 'attempt' with maxWaitMs 0 → 1 /limits read, 1 POST that Nova accepts, warning logged", async () => {
    // /limits keeps counting two destroyed servers (quota lag); Nova's own check does not.
    const nova = await startNova({ maxTotalCores: 10, quotaLagMs: 60000 });
    const ids = [0, 1, 2, 3].map(() => nova.addServer({ flavorId: '2' }).id);
    nova.destroyServer(ids[0]!);
    nova.destroyServer(ids[1]!);
    expect(nova.reportedUsage().cores).toBe(8);
    expect(nova.usage().cores).toBe(4);
    const lines: string[] = [];
    const { pino } = await import('pino');
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const guard = guardFor(nova, { maxWaitMs: 0, onStaleLimits: 'attempt', logger });
    const server = await settle(guard.createServer(body('x', '3')));
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
    expect(server.status).toBe('ACTIVE');
    expect(lines.some((l) => /attempting the create anyway/.test(l) && /maxTotalCores=10 totalCoresUsed=8 requested=4/.test(l))).toBe(true);
  });

  it("drift escape after waiting: onStaleLimits 'attempt' waits maxWaitMs, then POSTs once", async () => {
    vi.useFakeTimers();
    // /limits keeps counting two destroyed servers (quota lag); Nova's own check does not.
    const nova = new ScriptedNova();
    nova.absolute = { maxTotalCores: 10, totalCoresUsed: 8 };
    const waits: QuotaWaitInfo[] = [];
    const guard = scriptedGuard(nova, { maxWaitMs: 150, baseDelayMs: 20, onStaleLimits: 'attempt', onWait: (w) => waits.push(w) });
    const started = performance.now();
    await onFakeTimers(guard.createServer(body('x', '3')));
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(nova.posts().map((p) => p.status)).toEqual([202]);
    expect(nova.sent.filter((r) => r.path === '/limits')).toHaveLength(waits.length + 1);
    // The last read is at maxWaitMs and the POST follows it at once.
    expect(nova.schedule().slice(-2)).toEqual([
      ['GET /limits', 150],
      ['POST /servers', 150],
    ]);
  });
});

describe('-1, 0 and used > max', () => {
  it('11a: unlimited → POST at once, no wait', async () => {
    const nova = await startNova();
    nova.inject({
      method: 'GET',
      path: '/limits',
      status: 200,
      body: limitsBody({ maxTotalCores: -1, totalCoresUsed: 514, maxTotalInstances: -1, totalInstancesUsed: 257, maxTotalRAMSize: -1, totalRAMUsed: 1052672 }),
    });
    const waits: QuotaWaitInfo[] = [];
    const guard = guardFor(nova, { onWait: (w) => waits.push(w), waitForActive: false });
    await settle(guard.createServer(body('x')));
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
    expect(waits).toEqual([]);
  });

  it('11a: headroom() reports Infinity for -1', async () => {
    const nova = await startNova({ maxTotalCores: -1, maxTotalInstances: -1, maxTotalRAMSize: -1 });
    nova.addServer({ flavorId: '3' });
    const h = await guardFor(nova).headroom();
    expect(h.cores).toEqual({ max: Infinity, used: 4, inFlight: 0, headroom: Infinity });
    expect(h.ram).toEqual({ max: Infinity, used: 4096, inFlight: 0, headroom: Infinity });
    expect(h.instances).toEqual({ max: Infinity, used: 1, inFlight: 0, headroom: Infinity });
    expect(h.source).toBe('limits');
    expect(typeof h.requestId).toBe('string');
    expect(Math.abs(h.readAtMs - Date.now())).toBeLessThan(1000);
  });

  it('maxTotalCores 0 → QuotaNeverFitsError (the guard\'s verdict, no status) at once, 0 POSTs', async () => {
    const nova = await startNova({ maxTotalCores: 0 });
    const guard = guardFor(nova);
    const err = await rejection(settle(guard.createServer(body('x'))));
    expect(err).toBeInstanceOf(QuotaNeverFitsError);
    expect(err).toBeInstanceOf(NovaGuardError);
    expect(err).not.toBeInstanceOf(NovaApiError);
    expect(err).not.toHaveProperty('status');
    expect((err as QuotaNeverFitsError).permanent).toBe(true);
    expect((err as QuotaNeverFitsError).resources).toEqual([{ name: 'cores', requested: 2, used: 0, allowed: 0 }]);
    expect((err as QuotaNeverFitsError).shortfalls).toEqual([expect.objectContaining({ resource: 'cores', needed: 2, max: 0, used: 0 })]);
    expect(err.message).toContain('maxTotalCores=0 totalCoresUsed=0 requested=2');
    expect(limitsAndPosts(nova)).toEqual(['GET /limits']);
  });

  it('used > max → headroom 0, waits (positive delay ≥ minDelayMs) and re-reads', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('GET /limits', limitsReply({ maxTotalCores: 400, totalCoresUsed: 514 }), limitsReply({ maxTotalCores: 400, totalCoresUsed: 398 }));
    const waits: QuotaWaitInfo[] = [];
    const guard = scriptedGuard(nova, { minDelayMs: 60, baseDelayMs: 1, onWait: (w) => waits.push(w), waitForActive: false });
    await onFakeTimers(guard.createServer(body('x'), { needs: CORES2 }));
    expect(waits.map((w) => [w.shortfalls[0]!.headroom, w.delayMs])).toEqual([[0, 60]]);
    const reads = nova.sent.filter((r) => r.path === '/limits');
    expect(reads).toHaveLength(2);
    expect(reads[1]!.atMs - reads[0]!.atMs).toBeGreaterThanOrEqual(59);
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['GET /limits', 60],
      ['POST /servers', 60],
    ]);
    expect(nova.posts()).toHaveLength(1);
  });
});

describe('quota shapes and permanence', () => {
  it('pre-check: 32 cores needed, maxTotalCores 20 → permanent, 0 POSTs', async () => {
    const nova = await startNova({ maxTotalCores: 20 });
    const err = await rejection(settle(guardFor(nova).createServer(body('big'), { needs: { cores: 32, ramMiB: 98304, instances: 1 } })));
    expect(err).toBeInstanceOf(QuotaNeverFitsError);
    expect((err as QuotaNeverFitsError).permanent).toBe(true);
    expect((err as QuotaNeverFitsError).needs).toEqual({ cores: 32, ramMiB: 98304, instances: 1 });
    expect((err as QuotaNeverFitsError).resources).toEqual([
      { name: 'cores', requested: 32, used: 0, allowed: 20 },
      { name: 'ram', requested: 98304, used: 0, allowed: 51200 },
    ]);
    expect(posts(nova)).toHaveLength(0);
  });

  it('without pre-check numbers: Nova says permanent → exactly 1 POST, 0 retries', async () => {
    const nova = await startNova();
    nova.inject({ method: 'GET', path: '/limits', status: 200, body: limitsBody({}) });
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 403,
      body: quota403('Quota exceeded for cores, ram: Requested 32, 98304, but already used 0, 0 of 20, 51200 cores, ram'),
    });
    const retries: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { onRetry: (r) => void retries.push(r) });
    const err = await rejection(settle(guard.createServer(body('big'), { needs: { cores: 32, ramMiB: 98304, instances: 1 } })));
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect((err as QuotaExceededError).permanent).toBe(true);
    expect((err as QuotaExceededError).status).toBe(403);
    expect((err as QuotaExceededError).resources).toEqual([
      { name: 'cores', requested: 32, used: 0, allowed: 20 },
      { name: 'ram', requested: 98304, used: 0, allowed: 51200 },
    ]);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
    expect(retries).toEqual([]);
  });

  it.each([
    ['legacy single', MSG_9A],
    ['instances', 'Quota exceeded for instances: Requested 1, but already used 10 of 10 instances'],
    ['ports', 'Maximum number of ports exceeded'],
    ['bare', 'Quota exceeded: code=InstanceLimitExceeded'],
    ['pre-Liberty', 'Quota exceeded for cores,instances: Requested 2, but already used 9 of 10 cores'],
    ['unified limits', 'Project demo is over a limit for [Resource class:VCPU is over limit of 515 due to current usage 514 and delta 2]'],
    ['server group', 'Quota exceeded, too many servers in group'],
  ])('%s: transient quota 403 → re-read /limits, retry, 202', async (_name, message) => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403(message) });
    const retries: QuotaRetryInfo[] = [];
    const guard = guardFor(nova, { waitForActive: false, onRetry: (r) => void retries.push(r) });
    await settle(guard.createServer(body('x')));
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers', 'GET /limits', 'POST /servers']);
    expect(posts(nova).map((p) => p.status)).toEqual([403, 202]);
    expect(retries.map((r) => r.reason)).toEqual(['quota']);
  });

  it('Retry-After: 0 on a quota 403 → next request ≥ minDelayMs later', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', quota403Reply(MSG_9A, { 'Retry-After': '0' }));
    const guard = scriptedGuard(nova, { minDelayMs: 80, baseDelayMs: 1, waitForActive: false });
    await onFakeTimers(guard.createServer(body('x')));
    const seq = nova.schedule();
    expect(seq.map(([r]) => r)).toEqual(['GET /limits', 'POST /servers', 'GET /limits', 'POST /servers']);
    expect(seq[2]![1] - seq[1]![1]).toBeGreaterThanOrEqual(79);
    expect(seq.map(([, t]) => t)).toEqual([0, 0, 80, 80]);
  });
});

describe('A 403 that is not a quota is thrown at once', () => {
  it('policy denial → ForbiddenError, exactly 1 POST, no /limits loop', async () => {
    const nova = await startNova();
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 403,
      body: { forbidden: { code: 403, message: "Policy doesn't allow os_compute_api:servers:create to be performed." } },
    });
    const err = await rejection(settle(guardFor(nova).createServer(body('x'))));
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err).not.toBeInstanceOf(QuotaExceededError);
    expect(err.message).toBe("Policy doesn't allow os_compute_api:servers:create to be performed.");
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
  });

  it('opaque proxy HTML 403 → ForbiddenError, exactly 1 POST', async () => {
    const nova = await startNova();
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 403,
      headers: { 'Content-Type': 'text/html' },
      body: '<html><body><h1>403 Forbidden</h1>Request forbidden by administrative rules.</body></html>',
    });
    const err = await rejection(settle(guardFor(nova).createServer(body('x'))));
    expect(err).toBeInstanceOf(ForbiddenError);
    expect((err as ForbiddenError).status).toBe(403);
    expect(limitsAndPosts(nova)).toEqual(['GET /limits', 'POST /servers']);
    expect(liveServers(nova)).toEqual([]);
  });

  it('control: a quota 403 takes the retry path', async () => {
    const nova = await startNova();
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403(MSG_9A) });
    const s = await settle(guardFor(nova).createServer(body('x')));
    expect(posts(nova).map((p) => p.status)).toEqual([403, 202]);
    expect(liveServers(nova)).toEqual([s.id]);
  });
});

describe('413 rate limit, legacy 413 quota, 413 too large', () => {
  const RATE_BODY = (retryAfter?: string) => ({
    overLimit: {
      code: 413,
      message: 'This request was rate-limited.',
      ...(retryAfter === undefined ? {} : { retryAfter }),
      details: 'Only 10 POST request(s) can be made to * every minute.',
    },
  });

  it('Retry-After header (+ body retryAfter): second POST after it, no quota attempt used', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    // Retry-After in seconds; 0.1 s keeps the test fast (the parser takes fractional seconds).
    nova.reply('POST /servers', { status: 413, headers: { 'Retry-After': '0.1' }, body: RATE_BODY('0.1') });
    const retries: QuotaRetryInfo[] = [];
    const guard = scriptedGuard(nova, { maxAttempts: 1, waitForActive: false, onRetry: (r) => void retries.push(r) });
    await onFakeTimers(guard.createServer(body('x')));
    const p = nova.posts();
    expect(p.map((r) => r.status)).toEqual([413, 202]);
    expect(p[1]!.atMs - p[0]!.atMs).toBeGreaterThanOrEqual(100);
    expect(nova.schedule()).toEqual([
      ['GET /limits', 0],
      ['POST /servers', 0],
      ['POST /servers', 100],
    ]);
    expect(retries.map((r) => [r.reason, r.delayMs])).toEqual([['rate-limit', 100]]);
    expect(guard.stats).toMatchObject({ attempts: 1, rateLimitRetries: 1, quota403s: 0, quotaRetries: 0 });
    expect(nova.sent.filter((r) => r.path === '/limits')).toHaveLength(1);
  });

  it('body retryAfter only, and retryAt only', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 413, body: RATE_BODY('0.1') });
    const g1 = scriptedGuard(nova, { maxAttempts: 1, waitForActive: false });
    await onFakeTimers(g1.createServer(body('a')));
    let p = nova.posts();
    expect(p.map((r) => r.status)).toEqual([413, 202]);
    expect(p[1]!.atMs - p[0]!.atMs).toBeGreaterThanOrEqual(100);
    expect(p[1]!.atMs - p[0]!.atMs).toBe(100);

    nova.sent.length = 0;
    const at = new Date(Date.now() + 150).toISOString();
    nova.reply('POST /servers', { status: 413, body: { overLimit: { code: 413, message: 'This request was rate-limited.', retryAt: at } } });
    await onFakeTimers(g1.createServer(body('b')));
    p = nova.posts();
    expect(p.map((r) => r.status)).toEqual([413, 202]);
    expect(p[1]!.wallMs).toBeGreaterThanOrEqual(Date.parse(at) - 5);
  });

  it("retryAfter '-1' → treated as 0, then at least minDelayMs", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', { status: 413, headers: { 'Retry-After': '-1' }, body: RATE_BODY('-1') });
    const guard = scriptedGuard(nova, { minDelayMs: 60, waitForActive: false });
    await onFakeTimers(guard.createServer(body('x')));
    const p = nova.posts();
    expect(p.map((r) => r.status)).toEqual([413, 202]);
    expect(p[1]!.atMs - p[0]!.atMs).toBeGreaterThanOrEqual(59);
    expect(p[1]!.atMs - p[0]!.atMs).toBe(60);
  });

  it("legacy 413 overLimit quota with retryAfter '0' → handled as quota: re-read /limits after ≥ minDelayMs", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.reply('POST /servers', {
      status: 413,
      headers: { 'Retry-After': '0' },
      body: { overLimit: { code: 413, message: 'Quota exceeded for cores: Requested 2, but already used 10 of 10 cores', retryAfter: '0' } },
    });
    const retries: QuotaRetryInfo[] = [];
    const guard = scriptedGuard(nova, { minDelayMs: 60, baseDelayMs: 1, waitForActive: false, onRetry: (r) => void retries.push(r) });
    await onFakeTimers(guard.createServer(body('x')));
    const seq = nova.sent.filter((r) => r.path === '/limits' || (r.method === 'POST' && r.path === '/servers'));
    expect(seq.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual(['GET /limits 200', 'POST /servers 413', 'GET /limits 200', 'POST /servers 202']);
    expect(seq[2]!.atMs - seq[1]!.atMs).toBeGreaterThanOrEqual(59);
    expect(seq.map((r) => r.atMs)).toEqual([0, 0, 60, 60]);
    expect(retries.map((r) => [r.reason, (r.error as QuotaExceededError).status])).toEqual([['quota', 413]]);
  });

  it('413 that is neither → RequestTooLargeError, exactly 1 POST', async () => {
    const nova = await startNova();
    nova.inject({
      method: 'POST',
      path: '/servers',
      status: 413,
      headers: { 'Content-Type': 'text/plain' },
      body: '413 Request Entity Too Large\n\nRequest is too large.',
    });
    const err = await rejection(settle(guardFor(nova).createServer(body('x'))));
    expect(err).toBeInstanceOf(RequestTooLargeError);
    expect(posts(nova)).toHaveLength(1);
  });
});
