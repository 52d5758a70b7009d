/**
 * `npm run bench`: the fleet-wait, churn, fleet-churn, overhead and simulation benchmarks of
 * nova-guard against a FakeNova on loopback (in a child process), each printed as a markdown table
 * with its targets (held / MISSED / not run) and written under `bench/results/`.
 *
 * Three modes: the default (quick, about 5 minutes on a 2-core machine) measures every target of
 * issue 31 at a smaller size or repetition (the fleet churn's target rows once each, a 2,000-job
 * simulated day); `--full` runs the whole set (every fleet-churn policy at 1/2/4/8 hosts with 3 runs
 * of the target rows, the 20,000-job day and the 300-host day); `--smoke` runs tiny sizes (for CI).
 * Each mode writes its own files: full `<name>.json`, `<name>.svg` and `summary.md` (the committed
 * results), quick `<name>.quick.*`, smoke `<name>.smoke.*`; every JSON records its `mode`, so a quick
 * run never overwrites the full results.
 *
 * `--only fleet,churn,hosts,overhead,sim` picks benchmarks; `sim` is the fleet simulation in
 * virtual time (`bench/fleetSim.ts`, also runnable alone: `node build/bench/fleetSimMain.js`).
 * `--hosts 4 --policies "200 ms,restarted"` runs only those numbers of hosts and the fleet-churn
 * policies whose names contain one of the words (e.g. the Redis ledger's network rows); a filtered
 * run writes `hosts.filtered.json`, never the mode's results. A run with `--only` writes the JSON
 * of what it ran and no summary.
 * `NOVA_GUARD_BENCH_REQUESTS=FILE` appends every request FakeNova answered to FILE and every request
 * each fleet-churn host sent (its number, method, URL, time) to `FILE.clients`, one JSON line each.
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { runChurn, type ChurnConfig, type ChurnRow } from './churn.js';
import { FakeNovaProcess } from './fakeProcess.js';
import { FLEET_POLICIES, REPEATED_POLICIES, runFleetChurn, summarise, type FleetChurnConfig, type FleetChurnRow, type FleetChurnSummary } from './fleetChurn.js';
import { onRedis, onSqlite, type FleetPolicy } from './fleetHost.js';
import { runFleet, type FleetConfig, type FleetRow } from './fleetWait.js';
import { runOverhead, type OverheadConfig, type OverheadResult } from './overhead.js';
import { drawResults } from './plot.js';
import { benchRedis } from './redisServer.js';
import { formatTargets, markdownTable, type TargetResult } from './table.js';
import { SIM_BOUND_NOTE, SIM_LEDGER_NOTE, runSim, simLabel, simLagTable, simRuns, simTable, simTargets, type SimMode } from './fleetSimReport.js';

const flags = new Command('bench')
  .option('--full', 'the full set: every fleet-churn policy at 1/2/4/8 hosts, 3 runs of the target rows, the 20,000-job day and the 300-host day (an hour or more here)')
  .option('--smoke', 'tiny sizes, for CI (a few minutes)')
  .option('--only <names>', 'comma-separated: fleet,churn,hosts,overhead,sim (default: all; a quick run leaves out churn, whose targets are not issue 31\'s)')
  .option('--hosts <counts>', 'fleet churn: comma-separated numbers of hosts (default: those of the mode)')
  .option('--policies <words>', 'fleet churn: comma-separated words; only the policies whose names contain one (default: those of the mode)')
  .option('--sim-jobs <n>', 'jobs of the 30-host simulated day (default: 2,000 quick, 20,000 full; the 300-host day has as many in a full run, 2,400 in a quick one)')
  .parse()
  .opts<{ full?: boolean; smoke?: boolean; only?: string; hosts?: string; policies?: string; simJobs?: string }>();
if (flags.full && flags.smoke) throw new Error('--full and --smoke: pick one');
const mode: SimMode = flags.smoke ? 'smoke' : flags.full ? 'full' : 'quick';
const smoke = mode === 'smoke';
const full = mode === 'full';
/** The mode's file names: the full run's are the committed results. */
const suffix = full ? '' : `.${mode}`;
const only = new Set((flags.only ?? (mode === 'quick' ? 'fleet,hosts,overhead,sim' : 'fleet,churn,hosts,overhead,sim')).split(',').map((s) => s.trim()));
/** The mode's whole set ran (no --only): the run writes its summary. */
const everything = flags.only === undefined;

/** osc-lib's 5 s interval is `INTERVAL_MS` here: fleet times are scaled by 5000 / INTERVAL_MS (more in the smoke run). */
const INTERVAL_MS = smoke ? 200 : 500;
const SCALE = 5000 / INTERVAL_MS;

