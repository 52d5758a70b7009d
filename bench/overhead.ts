/**
 * Overhead benchmark: heap per pending wait and CPU per tick with many delete-waits pending on one
 * client, servers held in `task_state` `deleting` by a FakeNova in a child process.
 *
 * Heap is this process's `heapUsed` after a forced GC, with the waits pending (each has had its
 * first observation, no request in flight) minus before they started. CPU per tick is this
 * process's user+system CPU over several ticks (every tick delivers one observation to every
 * wait), divided by the ticks. For reference, the heap of the same waits without coalescing
 * (`coalesce: false`, one GET per wait) is measured the same way.
 *
 * @module
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { NovaClient, waitForDelete } from 'nova-guard';
import type { FakeNovaProcess } from './fakeProcess.js';
import { MICROVERSION, round } from './stats.js';

/** Settings of the overhead benchmark. */
export interface OverheadConfig {
  pendingWaits: number;
  /** intervalMs of each wait (coalesced ticks at half of it). */
  intervalMs: number;
  /** Ticks to measure CPU over. */
  ticks: number;
}

/** One mode's heap. */
export interface HeapReading {
  heapMB: number;
  heapPerWaitKB: number;
}

/** What the overhead benchmark measured. */
export interface OverheadResult {
  pendingWaits: number;
  coalesced: HeapReading;
  /** Per-server waits (measured on at most 2000 waits). */
  perServer: HeapReading & { waits: number };
  /** Heap of the server bodies alone (one per wait, as both modes keep the last one seen). */
  bodiesPerWaitKB: number;
  ticks: number;
  pagesPerTick: number;
  cpuPerTickMs: number;
  cpuPerTickPerWaitUs: number;
  wallPerTickMs: number;
}

function gcFunction(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    gc();
    gc();
  };
}

const until = async (cond: () => boolean, timeoutMs: number): Promise<void> => {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error('overhead bench: timed out waiting');
    await sleep(10);
  }
};

/** Start `ids.length` waits, wait for the first observation of each, measure the heap; returns a handle to measure CPU and stop. */
async function pending(fake: FakeNovaProcess, ids: string[], coalesce: boolean, intervalMs: number, gc: () => void) {
  // The per-server baseline measures heap, not pacing: its first GETs are not held to the rate cap.
  const client = new NovaClient({ endpoint: fake.endpoint, token: `admin:${fake.projectId}`, microversion: MICROVERSION, coalesce, ...(coalesce ? {} : { maxRequestsPerSecond: Number.POSITIVE_INFINITY }) });
  await client.getLimits(); // warm up axios and the agent before the baseline
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  const state = { observations: 0 };
  const waits = ids.map((id) =>
    waitForDelete(client, id, { intervalMs, timeoutMs: 3600000, signal: ac.signal, onProgress: () => void state.observations++ }).catch(() => undefined),
  );
  await until(() => state.observations >= ids.length, 300000);
  await sleep(100); // the tick is over: no page or response in flight
  gc();
  const heap = process.memoryUsage().heapUsed - heapBefore;
  return {
    reading: { heapMB: round(heap / 1024 / 1024, 1), heapPerWaitKB: round(heap / ids.length / 1024, 2) },
    state,
    stop: async () => {
      ac.abort();
      await Promise.all(waits);
    },
  };
}

/** Run the overhead benchmark; logs progress to stderr. */
export async function runOverhead(fake: FakeNovaProcess, cfg: OverheadConfig): Promise<OverheadResult> {
  const gc = gcFunction();
  const p = cfg.pendingWaits;
  await fake.start({ maxTotalCores: -1, maxTotalInstances: -1, maxTotalRAMSize: -1 }, true);
  const ids = await fake.addServers(p, { status: 'ACTIVE', taskState: 'deleting' });

  // The bodies alone: one listing's servers kept.
  const lister = new NovaClient({ endpoint: fake.endpoint, token: `admin:${fake.projectId}`, microversion: MICROVERSION });
  gc();
  const h0 = process.memoryUsage().heapUsed;
  const bodies = (await lister.listServersWithMeta({ 'changes-since': '2000-01-01T00:00:00Z' })).servers;
  gc();
  const bodiesPerWaitKB = round((process.memoryUsage().heapUsed - h0) / bodies.length / 1024, 2);
  bodies.length = 0;

  const c = await pending(fake, ids, true, cfg.intervalMs, gc);
  await fake.takeRequests();
  const startObs = Math.ceil(c.state.observations / p) * p;
  await until(() => c.state.observations >= startObs, 120000);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await until(() => c.state.observations >= startObs + cfg.ticks * p, 300000);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - t0;
  const requests = await fake.takeRequests();
  await c.stop();
  process.stderr.write(`overhead: coalesced ${c.reading.heapMB} MB\n`);

  // Without coalescing, one GET per wait (a long interval: one poll each while measuring), on at most
  // 2000 waits: 10,000 simultaneous first GETs would measure the socket pile-up, not the waits.
  const s = await pending(fake, ids.slice(0, Math.min(p, 2000)), false, 600000, gc);
  await s.stop();
  process.stderr.write(`overhead: per-server ${s.reading.heapMB} MB\n`);

  const cpuMs = (cpu.user + cpu.system) / 1000;
  return {
    pendingWaits: p,
    coalesced: c.reading,
    perServer: { ...s.reading, waits: Math.min(p, 2000) },
    bodiesPerWaitKB,
    ticks: cfg.ticks,
    pagesPerTick: round(requests.listings / cfg.ticks, 1),
    cpuPerTickMs: round(cpuMs / cfg.ticks, 1),
    cpuPerTickPerWaitUs: round((cpuMs * 1000) / cfg.ticks / p, 2),
    wallPerTickMs: Math.round(wallMs / cfg.ticks),
  };
}
