/**
 * The credit of a confirmed deletion to the kept `/limits` reading, end to end through the guard
 * (`src/guard/freedCredits.ts`, `FreedCredit` in `src/ledger/port.ts`): two processes (two clients,
 * two guards, two SQLite ledger objects on one real file) fill a quota; a create waits; the first
 * process deletes a server it created, with `wait`, and the waiting create is admitted at Nova's 404
 * on the kept reading with that server credited, without another `GET /limits`. A server the guard
 * did not create is not credited: its deletion makes the kept reading stale and the waiter reads.
 * FakeNova, real clock, millisecond options.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { afterThisTest } from '../cleanup.js';
import { body, clientFor, guardFor, startNova } from './fixtures.js';
import type { FakeNova } from '../../src/testing/index.js';
import type { QuotaGuard } from '../../src/guard/quotaGuard.js';

/** Two "processes" on one ledger file: each its own client, ledger object and guard. */
async function twoProcesses(nova: FakeNova) {
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-credit-'));
  afterThisTest(() => rmSync(dir, { recursive: true, force: true }));
  const one = (holder: string) => {
    const client = clientFor(nova);
    const ledger = new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: dir, holder, limitsMaxAgeMs: 60_000 });
    const guard = guardFor(nova, { ledger, maxWaitMs: 20_000 }, client);
    afterThisTest(async () => {
      await guard.close();
      await ledger.close();
    });
    return { client, ledger, guard };
  };
  return { a: one('a'), b: one('b') };
}

const limitsReads = (nova: FakeNova): number => nova.requestsTo('GET', '/limits').length;

/** 4 of 8 cores used: `guard` creates two more 2-core servers and never a third; no POST past the quota (FakeNova: no quota 403, peak within 8). */
async function fitsTwoMoreOnly(nova: FakeNova, guard: QuotaGuard, s2: { id: string }): Promise<void> {
  const more = await Promise.all([guard.createServer(body('s3')), guard.createServer(body('s4'))]);
  await expect(guard.createServer(body('s5'), { signal: AbortSignal.timeout(1000) })).rejects.toThrow();
  expect(nova.quotaRecord().quota403s, 'no POST past the quota').toBe(0);
  expect(nova.quotaRecord().peakCores).toBeLessThanOrEqual(8);
  expect([s2, ...more].every((s) => nova.getServerState(s.id) !== undefined)).toBe(true);
}

describe('the credit of a confirmed deletion to the kept /limits reading', () => {
  it('a server the guard created, deleted with wait: the waiting create of another process is admitted on the credited kept reading, no GET /limits after the DELETE', async () => {
    // 6 cores: a server outside the fleet (2), then s1 (a) and s2 (b), 2 cores each
    const nova = await startNova({ maxTotalCores: 6 });
    const outside = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    const s1 = await a.guard.createServer(body('s1'));
    // the outside server goes (no credit: the guard did not create it): the kept reading is stale
    await a.client.deleteServer(outside.id, { wait: true, intervalMs: 5 });
    // b reads afresh: the reading counts s1 and is kept
    const s3 = await b.guard.createServer(body('s3'));
    const s4 = await b.guard.createServer(body('s4'));
    // the quota is full: b's next create waits
    const waiting = b.guard.createServer(body('s5'));
    await new Promise((r) => setTimeout(r, 100));
    const readsBefore = limitsReads(nova);
    await a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    const s5 = await waiting;
    expect(nova.getServerState(s5.id)?.status).toBe('ACTIVE');
    expect(limitsReads(nova) - readsBefore, 'no GET /limits after the credited deletion').toBe(0);
    for (const s of [s3, s4, s5]) expect(nova.getServerState(s.id)).toBeDefined();
  });

  it('a server the guard did not create: its deletion makes the kept reading stale, the waiting create reads GET /limits again', async () => {
    const nova = await startNova({ maxTotalCores: 4 });
    const outside = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    await b.guard.createServer(body('s1'));
    const waiting = b.guard.createServer(body('s2'));
    await new Promise((r) => setTimeout(r, 100));
    const readsBefore = limitsReads(nova);
    await a.client.deleteServer(outside.id, { wait: true, intervalMs: 5 });
    const s2 = await waiting;
    expect(nova.getServerState(s2.id)?.status).toBe('ACTIVE');
    expect(limitsReads(nova) - readsBefore).toBeGreaterThanOrEqual(1);
  });
});

