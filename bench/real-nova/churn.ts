/**
 * Part B of the real-Nova bench: the churn with ONE PROCESS PER WORKER (churnWorker.ts) on the real Nova:
 * 6 workers x 4 jobs of 2-vCPU servers against a 10-core quota, one policy after the other on a clean
 * project, `runs` times (policies interleaved). Failed jobs come from the workers; quota 403s (`POST
 * /servers` answered 403) and requests from nova-api's access log between marks. Whole-job bound: each
 * run's own job times, the accepted POST to the 404 (`churnAnalysis.ts`, the database witness
 * `rowWatch.ts`), as `bench/fleetChurn.ts` and `bench/fleetSim.ts` do; the fluid core-time bound beside
 * it; the bound from one server built and deleted alone (calibrated at the start) is printed as context.
 *
 * For nova-guard-redis a redis-server is started on a free loopback port (no persistence) unless
 * `--ledger` names one.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForActive } from 'nova-guard';
import type { WorkerReport } from './churnWorker.js';
import { benchRedis, type BenchRedis } from '../redisServer.js';
import { round } from '../stats.js';
import { analyseChurn, boundFields, type ChurnAnalysis } from './churnAnalysis.js';
import { sql } from './cliChurn.js';
import { BenchProject, byKind, NovaApiLog, STATE, type Harness } from './harness.js';
import { ProjectRowWatcher, type RowTrace } from './rowWatch.js';

export const CHURN_POLICIES = ['naive', 'autopkgtest', 'nova-guard', 'nova-guard-redis', 'nova-guard-redis-fleet'] as const;
export type ChurnPolicy = (typeof CHURN_POLICIES)[number];

/** Settings (ms). */
export const CHURN = {
  workers: 6,
  jobsPerWorker: 4,
  quotaCores: 10,
  coresPerJob: 2,
  runMs: 8000,
  pollIntervalMs: 1000,
  /** autopkgtest's 300 s sleep and QuotaGuard's backoff delays, divided by this. */
  scale: 20,
};

export interface RealChurnRow {
  policy: ChurnPolicy;
  run: number;
  jobs: number;
  failedJobs: number;
  quota403s: number;
  /** `POST /servers` answered 202 (nova-api's log). */
  serversCreated: number;
  /** Servers created that no job used: created minus completed jobs (they went ERROR, mostly Nova's quota recheck). */
  createdNotUsed: number;
  /** ERROR servers the naive and autopkgtest workers saw in their own waits (nova-guard's are handled inside QuotaGuard). */
  errorServers: number;
  /** Servers in ERROR: the project's nova_cell0 rows (Nova's quota recheck, scheduling) plus nova_cell1 rows in vm_state error. */
  errorRowsInNova: number;
  makespanMs: number;
  /** The run's own whole-job bound (churnAnalysis.ts). */
  lowerBoundMs: number;
  makespanOverLowerBound: number;
  fluidBoundMs: number;
  makespanOverFluidBound: number;
  /** The bound from the calibration of one server alone (context). */
  calibratedBoundMs: number;
  analysis: ChurnAnalysis;
  /** Empty when makespan is within 1.10x the bound; else the largest lag. */
  missCause: string;
  requests: number;
  requestsPerJob: number;
  requestKinds: Record<string, number>;
  errors: string[];
  /** The raw material: each worker's job times and requests, and the witness's rows. */
  raw: { reports: WorkerReport[]; rows: RowTrace[] };
}

export interface RealChurnResult {
  config: typeof CHURN;
  calibration: { buildMs: number; deleteMs: number };
  note: string;
  rows: RealChurnRow[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One 2-vCPU server alone, twice: POST to ACTIVE, DELETE to 404 (the lower bound's times). */
async function calibrate(p: BenchProject): Promise<{ buildMs: number; deleteMs: number }> {
  const builds: number[] = [];
  const deletes: number[] = [];
  for (let i = 0; i < 2; i++) {
    let t = performance.now();
    const s = await p.admin.createServer({ name: `churn-calibrate-${i}`, flavorRef: p.nova.flavor2, imageRef: p.nova.imageId, networks: 'none' });
    const r = await waitForActive(p.admin, s.id, { intervalMs: 200, timeoutMs: 120_000, jitter: 0 });
    if (r.outcome !== 'active') throw new Error(`calibration server ${s.id}: ${r.outcome}`);
    builds.push(performance.now() - t);
    t = performance.now();
    await p.admin.deleteServer(s.id, { wait: true, intervalMs: 200, timeoutMs: 120_000 });
    deletes.push(performance.now() - t);
  }
  return { buildMs: Math.round(median(builds)), deleteMs: Math.round(median(deletes)) };
}

/** redis-server on a free loopback port, no persistence (bench/redisServer.ts). */
async function startRedis(): Promise<BenchRedis> {
  const redis = await benchRedis();
  if (!redis) throw new Error('nova-guard-redis needs redis-server (scripts/redis/start.sh installs it) or --ledger redis://...');
  return redis;
}

function runWorker(p: BenchProject, policy: ChurnPolicy, worker: number, ledger: string | undefined): Promise<WorkerReport> {
  const args = [
    join(import.meta.dirname, 'churnWorker.js'),
    '--policy', policy,
    '--worker', String(worker),
    '--jobs', String(CHURN.jobsPerWorker),
    '--run-ms', String(CHURN.runMs),
    '--poll-ms', String(CHURN.pollIntervalMs),
    '--sleep-ms', String(300_000 / CHURN.scale),
    '--scale', String(CHURN.scale),
    ...(ledger ? ['--ledger', ledger] : []),
  ];
  const env = { ...process.env, NOVA_ENDPOINT: p.nova.endpoint, NOVA_TOKEN: p.memberToken, CHURN_FLAVOR: p.nova.flavor2, CHURN_IMAGE: p.nova.imageId };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop()!) as WorkerReport);
      } catch {
        const now = Date.now();
        const msg = `worker ${worker} exited ${String(code)}: ${stderr.trim().split('\n').slice(0, 3).join(' | ')}`;
        resolve({ worker, policy, jobs: CHURN.jobsPerWorker, failed: CHURN.jobsPerWorker, quota403sSeen: 0, errorServers: 0, startedAt: now, endedAt: now, errors: [msg], jobTimes: [], requests: [] });
      }
    });
  });
}