const fleetCfg: FleetConfig = {
  sizes: smoke ? [1, 10] : full ? [1, 10, 100, 1000] : [1, 100],
  intervalMs: INTERVAL_MS,
  latencyMedianMs: 2 * INTERVAL_MS,
  latencySigma: 0.5,
  samples: smoke ? 10 : 200,
  groupSpreadMs: 25,
  maxRequestsPerSecond: 10 * SCALE,
  seed: 20261130,
};

/** Churn runs on its own scale (jobs of minutes): real seconds / CHURN_SCALE. */
const CHURN_SCALE = 100;
const churnCfg: ChurnConfig = {
  workers: smoke ? 3 : 8,
  jobsPerWorker: smoke ? 2 : 3,
  quotaCores: smoke ? 4 : 12,
  buildDelayMs: 30000 / CHURN_SCALE,
  runMs: (smoke ? 30000 : 180000) / CHURN_SCALE,
  deleteDelayMs: 10000 / CHURN_SCALE,
  deletedWindowMs: 2,
  pollIntervalMs: 5000 / CHURN_SCALE,
  autopkgtestSleepMs: (smoke ? 100000 : 300000) / CHURN_SCALE,
  scale: CHURN_SCALE,
};

/** Fleet churn: worker processes ("hosts") x 3 workers, the churn's timings, 4 cores of quota per host (demand 6). */
// nova-guard polls its BUILD server at the same interval as the other workers (autopkgtest-style
// polls every 5 s, scaled), so requests per job compare the coordination, not the poll rate.
const hostsChurn: ChurnConfig = { ...churnCfg, workers: 3, jobsPerWorker: smoke ? 2 : 3, guardActiveIntervalMs: churnCfg.pollIntervalMs };

const watcherOn = (p: FleetPolicy): boolean => p.includes('fleet watcher');
const onNetwork = (p: FleetPolicy): boolean => p.includes('200 ms') || p.includes('restarted');
/**
 * Issue 31's fleet-churn target rows: SQLite (with the fleet watcher, the default) at 2 and 4 hosts,
 * the Redis ledger with the fleet watcher at 4 and 8 hosts, and the autopkgtest-style baseline they
 * are compared with at those sizes.
 */
const TARGET_HOSTS = { sqlite: [2, 4], redis: [4, 8] } as const;
function targetRow(hosts: number, policy: FleetPolicy): boolean {
  if (policy === 'autopkgtest') return ([...TARGET_HOSTS.sqlite, ...TARGET_HOSTS.redis] as number[]).includes(hosts);
  return targetLedgerRow(hosts, policy);
}
function targetLedgerRow(hosts: number, policy: FleetPolicy): boolean {
  if (onSqlite(policy) && watcherOn(policy)) return (TARGET_HOSTS.sqlite as readonly number[]).includes(hosts);
  if (onRedis(policy) && watcherOn(policy) && !onNetwork(policy)) return (TARGET_HOSTS.redis as readonly number[]).includes(hosts);
  return false;
}
const hostCounts = flags.hosts ? flags.hosts.split(',').map((h) => Number(h.trim())) : smoke ? [1, 2] : full ? [1, 2, 4, 8] : [2, 4, 8];
/** Runs of the policies the targets are about, at each number of hosts (median and spread printed); 1 in a quick run. */
const HOSTS_RUNS = full ? 3 : 1;
/** Full: the baseline and the ledger rows the targets are about run HOSTS_RUNS times (with the Redis ledger without the watcher, as before). */
const HOSTS_REPEATED: readonly FleetPolicy[] = [...REPEATED_POLICIES, ...FLEET_POLICIES.filter((p) => onSqlite(p) && watcherOn(p) && !REPEATED_POLICIES.includes(p))];
const policyWords = flags.policies?.split(',').map((w) => w.trim());
/** A run filtered by --hosts or --policies: its results go to a file of their own. */
const filtered = flags.hosts !== undefined || policyWords !== undefined;
const QUOTA_CORES_PER_HOST = 4;

const overheadCfg: OverheadConfig = {
  pendingWaits: smoke ? 1000 : 10000,
  intervalMs: smoke ? 500 : 4000,
  ticks: smoke ? 2 : full ? 5 : 2,
};

function fleetTable(rows: FleetRow[]): string {
  return markdownTable(
    ['N', 'osc-lib req/deletion', 'nova-guard req/deletion', 'x fewer requests', 'osc-lib mean lag ms', 'nova-guard mean lag ms', 'mean lag ratio', 'osc-lib p95 lag ms', 'nova-guard p95 lag ms', 'p95 lag ratio'],
    rows.map((r) => [
      r.n,
      r.baseline.pollRequestsPerDeletion,
      r.novaGuard.pollRequestsPerDeletion,
      r.requestRatio,
      r.baseline.meanLagMs,
      r.novaGuard.meanLagMs,
      r.meanLagRatio,
      r.baseline.p95LagMs,
      r.novaGuard.p95LagMs,
      r.p95LagRatio,
    ]),
  );
}

