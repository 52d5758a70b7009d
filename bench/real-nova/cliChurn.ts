/**
 * Shell workers on the real Nova: separate `nova-guard` CLI processes sharing one SQLite ledger file
 * (issue 21's target: 0 quota 403s and 0 servers put in ERROR by Nova's quota recheck). Each of
 * `workers` workers runs `jobs` jobs one after the other, each job one run of `examples/shell-worker.sh`
 * (`server create --wait` through the guard, `server show`, sleep, `server delete --wait`, every step
 * its own CLI process), with `NOVA_GUARD_LEDGER=sqlite:DIR/` for all of them, on a project with a
 * small cores quota and a demand above it (1- and 2-vCPU flavors, see {@link flavorOf}).
 *
 * Measured per run:
 * - failed jobs: shell-worker.sh exit codes; servers left: the project's servers after the run;
 * - quota 403s: `POST /servers` answered 403 in nova-api's access log between marks (the requests too);
 * - servers put in ERROR: the project's instance rows in `nova_cell0` (where Nova's conductor puts a
 *   server its quota recheck refused, with its other scheduling failures) and rows with `vm_state`
 *   `error` in `nova_cell1` (the harness's MariaDB);
 * - makespan: the first job's start to the last job's end (shell-worker.sh process times);
 * - whole-job bound: each run's own job times, POST to 404, from the instance rows (`created_at` to
 *   `deleted_at`, whole seconds: the cell's row is written after scheduling, so a job's time is
 *   slightly short and the bound errs low): max(the longest worker's jobs back to back, total
 *   core-time / quota); the fluid bound (core-time / quota) beside it.
 *
 * Used by `run.ts --only cli-sqlite` (`npm run bench:real-nova`) and `test/integration/cliSqliteChurn.test.ts`.
 *
 * @module
 */
import { round } from '../stats.js';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BenchProject, byKind, NovaApiLog, REPO, STATE, type Harness } from './harness.js';

/** Settings of one run. */
export interface CliChurnConfig {
  workers: number;
  jobsPerWorker: number;
  quotaCores: number;
  /** The "test" on each server (shell-worker.sh's RUN_SECONDS). */
  runSeconds: number;
  /** Interval of the delete's polls (shell-worker.sh's POLL_INTERVAL, a CLI duration). */
  pollInterval: string;
}

export const CLI_CHURN: CliChurnConfig = { workers: 6, jobsPerWorker: 4, quotaCores: 10, runSeconds: 3, pollInterval: '1s' };

/** One run's figures. */
export interface CliChurnRow {
  run: number;
  jobs: number;
  failedJobs: number;
  quota403s: number;
  /** Quota 403s the CLI reported itself (its "retrying the create" lines naming a quota). */
  quota403sSeenByCli: number;
  serversCreated: number;
  /** Servers in ERROR: nova_cell0 rows (quota recheck, scheduling) plus nova_cell1 rows with vm_state error. */
  errorServers: number;
  serversLeft: number;
  makespanMs: number;
  wholeJobBoundMs: number;
  fluidBoundMs: number;
  makespanOverBound: number;
  /** Most cores held at once by the project's servers (instance rows, whole seconds). */
  peakCores: number;
  requests: number;
  requestsPerJob: number;
  requestKinds: Record<string, number>;
  errors: string[];
}

const run = promisify(execFile);

/** Where the run finds the repository (examples/shell-worker.sh, dist/cli/main.js) and the harness's state folder (its MariaDB socket, nova-api's log). */
export interface CliChurnPlaces {
  repo: string;
  state: string;
}

/** SQL on the harness's MariaDB; rows of tab-separated fields. */
export async function sql(state: string, database: string, statement: string): Promise<string[][]> {
  const socket = join(state, 'mysql', 'mysqld.sock');
  const { stdout } = await run('mysql', [`--socket=${socket}`, '-u', 'root', '-N', '-B', database, '-e', statement], { timeout: 30_000 });
  return stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'));
}

/** Job `j` of worker `w`: one worker per round of jobs takes the 1-vCPU flavor, the others 2 vCPUs (demand 11 cores per round for 6 workers). */
export function flavorOf(nova: Harness, workers: number, w: number, j: number): string {
  return (w + j) % workers === 0 ? nova.flavor1 : nova.flavor2;
}

interface Job {
  worker: number;
  job: number;
  startedAt: number;
  endedAt: number;
  code: number | null;
  stderr: string;
}

