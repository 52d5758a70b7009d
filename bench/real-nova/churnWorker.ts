/**
 * One churn worker as its own process ("host"): runs `--jobs` jobs (create a server, wait until ACTIVE,
 * "test" `--run-ms`, delete it) under one policy, then prints one JSON line (WorkerReport) on stdout.
 *
 *   node build/bench/real-nova/churnWorker.js --policy naive|autopkgtest|nova-guard|nova-guard-redis|nova-guard-redis-fleet
 *     --worker 0 --jobs 4 --run-ms 8000 --poll-ms 1000 --sleep-ms 15000 --scale 20 [--ledger redis://...]
 *
 * Nova: NOVA_ENDPOINT, NOVA_TOKEN, CHURN_FLAVOR, CHURN_IMAGE from the environment. Policies as in
 * `bench/churn.ts`:
 * - naive: create; any error fails the job; delete without waiting.
 * - autopkgtest: `ssh-setup/nova`'s loop: up to 3 attempts with a fixed sleep whatever the error (a server
 *   that did not become ACTIVE is deleted first); delete without waiting.
 * - nova-guard: `QuotaGuard.createServer` with the in-process ledger (the default), then
 *   `deleteServer(id, { wait: true })`.
 * - nova-guard-redis: the same with `RedisQuotaLedger` from `nova-guard/redis` ({@link redisGuard}).
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { NovaApiError, NovaClient, QuotaGuard, waitForActive, type QuotaGuardOptions } from 'nova-guard';
import { MICROVERSION } from './harness.js';

/** What a worker prints when done. */
export interface WorkerReport {
  worker: number;
  policy: string;
  jobs: number;
  failed: number;
  /** Quota 403s this worker saw itself (nova-guard retries its own: nova-api's log counts those). */
  quota403sSeen: number;
  /** Servers of this worker that went ERROR (Nova's quota recheck, or anything else). */
  errorServers: number;
  /** Epoch ms of the first job's start and the last job's end. */
  startedAt: number;
  endedAt: number;
  errors: string[];
  /** Each job's times (epoch ms), for the per-run bound and where the makespan goes. */
  jobTimes: JobTimes[];
  /** Every request this worker's client sent (the client's debug log line 'nova request'). */
  requests: RequestTimes[];
}

/** One job's times, epoch ms. */
export interface JobTimes {
  name: string;
  serverId?: string | undefined;
  /** The job asked for a server (the guard's createServer called). */
  createAt: number;
  /** The server was ACTIVE for the job (createServer returned). */
  activeAt?: number | undefined;
  /** The guard ended the server's claim as counted (Redis policies: the ledger's release). */
  claimEndAt?: number | undefined;
  /** The job asked for the delete. */
  deleteAt?: number | undefined;
  /** The delete returned (nova-guard: the 404 learned; the others: DELETE answered). */
  goneAt?: number | undefined;
  endAt: number;
}

/** One request the worker's client sent: answered at `at` after `ms`. */
export interface RequestTimes {
  at: number;
  ms: number;
  method: string;
  path: string;
  status: number;
}

const opts = new Command('churnWorker')
  .requiredOption('--policy <name>')
  .option('--worker <n>', 'worker number', '0')
  .option('--jobs <n>', 'jobs to run', '4')
  .option('--run-ms <ms>', 'the "test" on each server', '8000')
  .option('--poll-ms <ms>', 'poll interval of BUILD and delete waits', '1000')
  .option('--sleep-ms <ms>', "autopkgtest's fixed sleep between create attempts (300 s, scaled)", '15000')
  .option('--scale <x>', 'QuotaGuard backoff delays are its defaults divided by this', '20')
  .option('--ledger <url>', 'Redis URL (nova-guard-redis)')
  .parse()
  .opts<{ policy: string; worker: string; jobs: string; runMs: string; pollMs: string; sleepMs: string; scale: string; ledger?: string }>();

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`churnWorker: ${k} is not set`);
  return v;
};
const worker = Number(opts.worker);
const runMs = Number(opts.runMs);
const pollMs = Number(opts.pollMs);
const requestLog: RequestTimes[] = [];
/** The client's debug lines, kept for the report (the client logs method, path, status, elapsedMs). */
const requestLogger = {
  level: 'debug',
  debug: (msg: string, f: Record<string, unknown>): void => {
    if (msg === 'nova request') requestLog.push({ at: Date.now(), ms: Math.round(Number(f['elapsedMs'] ?? 0)), method: String(f['method']), path: String(f['path']), status: Number(f['status']) });
  },
  info: (): void => undefined,
  warn: (): void => undefined,
  error: (): void => undefined,
};
const client = new NovaClient({ endpoint: env('NOVA_ENDPOINT'), token: env('NOVA_TOKEN'), microversion: MICROVERSION, logger: requestLogger });
let current: JobTimes | undefined;
const body = (name: string): { name: string; flavorRef: string; imageRef: string; networks: 'none' } => ({
  name,
  flavorRef: env('CHURN_FLAVOR'),
  imageRef: env('CHURN_IMAGE'),
  networks: 'none',
});
const report: WorkerReport = { worker, policy: opts.policy, jobs: 0, failed: 0, quota403sSeen: 0, errorServers: 0, startedAt: 0, endedAt: 0, errors: [], jobTimes: [], requests: requestLog };
const note = (e: unknown): void => {
  if (e instanceof NovaApiError && e.status === 403) report.quota403sSeen++;
  const msg = `${(e as Error).name}: ${(e as Error).message}`.slice(0, 200);
  if (!report.errors.includes(msg) && report.errors.length < 3) report.errors.push(msg);
};
/** True when the server became ACTIVE; counts an ERROR server. */
const untilActive = async (id: string): Promise<boolean> => {
  const r = await waitForActive(client, id, { intervalMs: pollMs, timeoutMs: 300_000 });
  if (r.outcome === 'error') report.errorServers++;
  return r.outcome === 'active';
};

