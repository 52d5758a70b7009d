/**
 * One real-Nova churn run's figures from its own measurements: the whole-job bound from the run's own
 * job times (the accepted POST, from the worker's client, to the 404, from the database witness
 * `rowWatch.ts`): at most floor(quota / cores) servers run at once, so some slot runs ceil(jobs /
 * slots) of them back to back (as `bench/fleetChurn.ts` bounds it); the fluid core-time bound beside
 * it; where the makespan goes; requests per job by kind from nova-api's access log.
 *
 * Where the makespan goes (each lag also as "makespan seconds": cores x lag / quota summed, the share
 * of the quota it leaves idle, as the fleet simulation counts them):
 * - 404 detection: the worker learning its server's 404 (its delete returned) minus the 404 at Nova
 *   (the row deleted); policies that wait for the 404 only;
 * - wake-up: a 404 at Nova while some create waited (asked, not yet POSTed) to the next POST anywhere;
 * - counted twice: from the row's appearance (Nova counts the server from there) to the guard ending
 *   the server's claim (the ledger's release as counted): the cores subtracted twice meanwhile; the
 *   lag counts the longest overlap with another create's wait (it costs only then), `wholeMedianMs`
 *   the whole span;
 * - fresh `/limits`: the worker's own `GET /limits` time while its create waited (the POST cannot go
 *   before the reading; overlaps the wake-up lag, which includes the reading after a deletion).
 *
 * @module
 */
import { round } from '../stats.js';
import type { JobTimes, WorkerReport } from './churnWorker.js';
import type { RowTrace } from './rowWatch.js';

/** One lag over a run's jobs. */
export interface Lag {
  n: number;
  medianMs: number;
  maxMs: number;
  /** Sum of cores x lag / quota, in seconds. */
  makespanS: number;
}

/** Requests per job by kind (nova-api's log). */
export interface KindsPerJob {
  post: number;
  delete: number;
  getServer: number;
  listings: number;
  limits: number;
  other: number;
}

export interface ChurnAnalysis {
  wholeJobBoundMs: number;
  fluidBoundMs: number;
  /** Longest worker's jobs back to back (POST to the 404, or to its delete's return when it did not wait). */
  longestChainMs: number;
  /** The slot bound: ceil(jobs / slots) of the shortest jobs back to back (see analyseChurn). */
  slotChainMs: number;
  lags: { detection404: Lag; wakeUp: Lag; countedTwice: Lag & { wholeMedianMs: number }; limitsWait: Lag };
  /** Servers a worker reported gone before the witness's last look that still saw the row. */
  reportedBefore404: number;
  /** Servers seen in vm_state error in nova_cell1 (the cell0 ones are counted by the caller). */
  errorRows: number;
  kinds: KindsPerJob;
  /** Jobs whose accepted POST or 404 could not be matched (left out of the bound). */
  unmatched: number;
}

function lag(values: Array<{ ms: number; cores: number }>, quota: number): Lag {
  const ms = values.map((v) => Math.max(0, v.ms)).sort((a, b) => a - b);
  return {
    n: ms.length,
    medianMs: ms.length ? Math.round(ms[Math.floor(ms.length / 2)]!) : 0,
    maxMs: ms.length ? Math.round(ms[ms.length - 1]!) : 0,
    makespanS: round(values.reduce((s, v) => s + (v.cores * Math.max(0, v.ms)) / quota, 0) / 1000, 1),
  };
}

/** Requests per job by kind, from nova-api's log counted by key (`byKind`: `GET /servers/{id} 404`, `GET /servers/detail?… 200`). */
export function kindsPerJob(requestKinds: Readonly<Record<string, number>>, jobs: number): KindsPerJob {
  const k: KindsPerJob = { post: 0, delete: 0, getServer: 0, listings: 0, limits: 0, other: 0 };
  for (const [key, n] of Object.entries(requestKinds)) {
    const [method, path] = key.split(' ') as [string, string];
    const kind = path.replace(/\?…$/, '');
    if (method === 'POST' && kind === '/servers') k.post += n;
    else if (method === 'DELETE' && kind === '/servers/{id}') k.delete += n;
    else if (method === 'GET' && kind === '/servers/{id}') k.getServer += n;
    else if (method === 'GET' && (kind === '/servers' || kind === '/servers/detail')) k.listings += n;
    else if (method === 'GET' && kind === '/limits') k.limits += n;
    else k.other += n;
  }
  return Object.fromEntries(Object.entries(k).map(([key, v]) => [key, round(v / jobs)])) as unknown as KindsPerJob;
}

