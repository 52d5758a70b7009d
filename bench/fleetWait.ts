/**
 * Fleet-wait benchmark: N concurrent delete-waits on one client, per-server polling at osc-lib's
 * semantics (`oscLibWait.ts`) against nova-guard's `waitForDelete` (coalesced by default; the wait
 * of `client.deleteServer(id, { wait: true })`), each after its own `DELETE`, on a FakeNova in a
 * child process.
 *
 * Each server's deletion latency is drawn from a seeded log-normal distribution; the fake keeps the
 * server in `task_state` `deleting` until then and records the moment it destroys it. Detection lag
 * = the wait's promise resolving minus that moment. Both policies get the same latencies. To get
 * enough samples at small N, G = ceil(samples / N) independent clients (each with its own N waits,
 * so nothing is shared between them) run at once.
 *
 * Time is scaled: `intervalMs` stands for osc-lib's 5 s `sleep_time`.
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { NovaClient, waitForDelete } from 'nova-guard';
import type { FakeNovaProcess, RequestCounts } from './fakeProcess.js';
import { oscLibWaitForDelete } from './oscLibWait.js';
import { MICROVERSION, logNormal, mean, percentile, round, seededRandom } from './stats.js';

/** Settings of the fleet benchmark (ms). */
export interface FleetConfig {
  sizes: number[];
  /** Poll interval of both policies (osc-lib `sleep_time`), ms. */
  intervalMs: number;
  /** Median and sigma of the log-normal deletion latency. */
  latencyMedianMs: number;
  latencySigma: number;
  /** Lag samples wanted per size (G = ceil(samples / N) clients at once). */
  samples: number;
  /** Delay between the starts of independent clients (small N), ms per server of a client. */
  groupSpreadMs: number;
  /** nova-guard client's `maxRequestsPerSecond` (the default 10/s, scaled like time). */
  maxRequestsPerSecond: number;
  seed: number;
}

/** One policy at one size. */
export interface FleetPolicyResult {
  /** `nova-guard` = `waitForDelete` after the DELETE; `nova-guard-delete` = `client.deleteServer(id, { wait: true })` (defaults: it resolves at the 404). */
  policy: 'osc-lib' | 'nova-guard' | 'nova-guard-delete';
  n: number;
  clients: number;
  deletions: number;
  /** Poll requests (GET /servers/{id} + listing pages) per deletion; DELETEs not included. */
  pollRequestsPerDeletion: number;
  /** All requests (DELETEs included) per deletion. */
  requestsPerDeletion: number;
  meanLagMs: number;
  p95LagMs: number;
  /** Waits that did not end deleted (timeout, error) or ended before the destroy. */
  failures: number;
  wallMs: number;
  requests: RequestCounts;
}

/** Both policies at one size, with ratios. */
export interface FleetRow {
  n: number;
  baseline: FleetPolicyResult;
  novaGuard: FleetPolicyResult;
  /** `client.deleteServer(id, { wait: true })` with its defaults (it confirms the 404 after a DELETED status). */
  deleteServer: FleetPolicyResult;
  /** Baseline poll requests per deletion / nova-guard's (x fewer). */
  requestRatio: number;
  /** nova-guard mean lag / baseline mean lag (below 1 is better). */
  meanLagRatio: number;
  p95LagRatio: number;
}