function shellJob(repo: string, env: NodeJS.ProcessEnv, worker: number, job: number): Promise<Job> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const child = spawn('bash', [join(repo, 'examples', 'shell-worker.sh'), `cli-w${worker}-j${job}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => resolve({ worker, job, startedAt, endedAt: Date.now(), code, stderr }));
  });
}

/** One run on a fresh project and a fresh ledger directory; progress on stderr. */
export async function runCliChurn(nova: Harness, runNumber: number, cfg: CliChurnConfig = CLI_CHURN, places: CliChurnPlaces = { repo: REPO, state: STATE }): Promise<CliChurnRow> {
  const p = new BenchProject(nova, `cli-sqlite-${Date.now().toString(36)}`);
  const log = new NovaApiLog(join(places.state, 'logs', 'nova-api.log'));
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-cli-churn-'));
  try {
    await p.cleanup();
    await p.setQuota({ cores: cfg.quotaCores, instances: -1, ram: -1 });
    const base: NodeJS.ProcessEnv = { ...process.env, NOVA_ENDPOINT: nova.endpoint, NOVA_TOKEN: p.memberToken, NOVA_GUARD: `${process.execPath} ${join(places.repo, 'dist', 'cli', 'main.js')}`, NOVA_GUARD_LEDGER: `sqlite:${dir}/`, IMAGE: nova.imageId, RUN_SECONDS: String(cfg.runSeconds), POLL_INTERVAL: cfg.pollInterval };
    for (const k of Object.keys(base)) if (k.startsWith('OS_')) delete base[k];
    const from = await log.settle();
    const jobs = (
      await Promise.all(
        Array.from({ length: cfg.workers }, async (_, w) => {
          const done: Job[] = [];
          for (let j = 0; j < cfg.jobsPerWorker; j++) done.push(await shellJob(places.repo, { ...base, FLAVOR: flavorOf(nova, cfg.workers, w, j) }, w, j));
          return done;
        }),
      )
    ).flat();
    const to = await log.settle();
    const requests = log.since(from, to);
    const project = p.name.replace(/'/g, "''");
    const rows = await sql(places.state, 'nova_cell1', `SELECT display_name, vcpus, UNIX_TIMESTAMP(created_at), COALESCE(UNIX_TIMESTAMP(deleted_at), -1), vm_state, deleted FROM instances WHERE project_id = '${project}'`);
    const cell0 = await sql(places.state, 'nova_cell0', `SELECT COUNT(*) FROM instances WHERE project_id = '${project}'`);
    const servers = rows.map(([name, vcpus, created, deleted, vmState, gone]) => ({ worker: Number(/^cli-w(\d+)-/.exec(name!)?.[1] ?? -1), vcpus: Number(vcpus), createdS: Number(created), deletedS: Number(deleted), vmState: vmState!, left: gone === '0' }));
    // The whole-job bound from this run's own POST-to-404 times.
    let coreS = 0;
    const chainS = new Map<number, number>();
    const edges: Array<[number, number]> = [];
    for (const s of servers) {
      if (s.deletedS < 0) continue;
      const t = s.deletedS - s.createdS;
      coreS += s.vcpus * t;
      chainS.set(s.worker, (chainS.get(s.worker) ?? 0) + t);
      edges.push([s.createdS, s.vcpus], [s.deletedS, -s.vcpus]);
    }
    let held = 0;
    let peakCores = 0;
    for (const [, d] of edges.sort((a, b) => a[0] - b[0] || a[1] - b[1])) peakCores = Math.max(peakCores, (held += d));
    const fluidBoundMs = Math.round((coreS * 1000) / cfg.quotaCores);
    const wholeJobBoundMs = Math.max(fluidBoundMs, Math.max(0, ...chainS.values()) * 1000);
    const makespanMs = Math.max(...jobs.map((j) => j.endedAt)) - Math.min(...jobs.map((j) => j.startedAt));
    const total = cfg.workers * cfg.jobsPerWorker;
    const failed = jobs.filter((j) => j.code !== 0);
    const row: CliChurnRow = {
      run: runNumber,
      jobs: total,
      failedJobs: failed.length,
      quota403s: requests.filter((r) => r.method === 'POST' && r.kind === '/servers' && r.status === 403).length,
      quota403sSeenByCli: jobs.reduce((n, j) => n + (j.stderr.match(/retrying the create in [\d.]+ s \(quota/g)?.length ?? 0), 0),
      serversCreated: requests.filter((r) => r.method === 'POST' && r.kind === '/servers' && r.status === 202).length,
      errorServers: Number(cell0[0]?.[0] ?? 0) + servers.filter((s) => s.vmState === 'error').length,
      serversLeft: servers.filter((s) => s.left).length,
      makespanMs,
      wholeJobBoundMs,
      fluidBoundMs,
      makespanOverBound: round(makespanMs / wholeJobBoundMs, 3),
      peakCores,
      requests: requests.length,
      requestsPerJob: round(requests.length / total),
      requestKinds: byKind(requests),
      errors: failed.slice(0, 4).map((j) => `w${j.worker} j${j.job} exit ${String(j.code)}: ${j.stderr.trim().split('\n').slice(-3).join(' | ')}`),
    };
    process.stderr.write(`cli-sqlite run ${runNumber}: ${JSON.stringify({ ...row, requestKinds: undefined })}\n`);
    return row;
  } finally {
    await p.cleanup().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The note printed above the table. */
export function cliChurnNote(cfg: CliChurnConfig = CLI_CHURN): string {
  return (
    `${cfg.workers} shell workers (examples/shell-worker.sh, every step its own nova-guard CLI process) x ${cfg.jobsPerWorker} jobs, ` +
    `NOVA_GUARD_LEDGER=sqlite:DIR/ shared, core quota ${cfg.quotaCores} (instances, RAM unlimited), one worker per round on 1 vCPU and the others on 2 ` +
    `(${cfg.workers * 2 - 1} cores demanded per round), test ${cfg.runSeconds} s, delete polls every ${cfg.pollInterval}. Quota 403s and requests: nova-api's access log; ` +
    `ERROR servers: the project's nova_cell0 rows and nova_cell1 rows in vm_state error; whole-job bound: max(longest worker's POST-to-404 times back to back, core-time / quota) from the run's instance rows (whole seconds).`
  );
}