interface Job extends JobTimes {
  worker: number;
  postAt?: number;
  row?: RowTrace;
}

/** The figures of one run. */
export function analyseChurn(reports: readonly WorkerReport[], rows: ReadonlyMap<string, RowTrace>, requestKinds: Readonly<Record<string, number>>, cfg: { quotaCores: number; coresPerJob: number; jobs: number; waitsFor404: boolean }): ChurnAnalysis {
  const jobs: Job[] = [];
  for (const r of reports) {
    for (const t of r.jobTimes ?? []) {
      const job: Job = { ...t, worker: r.worker };
      const until = t.activeAt ?? t.endAt;
      // The accepted POST of this job: the last 202 answered between its start and its server ACTIVE.
      const post = (r.requests ?? []).filter((q) => q.method === 'POST' && q.path === '/servers' && q.status === 202 && q.at >= t.createAt && q.at <= until).pop();
      if (post) job.postAt = post.at - post.ms;
      if (t.serverId) job.row = rows.get(t.serverId);
      jobs.push(job);
    }
  }
  const Q = cfg.quotaCores;
  const done = jobs.filter((j) => j.postAt !== undefined && j.row?.goneAt !== undefined);
  let coreMs = 0;
  let longestJob = 0;
  const chains = new Map<number, number>();
  for (const j of done) {
    const cores = j.row!.vcpus || cfg.coresPerJob;
    const held = j.row!.goneAt! - j.postAt!;
    coreMs += cores * held;
    longestJob = Math.max(longestJob, held);
    const end = cfg.waitsFor404 ? j.row!.goneAt! : Math.min(j.row!.goneAt!, j.goneAt ?? j.row!.goneAt!);
    chains.set(j.worker, (chains.get(j.worker) ?? 0) + (end - j.postAt!));
  }
  const fluidBoundMs = Math.round(coreMs / Q);
  const slots = Math.max(1, Math.floor(Q / cfg.coresPerJob));
  const longestChainMs = Math.round(Math.max(0, ...chains.values()));
  // At most `slots` servers at once, so the servers split into `slots` chains that never overlap
  // (an interval graph colours with as many colours as its largest overlap), and one of them holds
  // ceil(jobs / slots) servers back to back: at least the shortest POST-to-404 times of all but one
  // of them, plus the shortest POST-to-delete time (its job may end before its 404). As the fake
  // bench's bound ((rounds - 1) x hold + build + run), from this run's own times.
  const rounds = Math.ceil(done.length / slots);
  const helds = done.map((j) => j.row!.goneAt! - j.postAt!).sort((a, b) => a - b);
  const works = done.filter((j) => j.deleteAt !== undefined).map((j) => j.deleteAt! - j.postAt!);
  const slotChainMs = rounds > 0 ? helds.slice(0, rounds - 1).reduce((a, b) => a + b, 0) + Math.min(...works, helds[0] ?? 0) : 0;
  const wholeJobBoundMs = Math.round(Math.max(coreMs / (slots * cfg.coresPerJob), longestChainMs, longestJob, slotChainMs));

  const detection = cfg.waitsFor404 ? done.filter((j) => j.goneAt !== undefined).map((j) => ({ ms: j.goneAt! - j.row!.goneAt!, cores: j.row!.vcpus })) : [];
  const reportedBefore404 = cfg.waitsFor404 ? done.filter((j) => j.goneAt !== undefined && j.goneAt < j.row!.presentUntilSentAt).length : 0;
  const posts = jobs.filter((j) => j.postAt !== undefined).map((j) => j.postAt!).sort((a, b) => a - b);
  const wake: Array<{ ms: number; cores: number }> = [];
  for (const j of done) {
    const d = j.row!.goneAt!;
    const waiting = jobs.some((w) => w.createAt <= d && (w.postAt === undefined ? w.endAt > d : w.postAt > d));
    const next = posts.find((p) => p > d);
    if (waiting && next !== undefined) wake.push({ ms: next - d, cores: j.row!.vcpus });
  }
  // Counted twice costs only while another create waits (it could have been admitted on those cores).
  const waits = jobs.map((w) => [w.createAt, w.postAt ?? w.endAt] as const);
  const twice = done
    .filter((j) => j.claimEndAt !== undefined)
    .map((j) => ({ ms: waits.filter((w) => w[0] !== j.createAt).reduce((m, [a, b]) => Math.max(m, Math.min(b, j.claimEndAt!) - Math.max(a, j.row!.seenAt)), 0), whole: j.claimEndAt! - j.row!.seenAt, cores: j.row!.vcpus }));
  const limitsWait: Array<{ ms: number; cores: number }> = [];
  for (const r of reports) {
    for (const t of r.jobTimes ?? []) {
      const job = jobs.find((j) => j.name === t.name)!;
      const until = job.postAt ?? t.activeAt ?? t.endAt;
      const ms = (r.requests ?? []).filter((q) => q.method === 'GET' && q.path === '/limits' && q.at >= t.createAt && q.at - q.ms <= until).reduce((s, q) => s + q.ms, 0);
      limitsWait.push({ ms, cores: cfg.coresPerJob });
    }
  }
  return {
    wholeJobBoundMs,
    fluidBoundMs,
    longestChainMs,
    slotChainMs: Math.round(slotChainMs),
    lags: { detection404: lag(detection, Q), wakeUp: lag(wake, Q), countedTwice: { ...lag(twice, Q), wholeMedianMs: lag(twice.map((t) => ({ ms: t.whole, cores: t.cores })), Q).medianMs }, limitsWait: lag(limitsWait, Q) },
    reportedBefore404,
    errorRows: [...rows.values()].filter((r) => r.everError).length,
    kinds: kindsPerJob(requestKinds, cfg.jobs),
    unmatched: jobs.length - done.length,
  };
}

