/**
 * Child process of the fleet churn benchmark (`fleetChurn.ts`): one worker host. It gets its task
 * over IPC, makes its client (and, for nova-guard, its guard on its ledger), answers `ready`, runs
 * its workers when told `go`, and answers with its failed jobs.
 *
 * @module
 */
import { appendFileSync } from 'node:fs';
import axios, { type AxiosAdapter } from 'axios';
import { NovaClient, type QuotaLedger } from 'nova-guard';
import { MIN_FLEET_LEASE_TTL_MS, RedisQuotaLedger } from 'nova-guard/redis';
import { SqliteQuotaLedger } from 'nova-guard/sqlite';
import { policies, type ChurnConfig } from './churn.js';
import { MICROVERSION } from './stats.js';

/**
 * The policies of the fleet churn: the churn's three, nova-guard on either ledger, and nova-guard on
 * the Redis ledger with its Redis 200 ms away (a latency proxy) or restarted (empty) mid-run, and
 * the Redis ledger with the fleet watcher (`fleetWatcher: true`: one host looks for all of them),
 * and the SQLite ledger with and without the fleet watcher (one process per worker).
 */
export type FleetPolicy =
  | 'naive'
  | 'autopkgtest'
  | 'nova-guard (in-process ledger)'
  | 'nova-guard (Redis ledger)'
  | 'nova-guard (Redis ledger + fleet watcher)'
  | 'nova-guard (Redis ledger, Redis 200 ms away)'
  | 'nova-guard (Redis ledger, Redis restarted mid-run)'
  | 'nova-guard (SQLite ledger, one process per worker, one host)'
  | 'nova-guard (SQLite ledger + fleet watcher, one process per worker, one host)';

/** Whether the policy runs on the Redis ledger. */
export const onRedis = (p: FleetPolicy): boolean => p.startsWith('nova-guard (Redis ledger');
/** Whether the policy runs on the SQLite ledger (every process of the bench's host on one file). */
export const onSqlite = (p: FleetPolicy): boolean => p.startsWith('nova-guard (SQLite ledger');

/** A host's task. */
export interface HostTask {
  policy: FleetPolicy;
  endpoint: string;
  projectId: string;
  host: number;
  cfg: ChurnConfig;
  /** For the Redis ledger. */
  redisUrl?: string;
  keyPrefix?: string;
  /** For the SQLite ledger: the directory of its file. */
  sqliteDir?: string;
}

/** A host's answer. */
export interface HostResult {
  failed: number;
  errors: string[];
  trace: HostTrace;
}

/** What a host saw of its jobs, on this machine's wall clock (`Date.now()`, the fake's clock too): where the makespan goes. */
export interface HostTrace {
  /** When each nova-guard job called `createServer`. */
  createStarts: number[];
  /** When each server's claim ended as `'counted'` (Nova counts it): `[serverId, atMs]`. */
  counted: Array<[string, number]>;
  /** When each nova-guard job's `deleteServer(wait)` returned (its 404 seen): `[serverId, atMs]`. */
  deleteReturned: Array<[string, number]>;
  /** `GET /limits` sent, and the time spent waiting for their answers, in ms. */
  limits: number;
  limitsWaitMs: number;
}

/** Watch a ledger's claims: `counted` is told the server of each claim released as `'counted'`. */
function traceCounted(ledger: QuotaLedger, counted: (serverId: string) => void): void {
  const servers = new Map<string, string>();
  const bind = ledger.bind.bind(ledger);
  const release = ledger.release.bind(ledger);
  ledger.bind = (claim, serverId) => (servers.set(claim.id, serverId), bind(claim, serverId));
  ledger.release = (claim, end) => {
    const id = servers.get(claim.id);
    servers.delete(claim.id);
    if (id !== undefined && end === 'counted') counted(id);
    return release(claim, end);
  };
}

