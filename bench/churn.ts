/**
 * Churn benchmark: W workers each run J jobs (create a 2-core server, wait until ACTIVE, "test" on
 * it, delete it) against a core quota below 2W, with Nova deleting asynchronously, under three
 * policies:
 * - **naive**: create; a quota 403 fails the job; delete without waiting.
 * - **autopkgtest**: `ssh-setup/nova`'s create loop (`docs/field-cases.md#what-autopkgtest-does`): up to
 *   3 attempts with a fixed sleep (300 s, scaled) whatever the error; delete without waiting.
 * - **nova-guard**: `QuotaGuard.createServer` (headroom from `/limits` minus in-flight claims,
 *   waits with backoff, quota 403s retried) and `client.deleteServer(id, { wait: true })`.
 * All workers of a policy share one client (one worker host). Every duration is scaled by `scale`
 * (nova-guard's and osc-lib's defaults divided by it).
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NovaClient, QuotaGuard, waitForActive, type QuotaLedger, type Server } from 'nova-guard';
import type { FakeNovaProcess, RequestCounts } from './fakeProcess.js';
import { MICROVERSION, round } from './stats.js';

/** Settings of the churn benchmark (ms). */
export interface ChurnConfig {
  workers: number;
  jobsPerWorker: number;
  quotaCores: number;
  buildDelayMs: number;
  runMs: number;
  deleteDelayMs: number;
  deletedWindowMs: number;
  /** Poll interval of delete-waits and BUILD waits. */
  pollIntervalMs: number;
  /** autopkgtest's fixed sleep between create attempts (300 s, scaled). */
  autopkgtestSleepMs: number;
  /** Real-time defaults (QuotaGuard backoff) are divided by this. */
  scale: number;
  /**
   * The first part of the build during which Nova shows `task_state` `scheduling` (FakeNova's
   * `schedulingDelayMs`). @default buildDelayMs / 10 (scheduling is a small part of a build)
   */
  schedulingDelayMs?: number;
  /** nova-guard's poll interval while its new server is in BUILD. @default 2000 / scale (QuotaGuard's default, scaled) */
  guardActiveIntervalMs?: number;
  /**
   * QuotaGuard's `maxWaitMs`. @default 600000 / scale. The rows whose Redis is 200 ms away or
   * restarted set it to at least 30 s: the ledger's own timings (round trips, probes, the settle
   * after a restart) run in real time, not scaled, so a scaled patience would measure the scale.
   */
  maxWaitMs?: number;
}

/** The `scheduling` part of the build, in ms. */
export function schedulingDelayMs(cfg: ChurnConfig): number {
  return cfg.schedulingDelayMs ?? Math.round(cfg.buildDelayMs / 10);
}

/** One policy's run. */
export interface ChurnRow {
  policy: 'naive' | 'autopkgtest' | 'nova-guard';
  jobs: number;
  failedJobs: number;
  quota403s: number;
  quota403sPerJob: number;
  requestsPerJob: number;
  makespanMs: number;
  lowerBoundMs: number;
  makespanOverLowerBound: number;
  requests: RequestCounts;
  /** Distinct errors of failed nova-guard jobs (first few). */
  errors: string[];
}

/** One job: resolves true when it ran, false (or throws) when it failed. */
export type Job = (client: NovaClient, name: string, errors: string[]) => Promise<boolean>;

/** Told when a nova-guard job starts its create and when its delete returned (the 404 seen): where the makespan goes. */
export interface JobTrace {
  createStart: () => void;
  deleteReturned: (serverId: string) => void;
}

/**
 * The job of each policy, made for one client (one worker host). nova-guard's takes the host's
 * `ledger` (default: the guard's own in-process ledger).
 */