function deleteServerTable(rows: FleetRow[]): string {
  return markdownTable(
    ['N', 'poll req/deletion', 'x fewer than osc-lib', 'mean lag ms', 'p95 lag ms', 'mean lag ratio'],
    rows.map((r) => [
      r.n,
      r.deleteServer.pollRequestsPerDeletion,
      Math.round((r.baseline.pollRequestsPerDeletion / r.deleteServer.pollRequestsPerDeletion) * 100) / 100,
      r.deleteServer.meanLagMs,
      r.deleteServer.p95LagMs,
      Math.round((r.deleteServer.meanLagMs / r.baseline.meanLagMs) * 1000) / 1000,
    ]),
  );
}

function fleetTargets(rows: FleetRow[]): TargetResult[] {
  const out: TargetResult[] = [];
  const at = (n: number): FleetRow | undefined => rows.find((r) => r.n === n);
  const r100 = at(100);
  if (r100) {
    out.push({
      target: 'N=100: at least 20x fewer poll requests than per-server polling',
      measured: `${r100.requestRatio}x`,
      held: r100.requestRatio >= 20,
      reason: 'one listing per tick costs more per deletion when deletions are few or short-lived',
    });
    out.push({
      target: 'N=100: mean detection lag equal or lower',
      measured: `${r100.novaGuard.meanLagMs} ms vs ${r100.baseline.meanLagMs} ms (ratio ${r100.meanLagRatio})`,
      held: r100.meanLagRatio <= 1,
    });
  }
  const r1 = at(1);
  if (r1) {
    out.push({
      target: 'N=1: no worse than per-server polling (requests per deletion, mean lag; 5 % measurement tolerance)',
      measured: `${r1.novaGuard.pollRequestsPerDeletion} vs ${r1.baseline.pollRequestsPerDeletion} req/deletion, ${r1.novaGuard.meanLagMs} vs ${r1.baseline.meanLagMs} ms`,
      held: r1.novaGuard.pollRequestsPerDeletion <= r1.baseline.pollRequestsPerDeletion * 1.05 && r1.meanLagRatio <= 1.05,
    });
  }
  const failures = rows.reduce((n, r) => n + r.baseline.failures + r.novaGuard.failures + r.deleteServer.failures, 0);
  out.push({ target: 'every wait ends deleted, never before the destroy', measured: `${failures} failures`, held: failures === 0 });
  return out;
}

function churnTable(rows: ChurnRow[]): string {
  return markdownTable(
    ['policy', 'jobs', 'failed jobs', 'quota 403s/job', 'requests/job', 'makespan ms', 'lower bound ms', 'makespan / lower bound'],
    rows.map((r) => [r.policy, r.jobs, r.failedJobs, r.quota403sPerJob, r.requestsPerJob, r.makespanMs, r.lowerBoundMs, r.makespanOverLowerBound]),
  );
}

function churnTargets(rows: ChurnRow[]): TargetResult[] {
  const g = rows.find((r) => r.policy === 'nova-guard');
  if (!g) return [];
  return [
    {
      target: 'churn, nova-guard: 0 failed jobs',
      measured: String(g.failedJobs),
      held: g.failedJobs === 0,
      reason: 'a worker gave up after QuotaGuard maxWaitMs (QuotaWaitTimeoutError): see the errors in bench/results/churn.json (a --full run)',
    },
    { target: 'churn, nova-guard: at most 0.2 quota 403s per job', measured: String(g.quota403sPerJob), held: g.quota403sPerJob <= 0.2 },
    {
      target: 'churn, nova-guard: makespan at most 1.10x the lower bound',
      measured: `${g.makespanOverLowerBound}x`,
      held: g.makespanOverLowerBound <= 1.1,
      reason:
        'while a new server is in BUILD it counts both in Nova\'s usage and in the guard\'s claim (the guard waits a little more than needed, ' +
        'never less), and waiters woken by another host\'s delete only notice it at their next backoff read',
    },
  ];
}

const spread = (range: [number, number]): string => (range[0] === range[1] ? '' : ` (${range[0]}–${range[1]})`);

