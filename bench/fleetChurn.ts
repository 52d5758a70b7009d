/**
 * Fleet churn benchmark: the churn (`churn.ts`) across worker PROCESSES ("hosts"), each running
 * `workersPerHost` workers on its own client, for 1, 2, 4, ... hosts. The core quota grows with the
 * hosts (`quotaCoresPerHost` each, below the hosts' demand), so the lower bound stays the same and
 * what grows is the coordination the hosts need. Policies: naive, autopkgtest-style, nova-guard
 * with its in-process ledger (each host on its own), nova-guard with one Redis ledger for all hosts,
 * nova-guard with one process per worker on one SQLite ledger file (all on this machine);
 * at the largest number of hosts also that Redis ledger with its Redis 200 ms away (a latency proxy)
 * and with its Redis restarted (empty) mid-run. Each row keeps the fake's quota record: the most
 * cores held at once by servers that exist (over the quota = over-commit) and the quota 403s.
 * The policies the targets are about ({@link REPEATED_POLICIES}) run `runs` times at every size and
 * are summarised by their median run with the spread (min-max); each run says where its makespan
 * went (`fleetChurnLags.ts`).
 *
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schedulingDelayMs, type ChurnConfig } from './churn.js';
import type { FakeNovaProcess, RequestCounts } from './fakeProcess.js';
import { churnLags, type ChurnLags } from './fleetChurnLags.js';
import { onRedis, onSqlite, type FleetPolicy, type HostResult, type HostTask } from './fleetHost.js';
import { startLatencyProxy, type LatencyProxy } from './latencyProxy.js';
import { round } from './stats.js';

/** Settings of the fleet churn (the per-host part of `churn` is its `workers`). */
export interface FleetChurnConfig {
  churn: ChurnConfig;
  hosts: number[];
  quotaCoresPerHost: number;
  /** Redis for the Redis-ledger policy; without it that policy is left out. */
  redisUrl: string | undefined;
  /** The bench's own redis-server (port, restart): without it the 200 ms and restart rows are left out. */
  redisLocal?: { port: number; restart: () => Promise<void> };
  /** The round trip the latency proxy adds for the "200 ms away" row. @default 200 */
  rttMs?: number;
  /** Only the policies whose names contain one of these words (bench's `--policies`); all when absent. */
  policyWords?: readonly string[];
  /** Runs of each of {@link REPEATED_POLICIES} at each size (the others run once). @default 1 */
  runs?: number;
  /** The SQLite row (a process per worker) only up to this many hosts. @default Infinity */
  sqliteMaxHosts?: number;
  /** The Redis network rows (200 ms away, restarted) at this many hosts. @default the largest */
  networkHosts?: number;
  /** Only the (hosts, policy) pairs this accepts (the quick bench's target rows); all when absent. */
  select?: (hosts: number, policy: FleetPolicy) => boolean;
  /** The policies run `runs` times at each size. @default {@link REPEATED_POLICIES} */
  repeated?: readonly FleetPolicy[];
}

/** One policy at one number of hosts. */
export interface FleetChurnRow {
  policy: FleetPolicy;
  hosts: number;
  jobs: number;
  quotaCores: number;
  failedJobs: number;
  quota403s: number;
  quota403sPerJob: number;
  /** The most cores held at once by servers that existed (accepted, not yet destroyed; `FakeNova.quotaRecord`). */
  peakCores: number;
  /** Servers conductor's quota recheck set to ERROR (what an over-commit costs at Nova). */
  recheckErrors: number;
  requestsPerJob: number;
  limitsPerJob: number;
  makespanMs: number;
  /** Whole jobs per quota slot: see {@link runFleetChurn}. */
  lowerBoundMs: number;
  makespanOverLowerBound: number;
  /** The fluid bound `jobs * 2 * holdMs / quotaCores` (what `lowerBoundMs` was before). */
  fluidLowerBoundMs: number;
  makespanOverFluidLowerBound: number;
  requests: RequestCounts;
  /** Requests per job by kind (POST, DELETE, GET server, listings with every page, /limits, the rest). */
  perJob: { post: number; delete: number; get: number; listing: number; limits: number; other: number };
  /** Servers that still existed once the run ended and the deletes it sent had time to finish. */
  serversLeft: number;
  /** Where the makespan went. */
  lags: ChurnLags;
  /** Which run of the policy at this size (1-based). */
  run: number;
  errors: string[];
}

