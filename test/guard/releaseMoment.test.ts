// When a guard's claim ends: at the first poll that shows its server past scheduling (Nova counts it
// from then on), not at ACTIVE. Fake timers, FakeNova with a `scheduling` phase, two guards on one
// InProcessQuotaLedger.
import { describe, expect, it } from 'vitest';
import { InProcessQuotaLedger } from '../../src/guard/inProcessLedger.js';
import { isPastScheduling, waitForActive } from '../../src/guard/waitForActive.js';
import type { Server } from '../../src/core/types.js';
import { T0, runUntil, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

/** Guard A creates at 0; guard B starts once A's POST answered. Returns B's POST time (fake ms). */
async function secondPostMs(schedulingDelayMs: number): Promise<{ bPostMs: number; aActiveMs: number }> {
  // 4 cores: A's server (counted by Nova from its POST) plus A's claim leave no room for B.
  const nova = await startNova({ maxTotalCores: 4, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 1000, schedulingDelayMs });
  const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
  const a = guardFor(nova, { ledger, activeIntervalMs: 50 });
  const b = guardFor(nova, { ledger, activeIntervalMs: 50 });
  let aActiveMs = -1;
  const runA = a.createServer(body('a')).then((server) => {
    aActiveMs = Date.now() - T0;
    return server;
  });
  await runUntil(() => posts(nova).length === 1);
  const runB = b.createServer(body('b'));
  const [serverA] = await settle(Promise.all([runA, runB]));
  expect(serverA.status).toBe('ACTIVE');
  const [pa, pb] = posts(nova);
  expect(pa!.status).toBe(202);
  expect(pb!.status).toBe(202);
  return { bPostMs: pb!.timeMs - T0, aActiveMs };
}

describe('the claim ends once the server is past scheduling', () => {
  it('a second guard is admitted right after the first server shows spawning, long before ACTIVE', async () => {
    const { bPostMs, aActiveMs } = await secondPostMs(200);
    // A shows `spawning` from 200 ms, seen at the poll at 200 or 250 ms; B's backoff reads at most 80 ms apart.
    expect(bPostMs).toBeGreaterThanOrEqual(200);
    expect(bPostMs).toBeLessThanOrEqual(250 + 80 + 10);
    expect(aActiveMs).toBeGreaterThanOrEqual(1000);
  });

  it('while the server stays scheduling the claim is held: the second guard waits for ACTIVE', async () => {
    const { bPostMs, aActiveMs } = await secondPostMs(1000);
    expect(aActiveMs).toBeGreaterThanOrEqual(1000);
    expect(bPostMs).toBeGreaterThanOrEqual(aActiveMs);
  });

  it('a create that fails conductor\'s quota recheck never shows spawning, so its claim is not ended as counted', async () => {
    const nova = await startNova({ maxTotalCores: 10, buildDelayMs: 300 });
    nova.failCreatesWithQuotaRecheck(1);
    const client = clientFor(nova);
    const created = await settle(client.createServer(body('r')));
    const seen: string[] = [];
    const res = await settle(waitForActive(client, created.id, { intervalMs: 50, jitter: 0, onBuild: (s) => void seen.push(String(s['OS-EXT-STS:task_state'])) }));
    expect(res.outcome).toBe('error');
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen)).toEqual(new Set(['scheduling']));
  });
});

describe('waitForActive onBuild', () => {
  it('is called with each BUILD body, at the polls, before the next pause', async () => {
    const nova = await startNova({ buildDelayMs: 300, schedulingDelayMs: 120 });
    const client = clientFor(nova);
    const created = await settle(client.createServer(body('x')));
    const seen: Array<[number, string, boolean]> = [];
    const res = await settle(
      waitForActive(client, created.id, {
        intervalMs: 100,
        jitter: 0,
        onBuild: (s) => void seen.push([Date.now() - T0, String(s['OS-EXT-STS:task_state']), isPastScheduling(s)]),
      }),
    );
    expect(res.outcome).toBe('active');
    expect(seen).toEqual([
      [0, 'scheduling', false],
      [100, 'scheduling', false],
      [200, 'spawning', true],
    ]);
  });
});

describe('isPastScheduling', () => {
  const s = (extra: Record<string, unknown>): Server => ({ id: 'x', status: 'BUILD', ...extra }) as Server;
  it('reads task_state, the host, and the status as Nova spells them', () => {
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': 'scheduling' }))).toBe(false);
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': null }))).toBe(false);
    expect(isPastScheduling(s({}))).toBe(false);
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': 'networking' }))).toBe(true);
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': 'block_device_mapping' }))).toBe(true);
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': 'spawning' }))).toBe(true);
    expect(isPastScheduling(s({ 'OS-EXT-STS:task_state': 'scheduling', 'OS-EXT-SRV-ATTR:host': 'cmp1' }))).toBe(true);
    expect(isPastScheduling(s({ status: 'ACTIVE', 'OS-EXT-STS:task_state': null }))).toBe(true);
    expect(isPastScheduling(s({ status: 'ERROR', 'OS-EXT-STS:task_state': null }))).toBe(true);
  });
});
