// The guard under a ledger that is down, slow or far away (issue 19): a ledger found down is skipped
// at once and probed on a doubling schedule, with one warning per outage and one per recovery; the
// time budget follows the ledger's measured round trips; `acquire` makes one ledger call per
// admission; a confirmed delete right before close() is no ledger failure. Fake timers, FakeNova.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AxiosAdapter } from 'axios';
import { pino } from 'pino';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { T0, rejection, settle, useFakeClock } from '../helpers.js';
import { QuotaWaitTimeoutError } from '../../src/guard/errors.js';
import type { QuotaWaitInfo } from '../../src/guard/options.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';
import { faulty } from './support/testLedger.js';
import { warnLog } from './support/testLedger.js';

useFakeClock();
afterEach(() => {
  vi.restoreAllMocks();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const at = (ms: number): Promise<void> => settle(sleep(Math.max(0, T0 + ms - Date.now())));

describe('a ledger that is down', () => {
  it('is skipped at once after the first failure (0 ms of ledger time), probed at 1, 2, 4 s and then every 5 s, with one outage and one recovery warning for 20 calls', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no jitter: the schedule exactly
    const nova = await startNova({ maxTotalCores: 1000, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const backAtMs = 10_000;
    let refused = false;
    // The first call is refused (ECONNREFUSED); later calls hang like commands queued for a reconnect.
    const ledger = faulty(
      inner,
      (m) => {
        if (Date.now() - T0 >= backAtMs) return 'ok';
        if (m === 'probe' || !refused) return (refused = true), 'down';
        return 'hang';
      }
    );
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger });
    for (let i = 0; i < 20; i++) {
      await at(i * 1000);
      await settle(guard.createServer(body(`c${i}`)));
    }
    // a store never reached (everReached false) may be restarting: the first call waits
    // NEVER_REACHED_WAIT_MS (3 s) for it (calls 1 and 2 start after it, at 3 s); from then on every
    // POST at its call's start: no ledger wait, not even ledgerTimeoutMs
    const times = posts(nova).map((p) => p.timeMs - T0);
    expect(times.slice(0, 12)).toEqual(Array.from({ length: 12 }, (_, i) => Math.max(3000, i * 1000)));
    // the call at 12 s starts the probe that finds the ledger back: it admits on the ledger after one backoff step
    expect(times[12]).toBeGreaterThanOrEqual(12_000);
    expect(times[12]).toBeLessThan(12_100);
    expect(times.slice(13)).toEqual(Array.from({ length: 7 }, (_, i) => (13 + i) * 1000));
    expect(ledger.calls.filter(([m]) => m === 'probe').map(([, t]) => t)).toEqual([1000, 3000, 7000, 12000]);
    expect(warnings().filter((m) => /quota ledger \(test\) is down/.test(m))).toHaveLength(1);
    expect(warnings().filter((m) => /quota ledger \(test\) is back after 12000 ms/.test(m))).toHaveLength(1);
    expect(guard.stats.ledgerOutages).toBe(1);
    // calls 0-12 went on with the fallback (call 12 only until the probe it started found the
    // ledger back); 12-19 admitted on the ledger again
    expect(guard.stats.ledgerFallbacks).toBe(13);
    expect(ledger.calls.filter(([m, t]) => m === 'acquire' && t > 12000)).toHaveLength(8);
    expect(inner.activeClaims).toBe(0);
  });

  it('3 time-outs in a row mark it down: the calls after them skip it at once', async () => {
    const nova = await startNova({ maxTotalCores: 1000, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'hang');
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger, ledgerTimeoutMs: 2000 });
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = Date.now();
      await settle(guard.createServer(body(`t${i}`)));
      waits.push(posts(nova).at(-1)!.timeMs - start);
    }
    // a store never reached: the first call tries it for NEVER_REACHED_WAIT_MS (3 s: time-outs at 2 and
    // 4 s), then goes on alone at 5 s; the next call's time-out is the third in a row: down, and the
    // calls after it skip the ledger at once
    expect(waits).toEqual([5000, 2000, 0, 0, 0]);
    // one warning for the whole outage: the first failure's (the outage itself is logged at info level)
    // naming its cause, not only "failed"
    // and saying what the calls do from then: they wait 3000 ms more (the first POST at 5 s), then admit alone
    expect(warnings()).toEqual([
      "quota ledger (test) failed (ledger acquire took longer than 2000 ms): creates wait up to 3000 ms more for it (it may be starting), then admit with the in-process ledger (this process alone; Nova's quota check decides the rest) until it is back",
    ]);
    expect(guard.stats.ledgerOutages).toBe(1);
    // call 0: two time-outs and a try cut by its maxWaitMs (5 s); call 1: the third time-out; calls 2-4: skipped
    expect(guard.stats.ledgerFallbacks).toBe(7);
  });
});

