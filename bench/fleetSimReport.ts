/**
 * The fleet simulation as a section of `npm run bench`: its runs (30 hosts with nova-guard, the same
 * day on 1 host for the looks-per-second comparison, and the autopkgtest-style baseline), its tables
 * and its targets (issue 20 item 6), each held or MISSED with the measured cause.
 *
 * @module
 */
import { fleetSimConfig, timedFleetSim, type FleetSimConfig, type FleetSimRow } from './fleetSim.js';
import { SHARED_READING_MS } from './sim/hostLedger.js';
import { round } from './stats.js';
import { markdownTable, type TargetResult } from './table.js';

/** How much of the simulation a bench run takes: `smoke` (CI), `quick` (the default), `full` (`--full`). */
export type SimMode = 'smoke' | 'quick' | 'full';

/** Issue 31's 30-host day: 20,000 jobs (the full run). */
export const DAY_JOBS = 20000;
/** The quick run's 30-host day: a tenth of the full day, so the section fits the quick bench's 5 minutes. */
export const QUICK_DAY_JOBS = 2000;
/** The scale run: 10x the seed fleet (300 hosts x 8 workers, 5,150 cores). */
export const SCALE_FACTOR = 10;
/** Issue 31's limit on the scale day's wall time, in s. */
export const SCALE_WALL_LIMIT_S = 300;

/**
 * The scale run's day. Full: the 30-host day's jobs (20,000) on the 10x fleet, so 10x the jobs per
 * second of Nova's time, as the looks-per-second target compares (a day of 10x the jobs, 200,000,
 * would take hours of CPU here: docs/fleet-simulation.md). Quick: one job per worker (2,400).
 */
export function scaleJobs(mode: SimMode, dayJobs: number): number {
  return mode === 'full' ? dayJobs : QUICK_SCALE_JOBS;
}
/** The quick run's scale day (300 hosts): one job per worker (2,400), what fits beside the rest of the quick bench. */
export const QUICK_SCALE_JOBS = 2400;

/**
 * The runs of the section. Every mode: nova-guard with the hosts sharing one fleet watcher (the
 * default the issue asks for) and the autopkgtest-style baseline on the 30-host day; quick and full
 * add the same fleet at 10x (300 hosts, 5,150 cores) with the fleet watcher and its baseline; full
 * adds nova-guard without the fleet watcher (each host looks on its own). Smoke: a small fleet (3
 * hosts x 4, the quota scaled to its workers), its 10x run left out.
 */