async function runPolicy(
  fake: FakeNovaProcess,
  policy: FleetPolicyResult['policy'],
  n: number,
  clients: number,
  latencies: number[],
  cfg: FleetConfig,
): Promise<FleetPolicyResult> {
  await fake.start({ maxTotalCores: -1, maxTotalInstances: -1, maxTotalRAMSize: -1 }, true);
  const ids = await fake.addServers(n * clients, { status: 'ACTIVE' });
  await fake.takeRequests();
  const timeoutMs = cfg.intervalMs * 60;
  const resolvedAt = new Map<string, number>();
  let failures = 0;
  const t0 = performance.now();
  const groups = Array.from({ length: clients }, (_, g) => ids.slice(g * n, (g + 1) * n));
  await Promise.all(
    groups.map(async (group, g) => {
      // Independent clients (small N) start spread out, so their DELETEs and polls do not all land at once.
      if (g > 0) await sleep(g * n * cfg.groupSpreadMs);
      const client = new NovaClient({
        endpoint: fake.endpoint,
        token: `admin:${fake.projectId}`,
        microversion: MICROVERSION,
        ...(policy === 'osc-lib' ? { coalesce: false } : { maxRequestsPerSecond: cfg.maxRequestsPerSecond }),
      });
      await Promise.all(
        group.map(async (id, i) => {
          try {
            let ok: boolean;
            if (policy === 'nova-guard-delete') {
              fake.destroyAt(id, Date.now() + latencies[g * n + i]!);
              const r = await client.deleteServer(id, { wait: true, intervalMs: cfg.intervalMs, timeoutMs });
              // already-gone: the DELETE itself queued past the drawn latency (1000 at once)
              if (r.outcome === 'deleted' || r.outcome === 'already-gone') resolvedAt.set(id, Date.now());
              else failures++;
              return;
            }
            // The deletion latency runs from the DELETE's 204 (Nova's compute side starts then).
            await client.requestDelete(id);
            fake.destroyAt(id, Date.now() + latencies[g * n + i]!);
            if (policy === 'osc-lib') {
              ok = await oscLibWaitForDelete(client, id, cfg.intervalMs, timeoutMs);
            } else {
              const r = await waitForDelete(client, id, { intervalMs: cfg.intervalMs, timeoutMs });
              ok = r.outcome === 'deleted';
            }
            if (ok) resolvedAt.set(id, Date.now());
            else failures++;
          } catch {
            failures++;
          }
        }),
      );
    }),
  );
  const wallMs = performance.now() - t0;
  const requests = await fake.takeRequests();
  const destroyed = await fake.destroyTimes(ids);
  const lags: number[] = [];
  for (const id of ids) {
    const r = resolvedAt.get(id);
    const d = destroyed[id];
    if (r === undefined) continue;
    if (d === null || d === undefined || r < d) {
      failures++; // resolved before the server was destroyed: never acceptable
      continue;
    }
    lags.push(r - d);
  }
  const deletions = ids.length;
  return {
    policy,
    n,
    clients,
    deletions,
    pollRequestsPerDeletion: round((requests.serverGets + requests.listings) / deletions, 3),
    requestsPerDeletion: round(requests.total / deletions, 3),
    meanLagMs: round(mean(lags), 1),
    p95LagMs: round(percentile(lags, 95), 1),
    failures,
    wallMs: Math.round(wallMs),
    requests,
  };
}

/** Run the fleet benchmark for every size; logs progress to stderr. */
export async function runFleet(fake: FakeNovaProcess, cfg: FleetConfig): Promise<FleetRow[]> {
  const rows: FleetRow[] = [];
  for (const n of cfg.sizes) {
    const clients = Math.max(1, Math.ceil(cfg.samples / n));
    const random = seededRandom(cfg.seed + n);
    const latencies = Array.from({ length: n * clients }, () => Math.max(1, Math.round(logNormal(random, cfg.latencyMedianMs, cfg.latencySigma))));
    const baseline = await runPolicy(fake, 'osc-lib', n, clients, latencies, cfg);
    const novaGuard = await runPolicy(fake, 'nova-guard', n, clients, latencies, cfg);
    const deleteServer = await runPolicy(fake, 'nova-guard-delete', n, clients, latencies, cfg);
    const row: FleetRow = {
      n,
      baseline,
      novaGuard,
      deleteServer,
      requestRatio: round(baseline.pollRequestsPerDeletion / novaGuard.pollRequestsPerDeletion, 2),
      meanLagRatio: round(novaGuard.meanLagMs / baseline.meanLagMs, 3),
      p95LagRatio: round(novaGuard.p95LagMs / baseline.p95LagMs, 3),
    };
    process.stderr.write(`fleet N=${n}: ${clients} client(s), osc-lib ${baseline.wallMs} ms, nova-guard ${novaGuard.wallMs} ms, deleteServer ${deleteServer.wallMs} ms\n`);
    rows.push(row);
  }
  return rows;
}
