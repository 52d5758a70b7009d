/**
 * The fleet simulation as a section of `npm run bench`: its runs (30 hosts with nova-guard, the same
 * day on 1 host for the looks-per-second comparison, and the autopkgtest-style baseline), its tables
 * and its targets (issue 20 item 6), each held or MISSED with the measured cause.
 *
 * @module
 */
import { fleetSimConfig, timedFleetSim, type FleetSimConfig, type FleetSimRow } from './fleetSim.js';
import { SHARED_READING_MS } from './sim/hostLedger.js';
import { markdownTable, type TargetResult } from './table.js';

/** The day of the full run: the largest that fits in 3 minutes of wall time here (see docs/fleet-simulation.md). */
export const DAY_JOBS = 4000;

/**
 * The runs of the section: `jobs` per day; smoke: a small fleet with the quota scaled to its workers.
 * nova-guard per host, nova-guard with the hosts sharing one fleet watcher (`InProcessFleet`), the
 * same day on 1 host, and the autopkgtest-style baseline.
 */
export function simRuns(smoke: boolean, jobs = smoke ? 300 : DAY_JOBS): FleetSimConfig[] {
  const base = smoke ? fleetSimConfig({ hosts: 3, workersPerHost: 4, quotaCores: 26, jobs }) : fleetSimConfig({ jobs });
  const workers = base.hosts * base.workersPerHost;
  return [base, { ...base, fleetWatcher: true }, { ...base, hosts: 1, workersPerHost: workers }, { ...base, policy: 'autopkgtest' }];
}

/** A row's name: `nova-guard + fleet watcher, 30 hosts x 8`. */
export function simLabel(r: FleetSimRow): string {
  return `${r.policy}${r.fleetWatcher ? ' + fleet watcher' : ''}, ${r.hosts} host${r.hosts === 1 ? '' : 's'} x ${r.workers / r.hosts}`;
}

/** Run the section's days one after the other (progress on stderr). */
export async function runSim(runs: readonly FleetSimConfig[]): Promise<FleetSimRow[]> {
  const rows: FleetSimRow[] = [];
  for (const cfg of runs) {
    const row = await timedFleetSim(cfg);
    process.stderr.write(`sim ${row.policy} ${row.hosts} x ${row.workers / row.hosts}: ${row.jobs} jobs in ${row.wallS} s wall, ${row.virtualSteps} timer steps\n`);
    rows.push(row);
  }
  return rows;
}

/** The main table. */
export function simTable(rows: readonly FleetSimRow[]): string {
  return markdownTable(
    ['run', 'jobs done', 'failed jobs', 'quota 403s', 'recheck ERRORs', 'servers left', 'most cores held / quota', 'makespan s', 'whole-job bound s', 'fluid bound s', 'makespan / bound', 'end tail s', 'in-order bound s', 'makespan / in-order bound', 'requests/job', 'POST', 'DELETE', '/limits', 'GET', 'listing', 'without /limits', 'looks/s', 'wall s', 'CPU s'],
    rows.map((r) => [
      simLabel(r),
      r.jobsDone,
      r.failedJobs,
      r.quota403s,
      r.recheckErrors,
      r.serversLeft,
      `${r.peakCores} / ${r.quotaCores}`,
      r.makespanS,
      r.wholeJobBoundS,
      r.fluidBoundS,
      r.makespanOverBound,
      r.tailS,
      r.inOrderBoundS,
      r.makespanOverInOrderBound,
      r.requestsPerJob,
      r.perJob.post,
      r.perJob.delete,
      r.perJob.limits,
      r.perJob.get,
      r.perJob.listing,
      r.requestsPerJobWithoutLimits,
      r.looksPerSecond,
      r.wallS,
      r.cpuS,
    ]),
  );
}

/** Where the makespan goes (nova-guard runs): mean per job and as makespan seconds (sum of cores x time / quota). */
export function simLagTable(rows: readonly FleetSimRow[]): string {
  return markdownTable(
    ['run', '404 detection lag (mean s / makespan s)', 'wake-up lag', 'counted twice', 'fresh /limits waits', '/limits shared', 'requests by kind'],
    rows
      .filter((r) => r.policy === 'nova-guard')
      .map((r) => [
        simLabel(r),
        `${r.lags.detection404.meanS} / ${r.lags.detection404.makespanS}`,
        `${r.lags.wakeUp.meanS} / ${r.lags.wakeUp.makespanS}`,
        `${r.lags.countedTwice.meanS} / ${r.lags.countedTwice.makespanS}`,
        `${r.lags.freshLimits.meanS} / ${r.lags.freshLimits.makespanS}`,
        r.sharedReadings,
        Object.entries(r.requests)
          .filter(([, n]) => n > 0)
          .map(([k, n]) => `${k} ${n}`)
          .join(', '),
      ]),
  );
}

/** What the simulation's ledger is, and what that leaves unproved (printed with the section). */
export const SIM_LEDGER_NOTE =
  'Ledger: one nova-guard InProcessQuotaLedger shared by every host (claims, the queue, fencing, counted-release retention and freed-quota wake-ups across hosts, as the Redis ledger shares them), ' +
  `with /limits readings shared for ${SHARED_READING_MS} ms as the Redis ledger's kept reading. The Redis ledger itself reads Redis's clock and cannot run in virtual time: ` +
  "Redis's network latency, its restarts and outages, and a host's fall-back to its own ledger are not proved here (test/redis/fleetNetwork.test.ts covers them on a real redis-server).";