function hostsTable(sums: FleetChurnSummary[]): string {
  return markdownTable(
    ['hosts', 'policy', 'runs', 'jobs', 'core quota', 'peak cores held', 'recheck ERRORs', 'failed jobs', 'quota 403s', 'servers left', 'requests/job (min–max)', 'POST', 'DELETE', 'GET server', 'listings', '/limits', 'makespan ms', 'lower bound ms', 'makespan / lower bound (min–max)', 'makespan / fluid bound'],
    sums.map((x) => {
      const r = x.median;
      const k = r.perJob;
      return [x.hosts, x.policy, x.runs, r.jobs, r.quotaCores, r.peakCores, r.recheckErrors, x.failedJobs, x.quota403s, x.serversLeft, `${x.medianRequestsPerJob}${spread(x.requestsPerJob)}`, k.post, k.delete, k.get, k.listing, k.limits, r.makespanMs, r.lowerBoundMs, `${r.makespanOverLowerBound}${spread(x.makespanOverLowerBound)}`, r.makespanOverFluidLowerBound];
    }),
  );
}

/** Where each run's makespan went: mean per event (ms) / share of the makespan (ms of 2 cores over the quota). */
function hostsLagTable(rows: FleetChurnRow[]): string {
  const cell = (l: { n: number; meanMs: number; makespanMs: number }): string => (l.n === 0 ? '–' : `${l.meanMs} / ${l.makespanMs}`);
  return markdownTable(
    ['hosts', 'policy', 'run', 'makespan ms', 'over the bound ms', '404 detection lag', 'wake-up lag', 'counted twice', '/limits waits', 'req/job', 'POST', 'DELETE', 'GET server', 'listings', '/limits'],
    rows
      .filter((r) => r.policy.startsWith('nova-guard'))
      .map((r) => [r.hosts, r.policy, r.run, r.makespanMs, r.makespanMs - r.lowerBoundMs, cell(r.lags.detection404), cell(r.lags.wakeUp), cell(r.lags.countedTwice), cell(r.lags.limitsWait), r.requestsPerJob, r.perJob.post, r.perJob.delete, r.perJob.get, r.perJob.listing, r.perJob.limits]),
  );
}

function hostsTargets(rows: FleetChurnRow[]): TargetResult[] {
  const out: TargetResult[] = [];
  const sums = summarise(rows);
  const short = (p: FleetPolicy): string => p.replace(/^nova-guard \((.*)\)$/, '$1');
  // The promise on every ledger row: nothing failed, over-committed, refused or left.
  for (const x of sums.filter((s) => onRedis(s.policy) || onSqlite(s.policy))) {
    const r = x.median;
    const name = `${x.hosts} host(s), ${short(x.policy)}${x.runs > 1 ? ` (${x.runs} runs)` : ''}`;
    const peak = Math.max(...rows.filter((y) => y.hosts === x.hosts && y.policy === x.policy).map((y) => y.peakCores));
    out.push(
      { target: `${name}: 0 failed jobs`, measured: String(x.failedJobs), held: x.failedJobs === 0, reason: r.errors.join('; ') },
      {
        target: `${name}: 0 over-commit (most cores held at once by servers that exist <= the quota)`,
        measured: `${peak} of ${r.quotaCores} cores`,
        held: peak <= r.quotaCores,
        reason: OVERCOMMIT_REASON,
      },
      { target: `${name}: 0 quota 403s`, measured: String(x.quota403s), held: x.quota403s === 0, reason: OVERCOMMIT_REASON },
      { target: `${name}: 0 servers left`, measured: String(x.serversLeft), held: x.serversLeft === 0 },
    );
  }
  // Issue 31: the target rows' makespan and requests per job against the baseline of the same run.
  for (const x of sums.filter((s) => targetLedgerRow(s.hosts, s.policy))) {
    const apt = sums.find((y) => y.hosts === x.hosts && y.policy === 'autopkgtest');
    const r = x.median;
    const l = r.lags;
    const name = `${x.hosts} host(s), ${short(x.policy)}`;
    const runs = x.runs > 1 ? ` (median of ${x.runs} runs)` : full ? '' : ' (1 run; --full: median of 3)';
    out.push({
      target: `${name}: makespan at most 1.10x the whole-job bound${runs}`,
      measured: `${r.makespanOverLowerBound}x${spread(x.makespanOverLowerBound)} (${r.makespanMs} ms vs ${r.lowerBoundMs} ms)`,
      held: r.makespanOverLowerBound <= 1.1,
      reason: `${MAKESPAN_REASON}; median run: ${r.makespanMs - r.lowerBoundMs} ms over the bound, 404 detection ${l.detection404.makespanMs} ms, wake-up ${l.wakeUp.makespanMs} ms, counted twice ${l.countedTwice.makespanMs} ms, /limits waits ${l.limitsWait.makespanMs} ms (shares of the makespan)`,
    });
    const deletes = `${l.detection404.n} of ${r.jobs - r.failedJobs} deletes returned after their wait (deleteServer(id, { wait: true }))`;
    out.push(
      apt
        ? {
            target: `${name}: Nova requests per job at most the autopkgtest-style worker's in the same run, every 404 awaited${runs}`,
            measured: `${x.medianRequestsPerJob}${spread(x.requestsPerJob)} vs ${apt.medianRequestsPerJob}${spread(apt.requestsPerJob)}; ${deletes}`,
            held: x.medianRequestsPerJob <= apt.medianRequestsPerJob,
            reason: `${REQUESTS_REASON}; median run per job: POST ${r.perJob.post}, DELETE ${r.perJob.delete}, GET ${r.perJob.get}, listings ${r.perJob.listing}, /limits ${r.perJob.limits}, other ${r.perJob.other}; the baseline's: POST ${apt.median.perJob.post}, DELETE ${apt.median.perJob.delete}, GET ${apt.median.perJob.get}, listings ${apt.median.perJob.listing} (${apt.quota403s} quota 403s, ${apt.failedJobs} failed jobs)`,
          }
        : { target: `${name}: Nova requests per job at most the autopkgtest-style worker's in the same run`, measured: 'no baseline', held: true, skipped: `the autopkgtest-style row did not run at ${x.hosts} hosts (--policies)` },
    );
  }
  if (!smoke) {
    // A target row that did not run (no redis-server, or --hosts/--policies) is said, not dropped.
    for (const [kind, hs] of Object.entries(TARGET_HOSTS)) {
      for (const h of hs) {
        if (!sums.some((x) => x.hosts === h && targetLedgerRow(h, x.policy) && (kind === 'sqlite' ? onSqlite(x.policy) : onRedis(x.policy)))) {
          out.push({ target: `${h} host(s), ${kind === 'sqlite' ? 'SQLite' : 'Redis'} ledger + fleet watcher: issue 31's fleet-churn targets`, measured: 'not run', held: true, skipped: kind === 'redis' ? 'no redis-server here, or left out by --hosts/--policies' : 'left out by --hosts/--policies' });
        }
      }
    }
  }
  return out;
}