describe('no credit for a server gone before this client DELETEd it (a kept reading read after it went never counted it)', () => {
  it('a server destroyed by someone else, then deleted by its creator (Nova answers 404): no credit, no admission past the quota (FakeNova: no quota 403)', async () => {
    // 8 cores: two servers outside the fleet (2 each), then s1 of a (2)
    const nova = await startNova({ maxTotalCores: 8 });
    const outside1 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const outside2 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    const s1 = await a.guard.createServer(body('s1'));
    // a reaper (not this client) destroys s1; then a deletion without a credit makes the kept reading stale
    nova.destroyServer(s1.id);
    await a.client.deleteServer(outside2.id, { wait: true, intervalMs: 5 });
    // b reads afresh (it counts outside1 only: 2 of 8) and fills the quota with s2, s3, s4
    const mine = [];
    for (const name of ['s2', 's3', 's4']) mine.push(await b.guard.createServer(body(name)));
    expect(nova.usage().cores).toBe(8);
    const readsBefore = limitsReads(nova);
    // a's cleanup deletes s1: Nova's 404 (already gone). The kept reading never counted s1: no credit.
    const r = await a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    expect(r.outcome).toBe('already-gone');
    // b's next create must not be admitted on a reading that lost 2 cores it never counted
    const postsBefore = nova.requestsTo('POST', '/servers').length;
    await expect(b.guard.createServer(body('s5'), { signal: AbortSignal.timeout(1500) })).rejects.toThrow();
    expect(nova.quotaRecord().quota403s, 'no POST past the quota').toBe(0);
    expect(nova.requestsTo('POST', '/servers').length - postsBefore, 'no POST while the quota is full').toBe(0);
    expect(limitsReads(nova) - readsBefore, 'the uncredited deletion made the kept reading stale: read again').toBeGreaterThanOrEqual(1);
    expect(nova.quotaRecord().peakCores).toBeLessThanOrEqual(8);
    void outside1;
  });
});