/** The cause of a missed makespan target: the lag that costs the most makespan seconds. */
export function missCause(a: ChurnAnalysis, makespanMs: number, target = 1.1): string {
  if (makespanMs <= target * a.wholeJobBoundMs) return '';
  const over = round((makespanMs - a.wholeJobBoundMs) / 1000, 1);
  const named: Array<[string, Lag]> = [
    ['404 detection lag', a.lags.detection404],
    ['wake-up lag', a.lags.wakeUp],
    ['counted twice', a.lags.countedTwice],
    ['waits for a fresh /limits', a.lags.limitsWait],
  ];
  const [name, worst] = named.sort((x, y) => y[1].makespanS - x[1].makespanS)[0]!;
  return `${over} s over the bound; largest: ${name} (${worst.makespanS} makespan s, median ${worst.medianMs} ms)`;
}

/** A run's bound fields from its analysis: the whole-job and fluid bounds, the makespan over each (3 decimals) and the cause of a miss. */
export function boundFields(analysis: ChurnAnalysis, makespanMs: number): { analysis: ChurnAnalysis; lowerBoundMs: number; makespanOverLowerBound: number; fluidBoundMs: number; makespanOverFluidBound: number; missCause: string } {
  return {
    analysis,
    lowerBoundMs: analysis.wholeJobBoundMs,
    makespanOverLowerBound: round(makespanMs / analysis.wholeJobBoundMs, 3),
    fluidBoundMs: analysis.fluidBoundMs,
    makespanOverFluidBound: round(makespanMs / analysis.fluidBoundMs, 3),
    missCause: missCause(analysis, makespanMs),
  };
}