/** Why a Redis-ledger host over-commits or meets quota 403s, as measured (issue 19). */
const OVERCOMMIT_REASON =
  'a ledger call that runs past ledgerTimeoutMs (several round trips each), or a Redis that is down, makes that create go on with the host\'s own in-process ledger, ' +
  "which does not see the other hosts' claims; Nova does not count their servers while they are scheduling, so its create check lets them through";

/** Why a Redis-ledger target is missed, as measured (request counts by kind in bench/results/hosts.json). */
const MAKESPAN_REASON =
  'the claim ends as soon as Nova counts the new server (past scheduling); what remains is the poll lag to see that, to see ACTIVE, and to see each ' +
  "delete's 404 before the quota is reused";
const REQUESTS_REASON =
  "nova-guard waits for the 404 of every delete before the quota is reused (Nova's own 404 for each server: a GET a job), reads /limits once per " +
  'confirmed deletion that a waiting create follows (the kept reading stops being fresh at every confirmed deletion), and each process reads its flavor once (other) ' +
  'and lists the project for a shortfall check every 5th wait; the autopkgtest-style worker deletes without waiting and pays in quota 403s and failed jobs instead: see bench/results/hosts.json';

function overheadTable(r: OverheadResult): string {
  return markdownTable(
    ['mode', 'pending waits', 'heap MB', 'heap per wait KB', 'of which server body KB', 'listing pages per tick', 'CPU per tick ms', 'CPU per tick per wait us'],
    [
      ['nova-guard (coalesced)', r.pendingWaits, r.coalesced.heapMB, r.coalesced.heapPerWaitKB, r.bodiesPerWaitKB, r.pagesPerTick, r.cpuPerTickMs, r.cpuPerTickPerWaitUs],
      ['per-server (coalesce: false)', r.perServer.waits, r.perServer.heapMB, r.perServer.heapPerWaitKB, r.bodiesPerWaitKB, '-', '-', '-'],
    ],
  );
}

function overheadTargets(r: OverheadResult): TargetResult[] {
  const limitMB = (50 * r.pendingWaits) / 10000;
  return [
    {
      target: `${r.pendingWaits} pending waits in under ${limitMB} MB of heap (50 MB per 10,000)`,
      measured: `${r.coalesced.heapMB} MB (${r.coalesced.heapPerWaitKB} KB per wait, ${r.bodiesPerWaitKB} KB of it the server body)`,
      held: r.coalesced.heapMB < limitMB,
      reason: 'a pending wait is a record in the engine, its promise and abort listener, and the last server body it keeps',
    },
  ];
}

