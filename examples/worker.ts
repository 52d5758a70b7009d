/**
 * An autopkgtest-style CI worker: create a server, "run a test" on it, delete it and wait until Nova
 * has really deleted it, so that its cores are free before the next create. Creates go through a
 * QuotaGuard: it waits for core headroom and retries transient quota 403s instead of failing the job.
 *
 * Run it against any cloud through `examples/demo.ts`, or import `runWorker` into your own code.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type NovaClient, type QuotaGuard } from 'nova-guard';

/** What one worker did. */
export interface WorkerStats {
  worker: string;
  jobsDone: number;
  jobsFailed: number;
  deletesConfirmed: number;
  errors: string[];
}

/** Options of {@link runWorker}. */
export interface WorkerOptions {
  /** Worker name, used as the server name prefix. */
  name: string;
  /** Jobs to run, one after another. */
  jobs: number;
  /** Flavor id of the test server. */
  flavorRef: string;
  /** Image id of the test server. */
  imageRef: string;
  /** How long the "test" runs, in ms. */
  testDurationMs: number;
  /** Poll interval of the delete-wait, in ms. */
  deleteIntervalMs: number;
  /** Called after each job. */
  onJob?: (worker: string, job: number, ok: boolean, detail: string) => void;
}

/** Run `options.jobs` jobs: create (guarded), test, delete with wait. Never throws; failures are counted. */
export async function runWorker(client: NovaClient, guard: QuotaGuard, options: WorkerOptions): Promise<WorkerStats> {
  const stats: WorkerStats = { worker: options.name, jobsDone: 0, jobsFailed: 0, deletesConfirmed: 0, errors: [] };
  for (let job = 1; job <= options.jobs; job++) {
    let serverId: string | undefined;
    try {
      const server = await guard.createServer({
        name: `${options.name}-job${job}`,
        flavorRef: options.flavorRef,
        imageRef: options.imageRef,
        networks: 'none',
        metadata: { 'nova-guard-demo': options.name },
      });
      serverId = server.id;
      await sleep(options.testDurationMs); // "run the test"
      stats.jobsDone++;
      options.onJob?.(options.name, job, true, serverId);
    } catch (e) {
      stats.jobsFailed++;
      stats.errors.push(`${(e as Error).name}: ${(e as Error).message}`);
      options.onJob?.(options.name, job, false, (e as Error).message);
    } finally {
      if (serverId) {
        try {
          await client.deleteServer(serverId, { wait: true, intervalMs: options.deleteIntervalMs, timeoutMs: 120000 });
          stats.deletesConfirmed++;
        } catch (e) {
          stats.errors.push(`delete ${serverId}: ${(e as Error).message}`);
        }
      }
    }
  }
  return stats;
}