/** The policies the targets are about: run `runs` times at every size (median and spread). */
export const REPEATED_POLICIES: readonly FleetPolicy[] = ['autopkgtest', 'nova-guard (Redis ledger)', 'nova-guard (Redis ledger + fleet watcher)'];

/** One policy at one size over its runs: the median run (by makespan over the bound) and the spread. */
export interface FleetChurnSummary {
  policy: FleetPolicy;
  hosts: number;
  runs: number;
  median: FleetChurnRow;
  /** Min and max over the runs. */
  makespanOverLowerBound: [number, number];
  requestsPerJob: [number, number];
  /** Over every run. */
  failedJobs: number;
  quota403s: number;
  serversLeft: number;
  /** The median of the runs' requests per job (may be another run's than `median`'s). */
  medianRequestsPerJob: number;
}

/** The median of `xs` (the lower middle one for an even count: a value that was measured). */
export function medianOf(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? Number.NaN;
}

/** Group the rows by policy and size: median run and spread (see {@link FleetChurnSummary}). */
export function summarise(rows: readonly FleetChurnRow[]): FleetChurnSummary[] {
  const groups = new Map<string, FleetChurnRow[]>();
  for (const r of rows) {
    const k = `${r.hosts}|${r.policy}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  return [...groups.values()].map((g) => {
    const ratios = g.map((r) => r.makespanOverLowerBound);
    const m = medianOf(ratios);
    const req = g.map((r) => r.requestsPerJob);
    return {
      policy: g[0]!.policy,
      hosts: g[0]!.hosts,
      runs: g.length,
      median: g.find((r) => r.makespanOverLowerBound === m)!,
      makespanOverLowerBound: [Math.min(...ratios), Math.max(...ratios)],
      requestsPerJob: [Math.min(...req), Math.max(...req)],
      failedJobs: g.reduce((n, r) => n + r.failedJobs, 0),
      quota403s: g.reduce((n, r) => n + r.quota403s, 0),
      serversLeft: g.reduce((n, r) => n + r.serversLeft, 0),
      medianRequestsPerJob: medianOf(req),
    };
  });
}

export const FLEET_POLICIES: readonly FleetPolicy[] = [
  'naive',
  'autopkgtest',
  'nova-guard (in-process ledger)',
  'nova-guard (Redis ledger)',
  // One host looks for the whole fleet and publishes what it saw (the fleet watcher).
  'nova-guard (Redis ledger + fleet watcher)',
  // The same workers, each in a process of its own (hosts x workers processes), on one SQLite file.
  'nova-guard (SQLite ledger, one process per worker, one host)',
  // The same, with the fleet watcher elected through the SQLite file.
  'nova-guard (SQLite ledger + fleet watcher, one process per worker, one host)',
];
/** The Redis-ledger rows under a network, at the largest number of hosts only. */
export const NETWORK_POLICIES: readonly FleetPolicy[] = ['nova-guard (Redis ledger, Redis 200 ms away)', 'nova-guard (Redis ledger, Redis restarted mid-run)'];

interface Child {
  proc: ChildProcess;
  next: () => Promise<{ ready?: true; result?: HostResult; error?: string }>;
}

function spawnHost(): Child {
  const proc = fork(new URL('./fleetHost.js', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const queue: Array<{ ready?: true; result?: HostResult; error?: string }> = [];
  const waiting: Array<(m: { ready?: true; result?: HostResult; error?: string }) => void> = [];
  proc.on('message', (m: { ready?: true; result?: HostResult; error?: string }) => {
    const w = waiting.shift();
    if (w) w(m);
    else queue.push(m);
  });
  proc.on('exit', (code) => {
    for (const w of waiting.splice(0)) w({ error: `host exited (${code})` });
  });
  return {
    proc,
    next: () => {
      const m = queue.shift();
      return m ? Promise.resolve(m) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

/** Run every policy at every number of hosts, each on a fresh fake; logs progress to stderr. */
export async function runFleetChurn(fake: FakeNovaProcess, cfg: FleetChurnConfig): Promise<FleetChurnRow[]> {
  const rows: FleetChurnRow[] = [];
  const c = cfg.churn;
  const holdMs = c.buildDelayMs + c.runMs + c.deleteDelayMs + c.deletedWindowMs;
  for (const hosts of cfg.hosts) {
    const quotaCores = cfg.quotaCoresPerHost * hosts;
    const jobs = hosts * c.workers * c.jobsPerWorker;
    // The quota runs floor(quotaCores / 2) 2-core servers at once and each holds its cores from its
    // POST to its 404 (`holdMs`), so some slot runs ceil(jobs / slots) jobs one after the other; the
    // last one's job may end before its delete does (policies that do not wait for it). The fluid
    // bound (jobs * 2 * holdMs / quotaCores) is kept beside it: with 4.5 jobs per slot it is not
    // reachable.
    const slots = Math.max(1, Math.floor(quotaCores / 2));
    const rounds = Math.ceil(jobs / slots);
    const fluidLowerBoundMs = Math.round((jobs * 2 * holdMs) / quotaCores);
    const lowerBoundMs = Math.round(Math.max(c.jobsPerWorker * (c.buildDelayMs + c.runMs), (rounds - 1) * holdMs + c.buildDelayMs + c.runMs));
    const networkHere = hosts === (cfg.networkHosts !== undefined && cfg.hosts.includes(cfg.networkHosts) ? cfg.networkHosts : Math.max(...cfg.hosts));
    const runs = [...FLEET_POLICIES, ...(networkHere && cfg.redisLocal ? NETWORK_POLICIES : [])].flatMap((p) =>
      Array.from({ length: (cfg.repeated ?? REPEATED_POLICIES).includes(p) ? Math.max(1, cfg.runs ?? 1) : 1 }, (_, i) => ({ policy: p, run: i + 1 })),
    );
    for (const { policy, run } of runs) {
      if (cfg.select && !cfg.select(hosts, policy)) continue;
      if (onRedis(policy) && cfg.redisUrl === undefined) continue;
      if (onSqlite(policy) && hosts > (cfg.sqliteMaxHosts ?? Number.POSITIVE_INFINITY)) continue;
      if (cfg.policyWords && !cfg.policyWords.some((w) => policy.includes(w))) continue;
      let proxy: LatencyProxy | undefined;
      let redisUrl = cfg.redisUrl;
      if (policy === 'nova-guard (Redis ledger, Redis 200 ms away)') {
        proxy = await startLatencyProxy(cfg.redisLocal!.port, cfg.rttMs ?? 200);
        redisUrl = proxy.url;
      }
      await fake.start({ maxTotalCores: quotaCores, maxTotalInstances: -1, maxTotalRAMSize: -1, buildDelayMs: c.buildDelayMs, schedulingDelayMs: schedulingDelayMs(c), deleteDelayMs: c.deleteDelayMs, deletedWindowMs: c.deletedWindowMs });
      // The SQLite row: one process per worker, all on this machine, sharing one ledger file.
      const perWorker = onSqlite(policy);
      const sqliteDir = perWorker ? mkdtempSync(join(tmpdir(), 'nova-guard-bench-sqlite-')) : undefined;
      const children = Array.from({ length: perWorker ? hosts * c.workers : hosts }, spawnHost);
      try {
        const keyPrefix = `bench:${process.pid}:${Date.now()}:`;
        for (const [host, ch] of children.entries()) {
          const task: HostTask = { policy, endpoint: fake.endpoint, projectId: fake.projectId, host, cfg: perWorker ? { ...c, workers: 1 } : c, redisUrl, keyPrefix, sqliteDir };
          ch.proc.send({ task });
        }
        for (const ch of children) {
          const m = await ch.next();
          if (!m.ready) throw new Error(`fleet churn host: ${m.error}`);
        }
        await fake.takeRequests();
        const t0 = performance.now();
        for (const ch of children) ch.proc.send({ go: true });
        let restarted: Promise<void> | undefined;
        const restartTimer =
          policy === 'nova-guard (Redis ledger, Redis restarted mid-run)'
            ? setTimeout(() => (restarted = cfg.redisLocal!.restart()), Math.round(lowerBoundMs / 2))
            : undefined;
        const results = await Promise.all(children.map((ch) => ch.next()));
        const makespanMs = Math.round(performance.now() - t0);
        clearTimeout(restartTimer);
        await restarted;
        // The deletes nobody waited for (the baseline's) get the fake's delete time to finish.
        await new Promise((resolve) => setTimeout(resolve, 2 * (c.deleteDelayMs + c.deletedWindowMs) + 100));
        const timeline = await fake.timeline();
        const requests = await fake.takeRequests();
        const record = await fake.quotaRecord();
        const failed = results.reduce((n, m) => n + (m.result ? m.result.failed : (perWorker ? 1 : c.workers) * c.jobsPerWorker), 0);
        const errors = [...new Set(results.flatMap((m) => (m.result ? m.result.errors : [String(m.error)])))].slice(0, 3);
        rows.push({
          policy,
          hosts,
          jobs,
          quotaCores,
          failedJobs: failed,
          quota403s: requests.create403s,
          quota403sPerJob: round(requests.create403s / jobs, 3),
          peakCores: record.peakCores,
          recheckErrors: record.recheckErrors,
          requestsPerJob: round(requests.total / jobs, 2),
          limitsPerJob: round(requests.limits / jobs, 2),
          makespanMs,
          lowerBoundMs,
          makespanOverLowerBound: round(makespanMs / lowerBoundMs, 3),
          fluidLowerBoundMs,
          makespanOverFluidLowerBound: round(makespanMs / fluidLowerBoundMs, 3),
          requests,
          perJob: {
            post: round(requests.creates / jobs, 2),
            delete: round(requests.deletes / jobs, 2),
            get: round(requests.serverGets / jobs, 2),
            listing: round((requests.listings + requests.briefListings) / jobs, 2),
            limits: round(requests.limits / jobs, 2),
            other: round(requests.other / jobs, 2),
          },
          serversLeft: timeline.serversLeft,
          lags: churnLags(
            timeline,
            results.flatMap((m) => (m.result ? [m.result.trace] : [])),
            { deleteDelayMs: c.deleteDelayMs, deletedWindowMs: c.deletedWindowMs, schedulingDelayMs: schedulingDelayMs(c), quotaCores, coresPerServer: 2 },
          ),
          run,
          errors,
        });
        process.stderr.write(
          `fleet churn ${hosts} host(s), ${policy}${run > 1 ? ` (run ${run})` : ''}: ${makespanMs} ms (lower bound ${lowerBoundMs}), ${failed} failed, ${requests.create403s} quota 403s, ` +
            `peak ${record.peakCores}/${quotaCores} cores held, ${round(requests.total / jobs, 2)} req/job\n`,
        );
      } finally {
        for (const ch of children) if (ch.proc.exitCode === null) ch.proc.kill();
        await proxy?.close();
        if (sqliteDir !== undefined) rmSync(sqliteDir, { recursive: true, force: true });
      }
    }
  }
  return rows;
}