/** Said at the top of the output: what this mode ran and what the others run. */
const MODE_NOTE: Record<SimMode, string> = {
  quick:
    "Quick run (the default, about 5 minutes on a 2-core machine): every target of issue 31 the fake benches carry, at a smaller size or repetition: fleet wait at N = 1 and 100, " +
    'the fleet churn\'s target rows once each, overhead over 2 ticks, no single-process churn (--only churn runs it), the simulated day at 2,000 jobs on 30 hosts and 2,400 (one per worker) on 300. `npm run bench -- --full` runs the rest ' +
    '(N up to 1,000, the single-process churn, every fleet-churn policy at 1/2/4/8 hosts with 3 runs of the target rows, and the 20,000-job day at 30 and at 300 hosts). Files: bench/results/*.quick.json, summary.quick.md.',
  full: 'Full run (`--full`): every size and repetition. Files: bench/results/*.json, *.svg and summary.md (the committed results).',
  smoke: 'Smoke run (`--smoke`, for CI): tiny sizes, targets printed but not the issue\'s sizes. Files: bench/results/*.smoke.json.',
};

/** The output's lines, for summary.md. */
const lines: string[] = [];
function say(text: string): void {
  console.log(text);
  lines.push(text);
}

function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${head} (with uncommitted changes to src/ or bench/)` : head;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

function summaryHeader(stamp: { mode: SimMode; date: string; commit: string }): string {
  return (
    `<!-- Written by \`npm run bench${stamp.mode === 'full' ? ' -- --full' : stamp.mode === 'smoke' ? ' -- --smoke' : ''}\` (${stamp.mode} run, ${stamp.date}, commit ${stamp.commit}): ` +
    'the whole output of that run; do not edit, run it again. -->\n\n'
  );
}