export function policies(cfg: ChurnConfig, trace?: JobTrace): Record<ChurnRow['policy'], (client: NovaClient, ledger?: QuotaLedger) => Job> {
  const body = (name: string): { name: string; flavorRef: string; imageRef: string; networks: 'none' } => ({ name, flavorRef: '2', imageRef: 'img', networks: 'none' });
  const untilActive = async (client: NovaClient, id: string): Promise<boolean> =>
    (await waitForActive(client, id, { intervalMs: cfg.pollIntervalMs, timeoutMs: 60000 })).outcome === 'active';
  return {
    naive: () => async (client, name) => {
      let server: Server;
      try {
        server = await client.createServer(body(name));
      } catch {
        return false;
      }
      const ok = await untilActive(client, server.id).catch(() => false);
      if (ok) await sleep(cfg.runMs);
      await client.deleteServer(server.id).catch(() => undefined);
      return ok;
    },
    autopkgtest: () => async (client, name) => {
      let id: string | undefined;
      for (let attempt = 1; attempt <= 3 && id === undefined; attempt++) {
        let created: string | undefined;
        try {
          created = (await client.createServer(body(name))).id;
          if (await untilActive(client, created)) id = created;
          else throw new Error('not active');
        } catch {
          if (created) await client.deleteServer(created).catch(() => undefined); // nova delete "$uuid" || true
          if (attempt < 3) await sleep(cfg.autopkgtestSleepMs);
        }
      }
      if (id === undefined) return false;
      await sleep(cfg.runMs);
      await client.deleteServer(id).catch(() => undefined);
      return true;
    },
    'nova-guard': (client, ledger) => {
      const s = cfg.scale;
      const guard = new QuotaGuard(client, {
        ledger,
        minDelayMs: 1000 / s,
        baseDelayMs: 2000 / s,
        maxDelayMs: 60000 / s,
        maxWaitMs: cfg.maxWaitMs ?? 600000 / s,
        activeIntervalMs: cfg.guardActiveIntervalMs ?? 2000 / s,
        // While a create waits for headroom, the deletions are looked at every second (scaled).
        shortLookIntervalMs: 1000 / s,
        activeTimeoutMs: 600000 / s,
      });
      return async (_client, name, errors) => {
        try {
          trace?.createStart();
          const server = await guard.createServer(body(name));
          await sleep(cfg.runMs);
          await client.deleteServer(server.id, { wait: true, intervalMs: cfg.pollIntervalMs, timeoutMs: 300000 / s });
          trace?.deleteReturned(server.id);
          return true;
        } catch (e) {
          errors.push(`${(e as Error).name}: ${(e as Error).message}`);
          return false;
        }
      };
    },
  };
}

/** Run the three policies one after the other, each on a fresh fake; logs progress to stderr. */
export async function runChurn(fake: FakeNovaProcess, cfg: ChurnConfig): Promise<ChurnRow[]> {
  const rows: ChurnRow[] = [];
  const jobs = cfg.workers * cfg.jobsPerWorker;
  const holdMs = cfg.buildDelayMs + cfg.runMs + cfg.deleteDelayMs + cfg.deletedWindowMs;
  const lowerBoundMs = Math.round(Math.max(cfg.jobsPerWorker * (cfg.buildDelayMs + cfg.runMs), (jobs * 2 * holdMs) / cfg.quotaCores));
  for (const [policy, make] of Object.entries(policies(cfg)) as Array<[ChurnRow['policy'], (c: NovaClient) => Job]>) {
    await fake.start({
      maxTotalCores: cfg.quotaCores,
      maxTotalInstances: -1,
      maxTotalRAMSize: -1,
      buildDelayMs: cfg.buildDelayMs,
      schedulingDelayMs: schedulingDelayMs(cfg),
      deleteDelayMs: cfg.deleteDelayMs,
      deletedWindowMs: cfg.deletedWindowMs,
    });
    await fake.takeRequests();
    const client = new NovaClient({ endpoint: fake.endpoint, token: `admin:${fake.projectId}`, microversion: MICROVERSION, maxRequestsPerSecond: 10 * cfg.scale });
    const job = make(client);
    let failed = 0;
    const errors: string[] = [];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: cfg.workers }, async (_, w) => {
        for (let j = 0; j < cfg.jobsPerWorker; j++) if (!(await job(client, `w${w}-j${j}`, errors))) failed++;
      }),
    );
    const makespanMs = Math.round(performance.now() - t0);
    const requests = await fake.takeRequests();
    rows.push({
      policy,
      jobs,
      failedJobs: failed,
      quota403s: requests.create403s,
      quota403sPerJob: round(requests.create403s / jobs, 3),
      requestsPerJob: round(requests.total / jobs, 2),
      makespanMs,
      lowerBoundMs,
      makespanOverLowerBound: round(makespanMs / lowerBoundMs, 3),
      requests,
      errors: [...new Set(errors)].slice(0, 3),
    });
    process.stderr.write(`churn ${policy}: ${makespanMs} ms, ${failed} failed\n`);
  }
  return rows;
}