describe('the time budget of a ledger call', () => {
  it('follows callBudgetMs: a ledger that reports 5000 ms is not abandoned at ledgerTimeoutMs 2000', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, (m) => (m === 'acquire' ? 3000 : 'ok'), { budgetMs: 5000 });
    const guard = guardFor(nova, { ledger, ledgerTimeoutMs: 2000, maxWaitMs: 60_000 });
    await settle(guard.createServer(body('far-away')));
    expect(posts(nova).map((p) => p.timeMs - T0)).toEqual([3000]);
    expect(guard.stats.ledgerFallbacks).toBe(0);
    expect(ledger.calls.filter(([m]) => m === 'bind')).toHaveLength(1);
  });
});

describe('acquire', () => {
  // The renewal right before the POST is sent every time (issue 30, item 6): it is the fencing
  // point that marks the claim posting, so a store that lost its state restores it and nothing
  // only admitted. It used to be skipped when no time had passed since the admission (a fake clock).
  it('is every admission: one ledger call per admission, then the renewal right before the POST', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'ok');
    const guard = guardFor(nova, { ledger });
    await settle(guard.createServer(body('one-trip')));
    expect(ledger.calls.map(([m]) => m)).toEqual(['acquire', 'renew', 'bind', 'release']);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(1);
  });

  it('a call that waits queues through acquire (joinIfShort) and leaves once', async () => {
    const nova = await startNova({ maxTotalCores: 2, deleteDelayMs: 20 });
    const holder = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'ok');
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000 });
    const run = guard.createServer(body('waiter'));
    await settle(sleep(200));
    await settle(guard.client.deleteServer(holder, { wait: true, intervalMs: 5 }));
    await settle(run);
    const methods = ledger.calls.map(([m]) => m);
    expect(methods.filter((m) => m !== 'acquire' && m !== 'leave' && m !== 'bind' && m !== 'release' && m !== 'publishFreed' && m !== 'renew')).toEqual([]);
    expect(methods.filter((m) => m === 'leave')).toHaveLength(1);
    expect(posts(nova).map((p) => p.status)).toEqual([202]);
  });
});

describe('close() right after a confirmed delete', () => {
  it('waits for the background publishFreed: no "quota ledger failed" warning, no fallback counted', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner);
    let closed = false;
    ledger.publishFreed = async (id) => {
      await sleep(300);
      if (closed) throw new Error('Connection is closed.');
      return inner.publishFreed(id);
    };
    const { logger, warnings } = warnLog();
    const guard = guardFor(nova, { ledger, logger });
    const s = await settle(guard.createServer(body('short-lived')));
    await settle(guard.client.deleteServer(s.id, { wait: true, intervalMs: 5 }));
    await settle(guard.close());
    closed = true; // the host closes its ledger right after the guard
    await settle(sleep(1000));
    expect(warnings()).toEqual([]);
    expect(guard.stats.ledgerFallbacks).toBe(0);
  });
});