/** Run each policy in turn; logs progress to stderr. */
export async function runRealChurn(nova: Harness, policies: readonly ChurnPolicy[], ledgerUrl?: string, runs = 1): Promise<RealChurnResult> {
  const p = new BenchProject(nova, 'bench-churn');
  const log = new NovaApiLog();
  await p.cleanup();
  await p.setQuota({ cores: 200, instances: -1, ram: -1 });
  const calibration = await calibrate(p);
  const jobs = CHURN.workers * CHURN.jobsPerWorker;
  const holdMs = calibration.buildMs + CHURN.runMs + calibration.deleteMs;
  const calibratedBoundMs = Math.round(Math.max(CHURN.jobsPerWorker * (calibration.buildMs + CHURN.runMs), (jobs * CHURN.coresPerJob * holdMs) / CHURN.quotaCores));
  const rows: RealChurnRow[] = [];
  let redis: BenchRedis | undefined;
  try {
    for (let run = 1; run <= runs; run++) for (const policy of policies) {
      let ledger: string | undefined;
      if (policy === 'nova-guard-redis' || policy === 'nova-guard-redis-fleet') {
        if (!ledgerUrl && !redis) redis = await startRedis();
        ledger = ledgerUrl ?? redis!.url;
      }
      await p.cleanup();
      await p.setQuota({ cores: CHURN.quotaCores, instances: -1, ram: -1 });
      const from = await log.settle();
      const witness = new ProjectRowWatcher(join(STATE, 'mysql', 'mysqld.sock'), p.name);
      witness.start();
      const reports = await Promise.all(Array.from({ length: CHURN.workers }, (_, w) => runWorker(p, policy, w, ledger)));
      const to = await log.settle();
      await witness.stop();
      if (witness.failure) throw witness.failure;
      const requests = log.since(from, to);
      const startedS = Math.floor(Math.min(...reports.map((r) => r.startedAt)) / 1000) - 1;
      const cell0 = await sql(STATE, 'nova_cell0', `SELECT COUNT(*) FROM instances WHERE project_id = '${p.name}' AND created_at >= FROM_UNIXTIME(${startedS})`);
      const analysis = analyseChurn(reports, witness.rows, byKind(requests), { quotaCores: CHURN.quotaCores, coresPerJob: CHURN.coresPerJob, jobs, waitsFor404: policy.startsWith('nova-guard') });
      const failedJobs = reports.reduce((n, r) => n + r.failed, 0);
      const serversCreated = requests.filter((r) => r.method === 'POST' && r.kind === '/servers' && r.status === 202).length;
      const makespanMs = Math.max(...reports.map((r) => r.endedAt)) - Math.min(...reports.map((r) => r.startedAt));
      const row: RealChurnRow = {
        policy,
        run,
        jobs,
        failedJobs,
        quota403s: requests.filter((r) => r.method === 'POST' && r.kind === '/servers' && r.status === 403).length,
        serversCreated,
        createdNotUsed: serversCreated - (jobs - failedJobs),
        errorServers: reports.reduce((n, r) => n + r.errorServers, 0),
        errorRowsInNova: Number(cell0[0]?.[0] ?? 0) + analysis.errorRows,
        makespanMs,
        ...boundFields(analysis, makespanMs),
        calibratedBoundMs,
        requests: requests.length,
        requestsPerJob: round(requests.length / jobs),
        requestKinds: byKind(requests),
        errors: [...new Set(reports.flatMap((r) => r.errors))].slice(0, 4),
        raw: { reports, rows: [...witness.rows.values()] },
      };
      rows.push(row);
      process.stderr.write(`churn run ${run} ${policy}: ${JSON.stringify({ ...row, requestKinds: undefined, raw: undefined })}\n`);
      await sleep(1000);
    }
  } finally {
    await p.cleanup().catch(() => undefined);
    await redis?.stop();
  }
  const note =
    `${CHURN.workers} worker processes x ${CHURN.jobsPerWorker} jobs, 2-vCPU servers, core quota ${CHURN.quotaCores} (instances, RAM unlimited); ` +
    `test ${CHURN.runMs} ms, polls every ${CHURN.pollIntervalMs} ms, autopkgtest sleep ${300_000 / CHURN.scale} ms, QuotaGuard backoff delays / ${CHURN.scale}. ` +
    `Whole-job bound per run from the run's own times (accepted POST to the 404 at Nova, the instance row's deletion seen every 100 ms): ` +
    `max(ceil(jobs / slots) of the shortest jobs back to back (the last to its delete), longest worker's jobs back to back, core-time / quota); fluid bound = core-time / quota. ` +
    `Context: one server alone built in ${calibration.buildMs} ms and deleted to 404 in ${calibration.deleteMs} ms gives ${calibratedBoundMs} ms. ` +
    `Quota 403s and requests: nova-api's access log.`;
  return { config: CHURN, calibration, note, rows };
}
