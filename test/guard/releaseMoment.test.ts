// When a guard's claim ends: at the first poll that shows its server past scheduling (Nova counts it
// from then on), not at ACTIVE. Fake timers, FakeNova with a `scheduling` phase, two guards on one
// InProcessQuotaLedger.
import { describe, expect, it } from 'vitest';
import { InProcessQuotaLedger } from '../../src/ledger/inProcess.js';
import { isPastScheduling, waitForActive } from '../../src/guard/waitForActive.js';
import type { Server } from '../../src/core/types.js';
import { T0, runUntil, settle, useFakeClock } from '../helpers.js';
import { body, clientFor, guardFor, posts, startNova } from './fixtures.js';

useFakeClock();

/**
 * Guard A creates at 0 on a ledger of its own; returns when its claim ended and when its create
 * resolved (fake ms). (Nova does not count a server while it is `scheduling`, so the claim is what
 * holds its cores until then; from `spawning` on Nova counts it and the claim must end, or the cores
 * would be counted twice.)
 */
async function claimEndMs(schedulingDelayMs: number): Promise<{ endMs: number; aActiveMs: number }> {
  const nova = await startNova({ maxTotalCores: 4, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: 1000, schedulingDelayMs });
  const ledger = new InProcessQuotaLedger({ clock: clientFor(nova).clock });
  const a = guardFor(nova, { ledger, activeIntervalMs: 50 });
  let aActiveMs = -1;
  const runA = a.createServer(body('a')).then((server) => {
    aActiveMs = Date.now() - T0;
    return server;
  });
  await runUntil(() => ledger.activeClaims === 1 && posts(nova).length === 1);
  await runUntil(() => ledger.activeClaims === 0);
  const endMs = Date.now() - T0;
  const serverA = await settle(runA);
  expect(serverA.status).toBe('ACTIVE');
  expect(posts(nova).map((p) => p.status)).toEqual([202]);
  return { endMs, aActiveMs };
}

describe('the claim ends once the server is past scheduling', () => {
  it('the claim ends at the first poll that shows the server spawning, long before ACTIVE', async () => {
    const { endMs, aActiveMs } = await claimEndMs(200);
    // A shows `spawning` from 200 ms, seen at the poll at 200 or 250 ms.
    expect(endMs).toBeGreaterThanOrEqual(200);
    expect(endMs).toBeLessThanOrEqual(250 + 10);
    expect(aActiveMs).toBeGreaterThanOrEqual(1000);
  });

  it('while the server stays scheduling the claim is held until ACTIVE', async () => {
    const { endMs, aActiveMs } = await claimEndMs(1000);
    expect(endMs).toBeGreaterThanOrEqual(1000);
    expect(endMs).toBeLessThanOrEqual(aActiveMs);
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