describe('degraded mode: an outage costs speed, never quota', () => {
  it('3 hosts (3 ledger wrappers over one store) through an outage mid-run never hold more than the quota: they create nothing new while the ledger is out of reach, and resume when it answers', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // no jitter: probes at 1, 2, 4 s after the outage began
    const nova = await startNova({ maxTotalCores: 12, maxTotalInstances: 100, deleteDelayMs: 20 });
    let peak = 0;
    const sample = (): void => {
      peak = Math.max(peak, nova.usage().cores);
    };
    const adapter: AxiosAdapter = (config) => nova.adapter(config).finally(sample);
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const outage = { fromMs: 2000, toMs: 9000 };
    const down = (): boolean => Date.now() - T0 >= outage.fromMs && Date.now() - T0 < outage.toMs;
    const hosts = [0, 1, 2].map(() => {
      // one ledger object per host: one wrapper (health, fallback) each, as in separate processes
      const ledger = faulty(inner, () => (down() ? 'down' : 'ok'), { holders: 3 });
      return guardFor(nova, { ledger, maxWaitMs: 60_000, minDelayMs: 50, baseDelayMs: 50, maxDelayMs: 50, jitter: 0 }, clientFor(nova, adapter));
    });
    const createdAt: Array<{ host: number; ms: number }> = [];
    const worker = async (host: number): Promise<void> => {
      const g = hosts[host]!;
      while (Date.now() - T0 < 14_000) {
        const s = await g.createServer(body(`h${host}`));
        createdAt.push({ host, ms: Date.now() - T0 });
        await sleep(300);
        await g.client.deleteServer(s.id, { wait: true, intervalMs: 5, timeoutMs: 5000, redeleteAfterMs: 0 });
      }
    };
    const results = await settle(Promise.allSettled([0, 0, 0, 1, 1, 1, 2, 2, 2].map((h) => worker(h))));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    // with a share of the last good reading per host (the previous degraded mode) the sum could pass the quota
    expect(hosts.map((g) => g.stats.quota403s)).toEqual([0, 0, 0]);
    expect(posts(nova).filter((p) => p.status !== 202)).toEqual([]);
    expect(peak).toBeLessThanOrEqual(12);
    expect(hosts.map((g) => g.stats.ledgerOutages)).toEqual([1, 1, 1]);
    // no POST once the outage began until a probe found the ledger back
    expect(posts(nova).filter((p) => p.timeMs - T0 > outage.fromMs && p.timeMs - T0 < outage.toMs)).toEqual([]);
    // every host resumed once its probe found the ledger back (probes at 3, 5, 9, 14 s on each host's clock)
    expect([0, 1, 2].map((h) => createdAt.filter((c) => c.host === h && c.ms >= outage.toMs).length >= 3)).toEqual([true, true, true]);
    expect(inner.activeClaims).toBe(0);
  });

  it('a host whose ledger fails while another host still admits on it never pushes the sum over the quota; its waiting creates proceed once the ledger answers', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const nova = await startNova({ maxTotalCores: 8, maxTotalInstances: 100, deleteDelayMs: 20 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const aDown = { fromMs: 100, toMs: 3000 };
    // host A's connection to the store fails in a window; host B's does not
    const ledgerA = faulty(inner, () => (Date.now() - T0 >= aDown.fromMs && Date.now() - T0 < aDown.toMs ? 'down' : 'ok'), { holders: 2 });
    const ledgerB = faulty(inner, () => 'ok', { holders: 2 });
    const opts = { maxWaitMs: 60_000, minDelayMs: 50, baseDelayMs: 50, maxDelayMs: 200, jitter: 0 };
    const a = guardFor(nova, { ...opts, ledger: ledgerA });
    const b = guardFor(nova, { ...opts, ledger: ledgerB });
    // A's good admission on the ledger: 1 core of 8
    await settle(a.createServer(body('a0', '1')));
    await settle(sleep(200));
    // A's creates (its ledger now fails) and B's (on the ledger) at the same moment: 3 + 7 cores
    const aRuns = [1, 2, 3].map((i) => a.createServer(body(`a${i}`, '1')));
    const bRuns = [1, 2, 3, 4, 5, 6, 7].map((i) => b.createServer(body(`b${i}`, '1')));
    const bServers = await settle(Promise.allSettled(bRuns));
    await settle(sleep(1000 - (Date.now() - T0)));
    for (const r of bServers) if (r.status === 'fulfilled') await settle(b.client.deleteServer(r.value.id, { wait: true, intervalMs: 5 }));
    const aServers = await settle(Promise.allSettled(aRuns));
    expect(aServers.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const aIds = new Set(aServers.map((r) => (r.status === 'fulfilled' ? r.value.id : '')));
    // without waiting for the ledger, A spent its share of the reading at 0 ms alongside B: quota 403s
    expect([a.stats.quota403s, b.stats.quota403s]).toEqual([0, 0]);
    expect(posts(nova).filter((p) => p.status !== 202)).toEqual([]);
    // A's three creates POSTed only once its ledger answered again (a probe at 3000 ms)
    const aPosts = posts(nova).filter((p) => p.serverId !== undefined && aIds.has(p.serverId));
    expect(aPosts.map((p) => p.timeMs - T0 >= aDown.toMs)).toEqual([true, true, true]);
    expect(a.stats.ledgerOutages).toBe(1);
    expect(inner.activeClaims).toBe(0);
  });

  it('a create waiting through an outage longer than maxWaitMs settles with QuotaWaitTimeoutError naming the ledger at maxWaitMs: no POST, no claim left', async () => {
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let down = false;
    const ledger = faulty(inner, () => (down ? 'down' : 'ok'));
    const guard = guardFor(nova, { ledger, maxWaitMs: 5000 });
    await settle(guard.createServer(body('good')));
    down = true;
    const start = Date.now();
    const err = await settle(rejection(guard.createServer(body('waits'))));
    expect(err).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(err.message).toMatch(/quota ledger \(test\) is out of reach/);
    expect(Date.now() - start).toBeLessThanOrEqual(5000);
    expect((err as QuotaWaitTimeoutError).waitedMs).toBeGreaterThanOrEqual(4900);
    expect(posts(nova)).toHaveLength(1);
    expect(guard.inFlightClaims).toBe(0);
    expect(inner.activeClaims).toBe(0);
    expect(guard.stats.ledgerOutages).toBe(1);
  });

  it('a process the ledger never answered (down from the start) works on its own as without a ledger after NEVER_REACHED_WAIT_MS, and its claims are re-claimed on the ledger when it answers', async () => {
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100, schedulingDelayMs: 10_000, buildDelayMs: 12_000 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let down = true;
    const ledger = faulty(inner, () => (down ? 'down' : 'ok'));
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000, activeTimeoutMs: 60_000 });
    const alone = guard.createServer(body('alone'));
    await settle(sleep(3100));
    // NEVER_REACHED_WAIT_MS (3 s) of the outage waited for a store that may be restarting, then
    // posted on the in-process ledger: Nova's check decides
    const times = posts(nova).map((p) => p.timeMs - T0);
    expect(times).toHaveLength(1);
    expect(times[0]).toBeGreaterThanOrEqual(3000);
    expect(inner.activeClaims).toBe(0);
    down = false;
    await settle(sleep(4000));
    // the next call probes the ledger (due at most 7 s after the outage began): it is back, and the
    // claim of 'alone' (its server still scheduling: Nova does not count it yet) is re-claimed on it
    const back = guard.createServer(body('back'));
    await settle(sleep(100));
    expect(ledger.calls.filter(([m]) => m === 'claimAnyway')).toHaveLength(1);
    expect(ledger.calls.some(([m]) => m === 'bind')).toBe(true);
    const s = await settle(alone);
    await settle(back);
    expect(nova.getServerState(s.id)?.name).toBe('alone');
  });

  it('a process whose ledger reached its store but never answered it (a store restarting as it starts) waits for it: no POST until it is back', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const backAtMs = 2500;
    const ledger = faulty(inner, () => (Date.now() - T0 < backAtMs ? 'down' : 'ok'), { everReached: () => true });
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000 });
    await settle(guard.createServer(body('first')));
    // probes are due at 1 s and 3 s (made by the waiting call's next admission): the second finds the store back
    const times = posts(nova).map((p) => p.timeMs - T0);
    expect(times).toHaveLength(1);
    expect(times[0]).toBeGreaterThanOrEqual(3000);
    expect(times[0]).toBeLessThanOrEqual(3200);
    expect(ledger.calls.some(([m, t]) => m === 'acquire' && t >= 3000)).toBe(true);
    expect(inner.activeClaims).toBe(0);
  });

  it('a process whose ledger says it never reached its store waits NEVER_REACHED_WAIT_MS (3 s) of the outage, then goes on alone with Nova\'s check', async () => {
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'down', { everReached: () => false });
    const waits: QuotaWaitInfo[] = [];
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) });
    const guard = guardFor(nova, { ledger, maxWaitMs: 60_000, maxDelayMs: 200, onWait: (w) => waits.push(w), logger });
    await settle(guard.createServer(body('first')));
    // onWait says the wait is for the ledger (the CLI must not print its stand-in shortfalls as "0 free")
    expect(waits.length).toBeGreaterThan(0);
    expect(waits.map((w) => w.ledgerOutOfReach)).toEqual(waits.map(() => true));
    expect(waits.map((w) => w.reason)).toEqual(waits.map(() => 'ledger-out-of-reach'));
    // and its debug line does not claim the ledger has answered this process before
    const why = lines.filter((m) => m.startsWith('quota ledger out of reach: waiting for it ('));
    expect(why.length).toBeGreaterThan(0);
    expect(why.every((m) => m.includes('never answered this process yet'))).toBe(true);
    await settle(guard.createServer(body('second')));
    const times = posts(nova).map((p) => p.timeMs - T0);
    expect(times[0]).toBeGreaterThanOrEqual(3000);
    expect(times[0]).toBeLessThanOrEqual(3200);
    // once the outage is older than the wait, at once
    expect(times[1]! - times[0]!).toBeLessThan(50);
    expect(guard.stats.ledgerOutages).toBe(1);
  });

  it('a ledger gone for good: creates wait while a claim of this process may be live in it, then admit within its share (one warning, degradedAdmissions), and are re-claimed when it is back', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    // servers stay uncounted (scheduling) for 8 s: the degraded claims are still held when the ledger is back
    const nova = await startNova({ maxTotalCores: 8, maxTotalInstances: 100, schedulingDelayMs: 8000, buildDelayMs: 9000, deleteDelayMs: 20 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    let down = false;
    const placeTtlMs = 1000;
    // two hosts as the ledger last saw them: a part of 8 / 2 = 4 cores (two 2-core servers)
    const ledger = faulty(inner, () => (down ? 'down' : 'ok'), { placeTtlMs, members: [inner.holder, 'other-host:7'] });
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l) as { level: number; msg: string }) });
    const guard = guardFor(nova, { ledger, leaseTtlMs: 2000, maxWaitMs: 120_000, maxDelayMs: 200, activeTimeoutMs: 60_000, logger });
    const first = await settle(guard.createServer(body('first')));
    await settle(sleep(1000));
    down = true;
    const downAt = Date.now() - T0;
    // 'first' still runs (2 cores); three more creates: one fits the part beside it, two wait for room in it
    const runs = ['d1', 'd2', 'd3'].map((n) => guard.createServer(body(n)));
    await settle(sleep(10));
    // the moment: the later of the last call that reached the ledger and the first that failed, plus the
    // longest lease a call of this guard asks for (the POST's cover: requestTimeoutMs + the ledger's budget)
    // plus the ledger's place lease
    const lastLanded = Math.max(...ledger.calls.filter(([, t]) => t < downAt).map(([, t]) => t));
    const firstFailed = Math.min(...ledger.calls.filter(([, t]) => t >= downAt).map(([, t]) => t));
    const longestLeaseMs = Math.max(2000, guard.client.requestTimeoutMs + 2000);
    const momentMs = Math.max(lastLanded, firstFailed) + longestLeaseMs + placeTtlMs;
    expect(firstFailed - lastLanded).toBeGreaterThan(100); // idle meanwhile: the outage's start decides
    await settle(sleep(momentMs - (Date.now() - T0) - 50));
    expect(posts(nova)).toHaveLength(1); // nothing before the moment: a short outage costs no quota
    await settle(sleep(600));
    const degradedPosts = posts(nova).slice(1);
    expect(degradedPosts).toHaveLength(1);
    expect(degradedPosts[0]!.timeMs - T0).toBeGreaterThanOrEqual(momentMs);
    expect(guard.stats.degradedAdmissions).toBe(1);
    // the part holds 2 servers: 'first' and one more; deleting 'first' lets the next one in
    await settle(guard.client.deleteServer(first.id, { wait: true, intervalMs: 5 }));
    await settle(sleep(600));
    expect(posts(nova)).toHaveLength(3);
    expect(guard.stats.degradedAdmissions).toBe(2);
    expect(lines.filter((l) => /admitting within this process's part of the quota/.test(l.msg))).toHaveLength(1);
    // the ledger is back: the waiting call's next admission probes it (due within 5 s); the two degraded
    // claims, still held, are re-claimed on it and bound to their servers; d3 is admitted on it, not on its own
    down = false;
    const backAt = Date.now() - T0;
    await settle(sleep(5500));
    expect(lines.filter((l) => /is back after/.test(l.msg))).toHaveLength(1);
    expect(ledger.calls.filter(([m, t]) => m === 'claimAnyway' && t >= backAt)).toHaveLength(2);
    expect(ledger.calls.filter(([m, t]) => m === 'bind' && t >= backAt).length).toBeGreaterThanOrEqual(2);
    const made = await settle(Promise.all(runs.slice(0, 2)));
    for (const s of made) await settle(guard.client.deleteServer(s.id, { wait: true, intervalMs: 5 }));
    const last = await settle(runs[2]!);
    expect(nova.getServerState(last.id)?.name).toBe('d3');
    expect(guard.stats.degradedAdmissions).toBe(2);
    expect(ledger.calls.some(([m, t]) => m === 'acquire' && t >= backAt)).toBe(true);
    expect(lines.filter((l) => /is back after/.test(l.msg))).toHaveLength(1);
    expect(guard.stats.ledgerOutages).toBe(1);
    expect(guard.stats.quota403s).toBe(0);
  });

  it('a process idle for longer than its leases, then a short outage: it still waits for the ledger (the outage has not lasted the leases), no POST until it is back', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const outage = { fromMs: 60_000, toMs: 62_500 };
    const ledger = faulty(inner, () => (Date.now() - T0 >= outage.fromMs && Date.now() - T0 < outage.toMs ? 'down' : 'ok'), { placeTtlMs: 1000 });
    const guard = guardFor(nova, { ledger, leaseTtlMs: 2000, maxWaitMs: 60_000, maxDelayMs: 200 });
    await settle(guard.createServer(body('early')));
    // idle until long past every lease it wrote (requestTimeoutMs + budget + placeTtlMs is about 33 s)
    await settle(sleep(outage.fromMs - (Date.now() - T0)));
    const s = await settle(guard.createServer(body('after-idle')));
    const post = posts(nova).find((p) => p.serverId === s.id)!;
    expect(post.timeMs - T0).toBeGreaterThanOrEqual(outage.toMs);
    expect(guard.stats.degradedAdmissions).toBe(0);
  });

  it('a ledger that said it reached its store but never answered, then gone for good: the create waits out the leases from the outage\'s start, then goes on within the quota (the fleet unknown: this process alone)', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner, () => 'down', { everReached: () => true, members: [] });
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push((JSON.parse(l) as { msg: string }).msg) });
    const guard = guardFor(nova, { ledger, leaseTtlMs: 2000, maxWaitMs: 60_000, maxDelayMs: 200, logger });
    const s = await settle(guard.createServer(body('late')));
    // the outage began at once (0 ms); the longest lease a call asks for: requestTimeoutMs + the budget
    const momentMs = guard.client.requestTimeoutMs + 2000;
    const times = posts(nova).map((p) => p.timeMs - T0);
    expect(times).toHaveLength(1);
    expect(times[0]).toBeGreaterThanOrEqual(momentMs);
    expect(times[0]).toBeLessThanOrEqual(momentMs + 500);
    expect(nova.getServerState(s.id)?.name).toBe('late');
    expect(guard.stats.degradedAdmissions).toBe(1);
    expect(lines.filter((m) => /this process counts alone/.test(m))).toHaveLength(1);
  });

  it('a ledger that admits nothing although the reading and its claims fit: QuotaWaitTimeoutError at maxWaitMs saying so, not "busy fleet"', async () => {
    const nova = await startNova({ maxTotalCores: 10, maxTotalInstances: 100 });
    const inner = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
    const ledger = faulty(inner);
    // a ledger settling after a holder reconnected: refuses every admission, with nothing in flight or ahead
    ledger.acquire = async (request, read, signal) => {
      const r = await inner.acquire(request, read, signal);
      if (r.admitted) await inner.release(r.claim, 'not-created');
      return { admitted: false, inFlight: { cores: 0, ramMiB: 0, instances: 0 }, ahead: { cores: 0, ramMiB: 0, instances: 0 }, reading: r.reading, place: r.place };
    };
    const guard = guardFor(nova, { ledger, maxWaitMs: 3000, explainShortfall: true });
    const err = await settle(rejection(guard.createServer(body('settling'))));
    expect(err).toBeInstanceOf(QuotaWaitTimeoutError);
    expect(err.message).toMatch(/the reading and the claims leave room, but the quota ledger \(test\) admitted nothing/);
    expect(err.message).not.toMatch(/busy fleet/);
    expect(posts(nova)).toHaveLength(0);
  });
});