export function simRuns(mode: SimMode, jobs?: number): FleetSimConfig[] {
  const dayJobs = jobs ?? (mode === 'full' ? DAY_JOBS : mode === 'quick' ? QUICK_DAY_JOBS : 300);
  const base = mode === 'smoke' ? fleetSimConfig({ hosts: 3, workersPerHost: 4, quotaCores: 26, jobs: dayJobs }) : fleetSimConfig({ jobs: dayJobs });
  const watched: FleetSimConfig = { ...base, fleetWatcher: true };
  const runs: FleetSimConfig[] = [watched, ...(mode === 'full' ? [base] : []), { ...base, policy: 'autopkgtest' }];
  if (mode !== 'smoke') {
    const big: FleetSimConfig = { ...watched, hosts: SCALE_FACTOR * base.hosts, quotaCores: SCALE_FACTOR * base.quotaCores, jobs: scaleJobs(mode, dayJobs) };
    runs.push(big, { ...big, fleetWatcher: false, policy: 'autopkgtest' });
  }
  return runs;
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
    ['run', 'cores', 'jobs done', 'failed jobs', 'quota 403s', 'recheck ERRORs', 'servers left', 'most cores held', 'makespan s', 'bound s', 'makespan / bound', 'whole-job (even) bound s', 'pull-order bound s', 'fluid bound s', 'end tail s', 'in-order schedule s', 'makespan / in-order', 'requests/job', 'POST', 'DELETE', '/limits', 'GET', 'listing', 'looks/s', 'ledger calls/job', 'wall s', 'CPU s'],
    rows.map((r) => [
      simLabel(r),
      r.quotaCores,
      r.jobsDone,
      r.failedJobs,
      r.quota403s,
      r.recheckErrors,
      r.serversLeft,
      r.peakCores,
      r.makespanS,
      r.boundS,
      r.makespanOverSoundBound,
      r.wholeJobBoundS,
      r.pullOrderBoundS,
      r.fluidBoundS,
      r.tailS,
      r.inOrderBoundS,
      r.makespanOverInOrderBound,
      r.requestsPerJob,
      r.perJob.post,
      r.perJob.delete,
      r.perJob.limits,
      r.perJob.get,
      r.perJob.listing,
      r.looksPerSecond,
      r.policy === 'nova-guard' ? r.ledgerCallsPerJob : '–',
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
  `with /limits readings shared for ${SHARED_READING_MS} ms as the Redis ledger's kept reading (its default limitsMaxAgeMs), and a confirmed deletion of a server a guard created credited to the kept reading as the Redis ledger's FREED script credits it (FreedCredit). The Redis ledger itself reads Redis's clock and cannot run in virtual time: ` +
  "Redis's network latency, its restarts and outages, and a host's fall-back to its own ledger are not proved here (test/redis/fleetNetwork.test.ts covers them on a real redis-server).";

/** What the bounds are (printed with the section; docs/fleet-simulation.md says more). */
export const SIM_BOUND_NOTE =
  "Bounds, from each server's own POST-to-404 time: the whole-job (even) bound is the day's core-time over the quota in whole 2-core slots, or the longest job if longer; " +
  'it spreads the core-time evenly and ignores that the jobs come from one queue in order. The pull-order bound keeps that: when job j is pulled a worker is free, so at most ' +
  'workers - 1 earlier jobs still run and the core-time of all the others (at least all but the workers - 1 largest) was spent before, at most the quota at a time; every later job ' +
  'is pulled no earlier and runs its own time after. No scheduler pulling in order ends before either, so the bound the makespan target is judged on is the larger (bound s). ' +
  'The in-order schedule is the best schedule that also STARTS the jobs in queue order with no lag between them: not a bound (a scheduler may let a later small job pass a waiting ' +
  'large one), but the same timeline as the run without its lags: makespan / in-order is what the lags cost.';

/** One line for a target the mode did not run (see `formatTargets`). */
function notRun(target: string, why: string): TargetResult {
  return { target, measured: 'not run', held: true, skipped: why };
}

/** Where a row's requests go, per job. */
function requestKinds(r: FleetSimRow): string {
  return `POST ${r.perJob.post}, DELETE ${r.perJob.delete}, /limits ${r.perJob.limits}, GET ${r.perJob.get}, listing ${r.perJob.listing}, flavors and others ${r.perJob.other}`;
}

/** The section's targets (issue 31), each on the rows of this mode; `notRun` lines for those the mode leaves to `--full`. */
export function simTargets(rows: readonly FleetSimRow[], mode: SimMode): TargetResult[] {
  const ng = rows.filter((r) => r.policy === 'nova-guard');
  const hostCounts = [...new Set(rows.map((r) => r.hosts))].sort((a, b) => a - b);
  const day = hostCounts[0];
  const big = hostCounts.length > 1 ? hostCounts[hostCounts.length - 1] : undefined;
  const dayWatched = ng.find((r) => r.hosts === day && r.fleetWatcher);
  const bigWatched = big === undefined ? undefined : ng.find((r) => r.hosts === big && r.fleetWatcher);
  const out: TargetResult[] = [];
  for (const r of ng) {
    const n = `sim ${simLabel(r)}, ${r.jobs} jobs`;
    const apt = rows.find((x) => x.policy === 'autopkgtest' && x.hosts === r.hosts && x.jobs === r.jobs);
    const lagS = r.lags.detection404.makespanS + r.lags.wakeUp.makespanS + r.lags.countedTwice.makespanS + r.lags.freshLimits.makespanS;
    out.push(
      { target: `${n}: 0 failed jobs`, measured: String(r.failedJobs), held: r.failedJobs === 0, reason: r.errors.join('; ') },
      { target: `${n}: 0 quota 403s`, measured: `${r.quota403s} (${r.recheckErrors} recheck ERRORs)`, held: r.quota403s === 0 && r.recheckErrors === 0 },
      { target: `${n}: 0 servers left`, measured: String(r.serversLeft), held: r.serversLeft === 0 },
      { target: `${n}: most cores held <= the quota`, measured: `${r.peakCores} of ${r.quotaCores}`, held: r.peakCores <= r.quotaCores },
      {
        target: `${n}: makespan at most 1.05x the whole-job bound with the end-of-day tail (max of the even whole-job bound and the pull-order bound)`,
        measured: `${r.makespanOverSoundBound}x (${r.makespanS} s vs ${r.boundS} s; the even whole-job bound alone ${r.wholeJobBoundS} s: ${r.makespanOverBound}x)`,
        held: r.makespanOverSoundBound <= 1.05,
        reason:
          `the run is ${r.makespanOverInOrderBound}x the in-order schedule of the same jobs (${r.inOrderBoundS} s): its lags cost ${Math.round(lagS)} makespan seconds ` +
          `(404 detection ${r.lags.detection404.makespanS}, wake-up ${r.lags.wakeUp.makespanS}, counted twice ${r.lags.countedTwice.makespanS}, fresh /limits waits ${r.lags.freshLimits.makespanS}); ` +
          `the rest (${round(r.inOrderBoundS - r.boundS, 1)} s) is between the in-order schedule and the bound: the end-of-day tail (the last job's POST to the end: ${r.tailS} s) as an in-order pull gives it, ` +
          'which the bound can only bound from below (it lets the workers - 1 largest jobs run beside a pull for free)',
      },
    );
    if (apt) {
      out.push({
        target: `${n}: Nova requests per job at most the autopkgtest-style worker's on the same day (every 404 awaited)`,
        measured: `${r.requestsPerJob} vs ${apt.requestsPerJob} (${requestKinds(r)})`,
        held: r.requestsPerJob <= apt.requestsPerJob,
        reason:
          `the baseline awaits no 404 and polls only until ACTIVE (${requestKinds(apt)}; ${apt.quota403s} quota 403s, ${apt.failedJobs} failed jobs); ` +
          (r.fleetWatcher
            ? "with the fleet watcher one host's engine looks for all (its listings answer every server; a GET where a listing cannot prove the 404)"
            : "each host's client looks on its own: the guard's ACTIVE polls and each host's 404 waits"),
      });
    }
  }
  if (mode === 'smoke') return out;
  if (dayWatched) {
    out.push(
      dayWatched.jobs >= DAY_JOBS
        ? { target: `sim ${simLabel(dayWatched)}: a day of at least ${DAY_JOBS} jobs`, measured: `${dayWatched.jobs} jobs (${dayWatched.wallS} s wall, ${dayWatched.cpuS} s CPU)`, held: true }
        : notRun(`sim, 30 hosts: a day of ${DAY_JOBS} jobs`, `this quick run's day has ${dayWatched.jobs} jobs (${dayWatched.wallS} s wall, ${dayWatched.cpuS} s CPU); --full runs ${DAY_JOBS}`),
    );
  }
  if (dayWatched && bigWatched) {
    const looks = round(bigWatched.looksPerSecond / dayWatched.looksPerSecond, 2);
    const calls = round(bigWatched.ledgerCallsPerJob / dayWatched.ledgerCallsPerJob, 2);
    const perS = (r: FleetSimRow): string => {
      const s = r.makespanS;
      return `GET ${round(r.requests.get / s, 2)}, listing ${round(r.requests.list / s, 2)}, /limits ${round(r.requests.limits / s, 2)} per s`;
    };
    const by = (r: FleetSimRow): string =>
      Object.entries(r.ledgerCallsByMethod)
        .map(([m, x]) => `${m} ${x}`)
        .join(', ');
    const sameDay = bigWatched.jobs >= DAY_JOBS;
    const size = sameDay ? '' : ` (this run: ${bigWatched.jobs} jobs; --full runs the ${DAY_JOBS}-job day on both fleets)`;
    out.push(
      {
        target: `sim ${simLabel(bigWatched)}: Nova looks per second at most 1.2x the 30-host figure${size}`,
        measured: `${bigWatched.looksPerSecond} vs ${dayWatched.looksPerSecond} (${looks}x)`,
        held: looks <= 1.2,
        reason: `where the looks go: ${perS(bigWatched)} at ${bigWatched.hosts} hosts against ${perS(dayWatched)} at ${dayWatched.hosts}`,
      },
      {
        target: `sim ${simLabel(bigWatched)}: ledger calls per job at most 1.2x the 30-host figure (each one or more Redis commands in the Redis ledger)${size}`,
        measured: `${bigWatched.ledgerCallsPerJob} vs ${dayWatched.ledgerCallsPerJob} (${calls}x)`,
        held: calls <= 1.2,
        reason: `by call, per job: ${by(bigWatched)} at ${bigWatched.hosts} hosts against ${by(dayWatched)} at ${dayWatched.hosts}`,
      },
      sameDay
        ? {
            target: `sim ${simLabel(bigWatched)}: the day in under ${SCALE_WALL_LIMIT_S / 60} minutes of wall time`,
            measured: `${bigWatched.jobs} jobs in ${bigWatched.wallS} s wall (${bigWatched.cpuS} s CPU, ${round((bigWatched.cpuS / bigWatched.jobs) * 1000, 1)} ms CPU per job)`,
            held: bigWatched.wallS < SCALE_WALL_LIMIT_S,
            reason: `about ${round((bigWatched.cpuS / bigWatched.jobs) * 1000, 1)} ms of CPU per job on this shared 2-core machine (${bigWatched.requestsPerJob} requests and ${bigWatched.ledgerCallsPerJob} ledger calls per job through the real client, guard and FakeNova; docs/fleet-simulation.md gives the profile)`,
          }
        : notRun(
            `sim, ${bigWatched.hosts} hosts: the ${DAY_JOBS}-job day in under ${SCALE_WALL_LIMIT_S / 60} minutes of wall time`,
            `this run's ${bigWatched.jobs} jobs took ${bigWatched.wallS} s wall (${bigWatched.cpuS} s CPU, ${round((bigWatched.cpuS / bigWatched.jobs) * 1000, 1)} ms per job); --full runs the ${DAY_JOBS}-job day`,
          ),
    );
  }
  return out;
}