/** The section's targets (issue 20 item 6). */
export function simTargets(rows: readonly FleetSimRow[], smoke: boolean): TargetResult[] {
  const fleet = rows.find((r) => r.policy === 'nova-guard' && r.hosts > 1 && !r.fleetWatcher);
  const watched = rows.find((r) => r.policy === 'nova-guard' && r.hosts > 1 && r.fleetWatcher);
  const one = rows.find((r) => r.policy === 'nova-guard' && r.hosts === 1);
  const apt = rows.find((r) => r.policy === 'autopkgtest');
  if (!fleet) return [];
  const out: TargetResult[] = [];
  for (const r of rows.filter((x) => x.policy === 'nova-guard')) {
    const n = `sim ${simLabel(r)}`;
    out.push(
      { target: `${n}: 0 failed jobs`, measured: String(r.failedJobs), held: r.failedJobs === 0, reason: r.errors.join('; ') },
      { target: `${n}: 0 quota 403s`, measured: `${r.quota403s} (${r.recheckErrors} recheck ERRORs)`, held: r.quota403s === 0 && r.recheckErrors === 0 },
      { target: `${n}: 0 servers left`, measured: String(r.serversLeft), held: r.serversLeft === 0 },
      { target: `${n}: most cores held <= the quota`, measured: `${r.peakCores} of ${r.quotaCores}`, held: r.peakCores <= r.quotaCores },
    );
  }
  for (const r of [fleet, watched]) {
    if (!r) continue;
    const n = `sim ${simLabel(r)}`;
    const lagS = r.lags.detection404.makespanS + r.lags.wakeUp.makespanS + r.lags.countedTwice.makespanS;
    const lags = `(404 detection ${r.lags.detection404.makespanS}, wake-up ${r.lags.wakeUp.makespanS}, counted twice ${r.lags.countedTwice.makespanS})`;
    out.push({
      target: `${n}: makespan at most 1.05x the whole-job bound`,
      measured: `${r.makespanOverBound}x (${r.makespanS} s vs ${r.wholeJobBoundS} s)`,
      held: r.makespanOverBound <= 1.05,
      reason:
        `the end-of-day tail is ${r.tailS} s (the last jobs, pulled in order, start when the queue empties and run their drawn test time alone; ` +
        `the whole-job bound spreads all core-time evenly), and the lags cost ${Math.round(lagS)} makespan seconds ${lags}`,
    });
    out.push({
      target: `${n}: makespan at most 1.05x the in-order bound (the same jobs in the same order on an ideal scheduler with no lags)`,
      measured: `${r.makespanOverInOrderBound}x (${r.makespanS} s vs ${r.inOrderBoundS} s)`,
      held: r.makespanOverInOrderBound <= 1.05,
      reason: `the lags cost ${Math.round(lagS)} makespan seconds ${lags}`,
    });
  }
  if (apt) {
    // POST and DELETE are 2 requests per job whatever watches: half the baseline's leaves this much for /limits and every look.
    const room = Math.round((apt.requestsPerJob / 2 - 2) * 100) / 100;
    for (const r of [fleet, watched]) {
      if (!r) continue;
      out.push({
        target: `sim ${simLabel(r)}: Nova requests per job at most half the autopkgtest-style worker's (every 404 awaited)`,
        measured: `${r.requestsPerJob} vs ${apt.requestsPerJob}: POST ${r.perJob.post}, DELETE ${r.perJob.delete}, /limits ${r.perJob.limits}, GET ${r.perJob.get}, listing ${r.perJob.listing}`,
        held: r.requestsPerJob <= apt.requestsPerJob / 2,
        reason:
          `out of reach by construction: POST + DELETE are 2 per job, half the baseline's is ${apt.requestsPerJob / 2}, which leaves ${room} per job for every /limits read and every look until ACTIVE and until the 404 ` +
          `(the baseline awaits no 404 and pays with ${apt.quota403s} quota 403s and ${apt.failedJobs} failed jobs); ` +
          (r.fleetWatcher
            ? "with the fleet watcher one host's engine looks for all (its listings answer every server; a GET where a listing cannot prove the 404)"
            : "each host's client looks on its own: the guard's ACTIVE polls and each host's 404 waits"),
      });
    }
  }
  if (one) {
    for (const r of [fleet, watched]) {
      if (!r) continue;
      const ratio = Math.round((r.looksPerSecond / one.looksPerSecond) * 100) / 100;
      out.push({
        target: `sim ${simLabel(r)}: looks per second at most 1.2x the 1-host figure for the same day`,
        measured: `${r.looksPerSecond} vs ${one.looksPerSecond} (${ratio}x)`,
        held: ratio <= 1.2,
        reason: r.fleetWatcher ? 'one host looks for the fleet' : "each host's client looks on its own (its own listings, GETs and /limits reads)",
      });
    }
  }
  if (!smoke) {
    out.push({
      target: 'sim: a working day of at least 20,000 jobs in under 3 minutes of wall time',
      measured: `${fleet.jobs} jobs in ${fleet.wallS} s wall (${fleet.cpuS} s of CPU)`,
      held: fleet.jobs >= 20000 && fleet.wallS < 180,
      reason:
        `about ${Math.round((fleet.cpuS / fleet.jobs) * 1000 * 10) / 10} ms of CPU per job, ` +
        `${fleet.admissionsPerJob} admissions per job (a freed server wakes the head of the ledger's queue), each through the ledger's time limits, abort signals and the client; ` +
        `on this shared 2-core machine the largest day that fits in 3 minutes is about ${DAY_JOBS} jobs`,
    });
  }
  return out;
}