async function prepare(task: HostTask): Promise<{ run: () => Promise<HostResult>; close: () => Promise<void> }> {
  const { cfg } = task;
  const trace: HostTrace = { createStarts: [], counted: [], deleteReturned: [], limits: 0, limitsWaitMs: 0 };
  // axios's own adapter, timed for GET /limits (the waits for a fresh reading).
  const http = axios.getAdapter('http');
  // A debugging aid: every request this host sends, one JSON line each, in NOVA_GUARD_BENCH_REQUESTS.clients.
  const dump = process.env['NOVA_GUARD_BENCH_REQUESTS'];
  const adapter: AxiosAdapter = async (config) => {
    if (dump) appendFileSync(`${dump}.clients`, JSON.stringify({ host: task.host, method: config.method, url: config.url, params: config.params as unknown, t: Date.now() }) + '\n');
    if (!/\/limits(\?|$)/.test(config.url ?? '')) return http(config);
    const t0 = Date.now();
    try {
      return await http(config);
    } finally {
      trace.limits++;
      trace.limitsWaitMs += Date.now() - t0;
    }
  };
  const client = new NovaClient({ endpoint: task.endpoint, token: `admin:${task.projectId}`, microversion: MICROVERSION, maxRequestsPerSecond: 10 * cfg.scale, adapter });
  let ledger: QuotaLedger | undefined;
  if (onRedis(task.policy)) {
    const opts = { url: task.redisUrl!, endpoint: task.endpoint, projectId: task.projectId, keyPrefix: task.keyPrefix, holder: `host${task.host}:${process.pid}` };
    // The fleet watcher's lease TTL sets how often hosts read publications and the watcher follows
    // new interest (every TTL/8, at most 250 ms): scaled like the poll interval (6 s / scale), but at
    // least the shortest TTL taken. Unscaled, a read every 250 ms would be 5 poll intervals here where
    // it is a twentieth of one at the real 5 s interval.
    const fleetLeaseTtlMs = Math.max(MIN_FLEET_LEASE_TTL_MS, 6000 / cfg.scale);
    ledger = task.policy.includes('fleet watcher') ? await RedisQuotaLedger.forClient(client, { ...opts, fleetWatcher: true, fleetLeaseTtlMs }) : new RedisQuotaLedger(opts);
  } else if (onSqlite(task.policy)) {
    const opts = { path: task.sqliteDir!, endpoint: task.endpoint, projectId: task.projectId, holder: `proc${task.host}:${process.pid}` };
    // The fleet watcher's lease scaled as the Redis row's (see above).
    const fleetLeaseTtlMs = Math.max(MIN_FLEET_LEASE_TTL_MS, 6000 / cfg.scale);
    ledger = task.policy.includes('fleet watcher') ? await SqliteQuotaLedger.forClient(client, { ...opts, fleetWatcher: true, fleetLeaseTtlMs }) : new SqliteQuotaLedger(opts);
  }
  if (ledger) traceCounted(ledger, (id) => trace.counted.push([id, Date.now()]));
  const kind = task.policy.startsWith('nova-guard') ? 'nova-guard' : (task.policy as 'naive' | 'autopkgtest');
  // Redis far away or restarted costs real seconds (unscaled): give the creates a real patience.
  const onNetwork = task.policy.includes('200 ms') || task.policy.includes('restarted');
  const jobTrace = { createStart: () => void trace.createStarts.push(Date.now()), deleteReturned: (id: string) => void trace.deleteReturned.push([id, Date.now()]) };
  const job = policies(onNetwork ? { ...cfg, maxWaitMs: Math.max(600000 / cfg.scale, 30_000) } : cfg, jobTrace)[kind](client, ledger);
  const run = async (): Promise<HostResult> => {
    let failed = 0;
    const errors: string[] = [];
    await Promise.all(
      Array.from({ length: cfg.workers }, async (_, w) => {
        for (let j = 0; j < cfg.jobsPerWorker; j++) if (!(await job(client, `h${task.host}-w${w}-j${j}`, errors))) failed++;
      }),
    );
    return { failed, errors: [...new Set(errors)].slice(0, 3), trace };
  };
  return { run, close: async () => ledger?.close() };
}

let prepared: Awaited<ReturnType<typeof prepare>> | undefined;
process.on('message', (msg: { task?: HostTask; go?: true }) => {
  if (msg.task) {
    prepare(msg.task).then(
      (p) => {
        prepared = p;
        process.send?.({ ready: true });
      },
      (e: unknown) => process.send?.({ error: String((e as Error)?.stack ?? e) }),
    );
  } else if (msg.go && prepared) {
    const p = prepared;
    p.run()
      .then(
        (result) => p.close().then(() => process.send?.({ result })),
        (e: unknown) => process.send?.({ error: String((e as Error)?.stack ?? e) }),
      )
      .finally(() => setTimeout(() => process.exit(0), 100).unref());
  }
});
process.on('disconnect', () => process.exit(0));