/** QuotaGuard's defaults with the backoff delays divided by `--scale` (as `bench/churn.ts` does). */
function guardOptions(): QuotaGuardOptions {
  const s = Number(opts.scale);
  return { minDelayMs: 1000 / s, baseDelayMs: 2000 / s, maxDelayMs: 60000 / s, maxWaitMs: 300_000, activeIntervalMs: pollMs, activeTimeoutMs: 300_000 };
}

/**
 * The nova-guard-redis policy: a QuotaGuard whose claims live in Redis (`RedisQuotaLedger` from
 * `nova-guard/redis`, keys namespaced by this client's endpoint and project); nova-guard-redis-fleet
 * adds the fleet watcher (`fleetWatcher: true`: one worker looks for all and publishes what it saw).
 */
async function redisGuard(url: string | undefined, options: QuotaGuardOptions, fleetWatcher: boolean): Promise<{ guard: QuotaGuard; close: () => Promise<void> }> {
  if (!url) throw new Error('nova-guard-redis needs --ledger redis://...');
  const { RedisQuotaLedger } = await import('nova-guard/redis');
  const ledger = await RedisQuotaLedger.forClient(client, { url, fleetWatcher });
  // The claim's end (counted) stamped on the job: the time a server counts twice ends there.
  const traced = new Proxy(ledger, {
    get(target, key) {
      const v: unknown = Reflect.get(target, key, target);
      if (typeof v !== 'function') return v;
      if (key === 'release') {
        return async (...args: unknown[]): Promise<unknown> => {
          const job = current;
          const r: unknown = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (args[1] === 'counted' && job) job.claimEndAt ??= Date.now();
          return r;
        };
      }
      return (v as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { guard: new QuotaGuard(client, { ...options, ledger: traced }), close: () => ledger.close() };
}

type Job = (name: string) => Promise<boolean>;

async function makeJob(): Promise<{ job: Job; close: () => Promise<void> }> {
  const none = async (): Promise<void> => undefined;
  switch (opts.policy) {
    case 'naive':
      return {
        close: none,
        job: async (name) => {
          let id: string;
          try {
            id = (await client.createServer(body(name))).id;
          } catch (e) {
            note(e);
            return false;
          }
          current!.serverId = id;
          const ok = await untilActive(id).catch((e: unknown) => (note(e), false));
          if (ok) current!.activeAt = Date.now();
          if (ok) await sleep(runMs);
          current!.deleteAt = Date.now();
          await client.deleteServer(id).catch(note);
          current!.goneAt = Date.now();
          return ok;
        },
      };
    case 'autopkgtest':
      return {
        close: none,
        job: async (name) => {
          let id: string | undefined;
          for (let attempt = 1; attempt <= 3 && id === undefined; attempt++) {
            let created: string | undefined;
            try {
              created = (await client.createServer(body(name))).id;
              if (await untilActive(created)) id = created;
              else throw new Error('server did not become ACTIVE');
            } catch (e) {
              note(e);
              if (created) await client.deleteServer(created).catch(note); // nova delete "$uuid" || true
              if (attempt < 3) await sleep(Number(opts.sleepMs));
            }
          }
          if (id === undefined) return false;
          current!.serverId = id;
          current!.activeAt = Date.now();
          await sleep(runMs);
          current!.deleteAt = Date.now();
          await client.deleteServer(id).catch(note);
          current!.goneAt = Date.now();
          return true;
        },
      };
    case 'nova-guard':
    case 'nova-guard-redis':
    case 'nova-guard-redis-fleet': {
      const { guard, close } =
        opts.policy === 'nova-guard' ? { guard: new QuotaGuard(client, guardOptions()), close: none } : await redisGuard(opts.ledger, guardOptions(), opts.policy === 'nova-guard-redis-fleet');
      return {
        close,
        job: async (name) => {
          try {
            const server = await guard.createServer(body(name));
            current!.serverId = server.id;
            current!.activeAt = Date.now();
            await sleep(runMs);
            current!.deleteAt = Date.now();
            await client.deleteServer(server.id, { wait: true, intervalMs: pollMs, timeoutMs: 300_000 });
            current!.goneAt = Date.now();
            return true;
          } catch (e) {
            note(e);
            return false;
          }
        },
      };
    }
    default:
      throw new Error(`unknown policy ${opts.policy}`);
  }
}

async function main(): Promise<void> {
  const { job, close } = await makeJob();
  report.startedAt = Date.now();
  try {
    for (let j = 0; j < Number(opts.jobs); j++) {
      report.jobs++;
      const name = `churn-${opts.policy}-w${worker}-j${j}`;
      current = { name, createAt: Date.now(), endAt: 0 };
      report.jobTimes.push(current);
      if (!(await job(name))) report.failed++;
      current.endAt = Date.now();
    }
  } finally {
    report.endedAt = Date.now();
    await close();
  }
  process.stdout.write(JSON.stringify(report) + '\n');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
