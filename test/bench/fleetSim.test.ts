/**
 * The fleet simulation (bench/fleetSim.ts) at a tiny size: the real guard and delete code of two
 * hosts on one virtual clock keep the outcome targets, and the simulation sees a quota broken when
 * the hosts do not share a ledger.
 */
import { describe, expect, it } from 'vitest';
import { fleetSimConfig, runFleetSim } from '../../bench/fleetSim.js';

const tiny = fleetSimConfig({ hosts: 2, workersPerHost: 2, quotaCores: 8, jobs: 40, testMedianMs: 60000, testMaxMs: 600000 });

describe('fleet simulation in virtual time (2 hosts x 2 workers, 40 jobs, 8 cores)', () => {
  it('with one shared ledger: every job done, no quota 403, no server left, never more cores held than the quota', async () => {
    const row = await runFleetSim(tiny);
    expect(row.jobsDone).toBe(40);
    expect(row.failedJobs).toBe(0);
    expect(row.quota403s).toBe(0);
    expect(row.recheckErrors).toBe(0);
    expect(row.serversLeft).toBe(0);
    expect(row.peakCores).toBeLessThanOrEqual(8);
    // The quota bound the day (4 workers want up to 16 cores): the bound is met, not trivially.
    expect(row.peakCores).toBeGreaterThan(4);
    expect(row.makespanS).toBeGreaterThanOrEqual(row.wholeJobBoundS);
    // The sound bound (with the pull-order tail) is a lower bound of this real run too, and at least the even one.
    expect(row.boundS).toBeGreaterThanOrEqual(row.wholeJobBoundS);
    expect(row.makespanS).toBeGreaterThanOrEqual(row.boundS);
    // Every job's create went through the shared ledger (acquire, bind, release at least).
    expect(row.ledgerCallsPerJob).toBeGreaterThanOrEqual(3);
  });

  it('with the hosts sharing one fleet watcher (InProcessFleet): the same outcome targets, the 404s proved by the watcher, no fallback', async () => {
    const row = await runFleetSim({ ...tiny, fleetWatcher: true });
    expect(row.fleetWatcher).toBe(true);
    expect([row.jobsDone, row.failedJobs, row.quota403s, row.recheckErrors, row.serversLeft]).toEqual([40, 0, 0, 0, 0]);
    expect(row.peakCores).toBeLessThanOrEqual(8);
    // Host 1's deletions were proved by host 0's looks (host 0 waits on its own).
    expect(row.fleet!.proofs).toBeGreaterThan(0);
    expect(row.fleet!.fallbacks).toBe(0);
    expect(row.perJob.post).toBe(1);
  });

  it('with a ledger per host: the simulation sees the quota broken (403s, recheck ERRORs or over-commit)', async () => {
    const row = await runFleetSim({ ...tiny, sharedLedger: false });
    expect(row.quota403s + row.recheckErrors + Math.max(0, row.peakCores - 8)).toBeGreaterThan(0);
  });
});