async function main(): Promise<void> {
  // build/bench/run.js -> bench/results/ in the repository
  const resultsDir = new URL('../../bench/results/', import.meta.url);
  mkdirSync(resultsDir, { recursive: true });
  const stamp = { mode, date: new Date().toISOString(), commit: gitCommit() };
  const write = (name: string, data: object): void => {
    writeFileSync(new URL(`${name}${suffix}.json`, resultsDir), JSON.stringify({ ...stamp, ...data }, null, 2) + '\n');
  };
  const fake = FakeNovaProcess.spawn();
  const targets: TargetResult[] = [];
  const measured: Parameters<typeof drawResults>[2] = {};
  const started = performance.now();
  try {
    say(`# nova-guard benchmarks: ${mode} run\n`);
    say(`${stamp.date}, commit ${stamp.commit}, node ${process.version}. ${MODE_NOTE[mode]}\n`);
    say(`Time is scaled: ${INTERVAL_MS} ms here = osc-lib's 5 s poll interval (x${SCALE}). FakeNova runs in a child process on loopback.\n`);
    if (only.has('fleet')) {
      const rows = await runFleet(fake, fleetCfg);
      const t = fleetTargets(rows);
      targets.push(...t);
      say(`## Fleet wait: N concurrent delete-waits on one client\n`);
      say(
        `Deletion latency log-normal (median ${fleetCfg.latencyMedianMs} ms, sigma ${fleetCfg.latencySigma}, seed ${fleetCfg.seed}); poll interval ${fleetCfg.intervalMs} ms for both; ` +
          `lag = promise resolved - server destroyed. Requests: GET /servers/{id} + listing pages per deletion (the DELETE itself excluded). ` +
          `${fleetCfg.samples} samples per N (independent clients at once when N is small).\n`,
      );
      say(fleetTable(rows) + '\n');
      say(
        `The same deletions through \`client.deleteServer(id, { wait: true })\` with its defaults (it resolves only at the 404; ` +
          `a server a listing no longer has is gone, one no listing had is confirmed by its own GET). Its DELETEs are paced by ` +
          `maxRequestsPerSecond (${fleetCfg.maxRequestsPerSecond}): with many at once a DELETE waits for its turn, and the latency drawn from the call counts that wait as lag:\n`,
      );
      say(deleteServerTable(rows) + '\n');
      say(formatTargets(t) + '\n');
      write('fleet', { config: fleetCfg, rows, targets: t });
      measured.fleet = rows;
    }
    if (only.has('churn')) {
      const rows = await runChurn(fake, churnCfg);
      const t = churnTargets(rows);
      targets.push(...t);
      say(`## Churn: ${churnCfg.workers} workers x ${churnCfg.jobsPerWorker} jobs of 2-core servers, core quota ${churnCfg.quotaCores}\n`);
      say(
        `Scaled x${CHURN_SCALE} (1 ms here = ${CHURN_SCALE} ms): build ${churnCfg.buildDelayMs} ms, test ${churnCfg.runMs} ms, asynchronous delete ${churnCfg.deleteDelayMs} ms ` +
          `(+${churnCfg.deletedWindowMs} ms DELETED window), polls every ${churnCfg.pollIntervalMs} ms, autopkgtest sleep ${churnCfg.autopkgtestSleepMs} ms, QuotaGuard defaults scaled. ` +
          `Lower bound = max(total core-time / quota, one worker's jobs back to back).\n`,
      );
      say(churnTable(rows) + '\n');
      say(formatTargets(t) + '\n');
      for (const r of rows) if (r.errors.length > 0) say(`${r.policy} errors: ${r.errors.join('; ')}\n`);
      write('churn', { config: churnCfg, rows, targets: t });
      measured.churn = rows;
    }
    if (only.has('hosts')) {
      const redis = await benchRedis();
      if (!redis) say('redis-server not found: the Redis-ledger rows are left out (scripts/redis/start.sh installs it)\n');
      const cfg: FleetChurnConfig = {
        churn: hostsChurn,
        hosts: hostCounts,
        quotaCoresPerHost: QUOTA_CORES_PER_HOST,
        redisUrl: redis?.url,
        redisLocal: redis?.local,
        policyWords,
        runs: HOSTS_RUNS,
        repeated: HOSTS_REPEATED,
        sqliteMaxHosts: 4,
        networkHosts: 4,
        ...(mode === 'quick' && policyWords === undefined ? { select: targetRow } : {}),
      };
      let rows: FleetChurnRow[];
      try {
        rows = await runFleetChurn(fake, cfg);
      } finally {
        redis?.stop();
      }
      const t = hostsTargets(rows);
      targets.push(...t);
      say(`## Fleet churn: hosts (worker processes) x ${hostsChurn.workers} workers x ${hostsChurn.jobsPerWorker} jobs of 2-core servers, core quota ${QUOTA_CORES_PER_HOST} per host\n`);
      say(
        `Each host is a child process with its own client (and guard); the quota is ${QUOTA_CORES_PER_HOST} cores per host against a demand of ${2 * hostsChurn.workers}, so the lower bound stays the same as hosts are added. The lower bound counts whole jobs: the quota runs floor(quota / 2) servers at once and one slot must run ceil(jobs / slots) jobs in a row (hosts.json keeps the fluid bound, total core-time over the quota, as fluidLowerBoundMs). ` +
          `Timings as the churn above. nova-guard (in-process ledger): each host coordinates only its own workers; nova-guard (Redis ledger): all hosts share one RedisQuotaLedger on a real redis-server; + fleet watcher: the same with fleetWatcher: true (one host looks for the others and publishes what it saw). ` +
          `At ${Math.max(...hostCounts)} hosts the Redis ledger runs twice more: with its Redis 200 ms away (a TCP proxy adding the round trip) and with its Redis restarted (empty) halfway through the lower bound ` +
          `(the bench's own redis-server only). Peak cores held: the most cores held at once by servers that existed (accepted, not yet destroyed, counted by Nova or not); above the quota is over-commit, which Nova answers with recheck ERRORs.\n`,
      );
      say(
        (mode === 'quick' && policyWords === undefined
          ? `Quick run: only issue 31's target rows, once each (SQLite + fleet watcher at ${TARGET_HOSTS.sqlite.join(' and ')} hosts, Redis + fleet watcher at ${TARGET_HOSTS.redis.join(' and ')} hosts, the autopkgtest-style baseline at each of those sizes); ` +
            `--full runs every policy at 1, 2, 4 and 8 hosts with ${HOSTS_REPEATED.length} of them 3 times. `
          : `${HOSTS_REPEATED.join(', ')}: ${HOSTS_RUNS} run(s) at each number of hosts, the median run shown (by makespan over the bound) with the spread over the runs (min–max); the other policies run once, ` +
            `the SQLite rows up to 4 hosts, the Redis network rows at 4 hosts. `) +
          `Requests per job by kind: POST, DELETE, GET /servers/{id}, listings (GET /servers/detail and GET /servers, every page), GET /limits.\n`,
      );
      say(hostsTable(summarise(rows)) + '\n');
      say(
        'Where each run\'s makespan goes (mean ms per event / its share of the makespan in ms: 2 cores x the time over the quota). 404 detection lag: the server destroyed to its deleteServer(wait) returning; ' +
          'wake-up lag: a delete returned while a create waited to the next POST accepted; counted twice: Nova counts the server to its claim ending (ledger rows only); /limits waits: time waiting for GET /limits answers.\n',
      );
      say(hostsLagTable(rows) + '\n');
      say(formatTargets(t) + '\n');
      for (const r of rows) if (r.errors.length > 0) say(`${r.hosts} host(s), ${r.policy} (run ${r.run}) errors: ${r.errors.join('; ')}\n`);
      write(filtered ? 'hosts.filtered' : 'hosts', { config: { ...cfg, select: cfg.select ? 'issue 31 target rows' : 'all' }, rows, targets: t });
      measured.hosts = rows;
    }
    if (only.has('overhead')) {
      const r = await runOverhead(fake, overheadCfg);
      const t = overheadTargets(r);
      targets.push(...t);
      say(`## Overhead: ${r.pendingWaits} pending waits on one client\n`);
      say(
        `Servers held in task_state deleting; waits with intervalMs ${overheadCfg.intervalMs} (coalesced ticks every ${overheadCfg.intervalMs / 2} ms), default maxRequestsPerSecond 10. ` +
          `Heap = this process's heapUsed after GC with the waits pending minus before; CPU = this process's user+system per tick (FakeNova runs in the child).\n`,
      );
      say(overheadTable(r) + '\n');
      say(formatTargets(t) + '\n');
      write('overhead', { config: overheadCfg, result: r, targets: t });
      measured.overhead = r;
    }
    if (only.has('sim')) {
      const runs = simRuns(mode, flags.simJobs ? Number(flags.simJobs) : undefined);
      const rows = await runSim(runs);
      const t = simTargets(rows, mode);
      targets.push(...t);
      const c = runs[0]!;
      const fleets = [...new Map(runs.map((r) => [r.hosts, r])).values()];
      say(`## Fleet simulation in virtual time: ${fleets.map((f) => `${f.hosts} hosts x ${f.workersPerHost} workers, ${f.quotaCores} cores, ${f.jobs} jobs`).join('; ')}\n`);
      if (!full && !smoke) say(`Quick run: a ${c.jobs}-job day at ${c.hosts} hosts and ${fleets[1]?.jobs ?? 0} jobs at ${fleets[1]?.hosts ?? 0} hosts; --full runs the 20,000-job day at 30 hosts (also without the fleet watcher) and at 300 hosts.\n`);
      say(
        `The real QuotaGuard and deleteServer(wait) per host (each host its own NovaClient and QuotaGuard) on one virtual clock, against a FakeNova with the real Nova's timings ` +
          `(BUILD ${c.model.buildMs} ms of which scheduling ${c.model.schedulingMs} ms, DELETED window ${c.model.windowAloneMs.join('-')} ms alone plus ${c.model.windowPerDeleteMs.join('-')} ms per other delete in flight, ` +
          `nova-api answers log-normal around ${c.model.apiMedianMs.read} ms for a read plus ${c.model.apiPerInFlightMs} ms per request in flight). ` +
          `Jobs: ${c.flavors.map((f) => `${Math.round(f.share * 100)} % ${f.cores}-core`).join(', ')}, tests log-normal (median ${c.testMedianMs / 1000} s, sigma ${c.testSigma}, at most ${c.testMaxMs / 1000} s), pulled from one queue. ` +
          `QuotaGuard runs with explainShortfall off (with it on, every waiting call lists the whole project every 5th wait). ${SIM_LEDGER_NOTE}\n`,
      );
      say(SIM_BOUND_NOTE + '\n');
      say(simTable(rows) + '\n');
      say('Where the makespan goes (mean seconds per job / makespan seconds = sum of cores x time over the quota):\n');
      say(simLagTable(rows) + '\n');
      say(formatTargets(t) + '\n');
      for (const r of rows) if (r.errors.length > 0) say(`${simLabel(r)} errors: ${r.errors.join('; ')}\n`);
      write('sim', { config: runs, rows, targets: t });
      measured.sim = rows;
    }
    if (!filtered) {
      const pictures = await drawResults(resultsDir, suffix, measured);
      say(`Pictures: ${pictures.map((f) => f.replace(/.*\/bench\//, 'bench/')).join(', ')}\n`);
    }
    const missed = targets.filter((t) => !t.held).length;
    say(`## Targets: ${targets.length - missed} held, ${missed} missed (${Math.round((performance.now() - started) / 1000)} s)\n`);
    say(formatTargets(targets));
    if (everything && !filtered) {
      writeFileSync(new URL(`summary${suffix}.md`, resultsDir), summaryHeader(stamp) + lines.join('\n') + '\n');
      console.log(`\nWritten: bench/results/summary${suffix}.md and the *${suffix}.json / *${suffix}.svg files of this ${mode} run.`);
    }
  } finally {
    await fake.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