describe('no credit for a claim ended as counted before Nova surely counted its server', () => {
  it('keepOnAbort during scheduling: a reading read then never counted the server; its deletion is not credited (FakeNova: no quota 403, peak within the quota)', async () => {
    // 8 cores: two servers outside the fleet (2 each); every build waits 1.5 s in scheduling (Nova does not count it yet)
    const nova = await startNova({ maxTotalCores: 8, buildDelayMs: 2000, schedulingDelayMs: 1500 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const outside2 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    // a creates s1 and aborts while it is in scheduling, keeping it: its claim ends as 'counted' then
    const ac = new AbortController();
    const kept = a.guard.createServer(body('s1'), { signal: ac.signal, keepOnAbort: true }).then(
      () => undefined,
      (e: unknown) => (e as { serverId?: string }).serverId,
    );
    while (nova.listServerStates().length < 3) await new Promise((r) => setTimeout(r, 5));
    ac.abort(new Error('stop'));
    const s1 = (await kept)!;
    expect(nova.getServerState(s1)?.taskState).toBe('scheduling');
    await new Promise((r) => setTimeout(r, 50));
    // a deletion without a credit: b reads afresh while s1 is still in scheduling (the reading counts 2 of 8)
    await a.client.deleteServer(outside2.id, { wait: true, intervalMs: 5 });
    const s2 = await b.guard.createServer(body('s2'));
    // s1 has been counted since; a deletes it (Nova accepts the DELETE, then 404)
    expect(nova.getServerState(s1)?.status).toBe('ACTIVE');
    const r = await a.client.deleteServer(s1, { wait: true, intervalMs: 5 });
    expect(r.outcome).toBe('deleted');
    // 4 of 8 used (outside1, s2): b fits two more, never a third
    await fitsTwoMoreOnly(nova, b.guard, s2);
  });
});

describe('no credit beyond what Nova counts for the server', () => {
  it('a create whose needs were given above its flavor (createServer needs): its deletion is not credited (FakeNova: no quota 403, peak within the quota)', async () => {
    // 8 cores: two servers outside the fleet (2 each)
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const outside2 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    // s1: a 2-core flavor, claimed as 4 cores
    const s1 = await a.guard.createServer(body('s1'), { needs: { cores: 4 } });
    await a.client.deleteServer(outside2.id, { wait: true, intervalMs: 5 });
    // b reads afresh (outside1 and s1: 4 of 8) and creates s2
    const s2 = await b.guard.createServer(body('s2'));
    const r = await a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    expect(r.outcome).toBe('deleted');
    // 4 of 8 used (outside1, s2): b fits two more, never a third
    await fitsTwoMoreOnly(nova, b.guard, s2);
  });
});

describe('two guards on one client (both hear its confirmed deletions)', () => {
  it('the creator publishes with the credit, the other without: the server is never subtracted twice (FakeNova: no quota 403)', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const outside2 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    const other = guardFor(nova, { ledger: a.ledger, maxWaitMs: 20_000 }, a.client);
    afterThisTest(() => other.close());
    const s1 = await a.guard.createServer(body('s1'));
    await a.client.deleteServer(outside2.id, { wait: true, intervalMs: 5 });
    // b reads afresh: outside1 and s1, 4 of 8
    const s2 = await b.guard.createServer(body('s2'));
    await a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    // 4 of 8 used (outside1, s2): b fits two more, never a third
    await fitsTwoMoreOnly(nova, b.guard, s2);
  });
});

describe('what the credit cannot see: a change made outside the ledger', () => {
  it('a server resized to a smaller flavor, then deleted: the credit overstates by the difference; Nova answers one quota 403, which refutes the reading (no second 403)', async () => {
    const nova = await startNova({ maxTotalCores: 8 });
    nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const outside2 = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    const s1 = await a.guard.createServer(body('s1'));
    // resized from 2 cores to 1 (waiting for confirmation: legacy counting counts the new flavor)
    nova.causes.resizePending(s1.id, '1');
    await a.client.deleteServer(outside2.id, { wait: true, intervalMs: 5 });
    // b reads afresh: outside1 and s1, 3 of 8
    await b.guard.createServer(body('s2'));
    await a.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    // 4 of 8 used: four 1-core servers fit; the kept reading, credited 2 cores for s1's 1, says five
    for (let i = 0; i < 4; i++) await b.guard.createServer(body(`t${i}`, '1'));
    await expect(b.guard.createServer(body('t4', '1'), { signal: AbortSignal.timeout(1000) })).rejects.toThrow();
    expect(nova.quotaRecord().quota403s, "one 403: the credit overstated").toBe(1);
    expect(nova.quotaRecord().peakCores).toBeLessThanOrEqual(8);
  });
});

describe('no credit for a server seen in ERROR', () => {
  it('an unwatched create (waitForActive: false) whose server went to ERROR (NoValidHost: under placement counting it holds no cores or RAM): its deletion makes the kept reading stale', async () => {
    const nova = await startNova({ maxTotalCores: 20, buildDelayMs: 100 });
    const outside = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
    const { a, b } = await twoProcesses(nova);
    // a third process: its own client, ledger object and a guard that does not wait for ACTIVE
    const c = { client: clientFor(nova), ledger: new SqliteQuotaLedger({ endpoint: nova.endpoint, projectId: nova.projectId, path: a.ledger.path, holder: 'c', limitsMaxAgeMs: 60_000 }) };
    const unwatched = guardFor(nova, { ledger: c.ledger, maxWaitMs: 20_000, waitForActive: false }, c.client);
    afterThisTest(async () => {
      await unwatched.close();
      await c.ledger.close();
    });
    nova.failCreatesWithQuotaRecheck(1, 'No valid host was found. There are not enough hosts available.');
    const s1 = await unwatched.createServer(body('s1'));
    while (nova.getServerState(s1.id)?.status !== 'ERROR') await new Promise((r) => setTimeout(r, 10));
    // the guard's next admission looks at s1: past scheduling (ERROR), its claim ends as counted
    await unwatched.createServer(body('s2'));
    await a.client.deleteServer(outside.id, { wait: true, intervalMs: 5 });
    // b reads afresh after that
    await b.guard.createServer(body('s3'));
    await c.client.deleteServer(s1.id, { wait: true, intervalMs: 5 });
    const readsBefore = limitsReads(nova);
    await b.guard.createServer(body('s4'));
    expect(limitsReads(nova) - readsBefore, 'not credited: the next admission reads /limits').toBeGreaterThanOrEqual(1);
  });
});
