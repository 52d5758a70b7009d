/**
 * The benchmarks' pictures: each result drawn as an SVG beside its JSON under `bench/results/`, with
 * vega-lite (compiled to a vega view rendered headless, no browser or canvas needed).
 *
 * @module
 */
import { writeFileSync } from 'node:fs';
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';
import type { ChurnRow } from './churn.js';
import { summarise, type FleetChurnRow } from './fleetChurn.js';
import type { FleetSimRow } from './fleetSim.js';
import type { FleetRow } from './fleetWait.js';
import type { OverheadResult } from './overhead.js';

type Spec = vegaLite.TopLevelSpec;
/** One panel of an `hconcat`. */
type Panel = Extract<Spec, { hconcat: unknown }>['hconcat'][number];

async function render(spec: Spec, file: URL): Promise<void> {
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  writeFileSync(file, await view.toSVG());
  view.finalize();
}

/** Fleet: poll requests per deletion and mean lag, by pending deletes, for osc-lib's loop and nova-guard. */
function fleetSpec(rows: FleetRow[]): Spec {
  const values = rows.flatMap((r) => [
    { n: r.n, policy: "osc-lib wait_for_delete (baseline)", requests: r.baseline.pollRequestsPerDeletion, lagMs: r.baseline.meanLagMs },
    { n: r.n, policy: 'waitForDelete', requests: r.novaGuard.pollRequestsPerDeletion, lagMs: r.novaGuard.meanLagMs },
    { n: r.n, policy: 'deleteServer(wait)', requests: r.deleteServer.pollRequestsPerDeletion, lagMs: r.deleteServer.meanLagMs },
  ]);
  const x = { field: 'n', type: 'quantitative', scale: { type: 'log' }, title: 'pending deletes on one client' } as const;
  const color = { field: 'policy', type: 'nominal', title: null } as const;
  return {
    title: 'Fleet wait: requests and detection lag per deletion',
    data: { values },
    hconcat: [
      {
        width: 280,
        height: 220,
        mark: { type: 'line', point: true },
        encoding: { x, y: { field: 'requests', type: 'quantitative', scale: { type: 'log' }, title: 'poll requests per deletion (log)' }, color },
      },
      {
        width: 280,
        height: 220,
        mark: { type: 'line', point: true },
        encoding: { x, y: { field: 'lagMs', type: 'quantitative', title: 'mean detection lag, ms' }, color },
      },
    ],
  };
}

/** Churn: makespan over the lower bound and quota 403s per job, by policy. */
function churnSpec(rows: ChurnRow[]): Spec {
  const values = rows.map((r) => ({ policy: r.policy, makespan: r.makespanOverLowerBound, failed: r.failedJobs, quota403s: r.quota403sPerJob }));
  const x = { field: 'policy', type: 'nominal', title: null, sort: null } as const;
  return {
    title: 'Churn: workers sharing one core quota',
    data: { values },
    hconcat: [
      { width: 200, height: 200, mark: 'bar', encoding: { x, y: { field: 'makespan', type: 'quantitative', title: 'makespan / lower bound' } } },
      { width: 200, height: 200, mark: 'bar', encoding: { x, y: { field: 'failed', type: 'quantitative', title: 'failed jobs' } } },
      { width: 200, height: 200, mark: 'bar', encoding: { x, y: { field: 'quota403s', type: 'quantitative', title: 'quota 403s per job' } } },
    ],
  };
}

/** Fleet churn: makespan over the lower bound and requests per job, by number of hosts, per policy (median run, the bar its runs' min-max); nova-guard's over-commit and quota 403s. */
function hostsSpec(rows: FleetChurnRow[]): Spec {
  const values = summarise(rows).map((x) => ({
    hosts: x.hosts,
    policy: x.policy,
    makespan: x.median.makespanOverLowerBound,
    makespanMin: x.makespanOverLowerBound[0],
    makespanMax: x.makespanOverLowerBound[1],
    requests: x.medianRequestsPerJob,
    requestsMin: x.requestsPerJob[0],
    requestsMax: x.requestsPerJob[1],
  }));
  const ticks: number[] = [...new Set(rows.map((r) => r.hosts))];
  const x = { field: 'hosts', type: 'quantitative' as const, scale: { type: 'log' as const, base: 2 }, axis: { values: ticks }, title: 'worker hosts (processes), 3 workers each' };
  const color = { field: 'policy', type: 'nominal', title: null } as const;
  const spreadPanel = (field: 'makespan' | 'requests', title: string, rule?: number): Panel => ({
    width: 280,
    height: 220,
    layer: [
      { mark: { type: 'line', point: true }, encoding: { x, y: { field, type: 'quantitative', title, scale: { zero: false } }, color } },
      { mark: { type: 'rule', strokeWidth: 2 }, encoding: { x, y: { field: `${field}Min`, type: 'quantitative' }, y2: { field: `${field}Max` }, color } },
      ...(rule === undefined ? [] : [{ mark: { type: 'rule' as const, color: 'red', strokeDash: [4, 4] }, encoding: { y: { datum: rule, type: 'quantitative' as const } } }]),
    ],
  });
  return {
    title: 'Fleet churn: hosts sharing one core quota (median of the runs; bars: min-max)',
    data: { values },
    hconcat: [spreadPanel('makespan', 'makespan / lower bound', 1.1), spreadPanel('requests', 'requests to Nova per job'), quotaPanel(rows)],
  };
}

/** Fleet churn, nova-guard's rows: the most cores held at once and the quota 403s (the worst run), each over the quota (the red rule: 1 = the quota). */
function quotaPanel(rows: FleetChurnRow[]): Panel {
  const values = summarise(rows.filter((r) => r.policy.startsWith('nova-guard'))).flatMap((x) => {
    const runs = rows.filter((r) => r.hosts === x.hosts && r.policy === x.policy);
    const row = `${x.hosts} host(s), ${x.policy.replace(/^nova-guard \((.*)\)$/, '$1')}`;
    return [
      { row, measure: 'peak cores held / quota', value: Math.max(...runs.map((r) => r.peakCores)) / x.median.quotaCores },
      { row, measure: 'quota 403s / quota', value: Math.max(...runs.map((r) => r.quota403s)) / x.median.quotaCores },
    ];
  });
  return {
    width: 280,
    height: 220,
    data: { values },
    layer: [
      {
        mark: 'bar',
        encoding: {
          y: { field: 'row', type: 'nominal', title: null, sort: null },
          yOffset: { field: 'measure', type: 'nominal' },
          x: { field: 'value', type: 'quantitative', title: 'over the core quota (target: held <= 1, 403s = 0)' },
          color: { field: 'measure', type: 'nominal', title: null },
        },
      },
      { mark: { type: 'rule', color: 'red', strokeDash: [4, 4] }, encoding: { x: { datum: 1, type: 'quantitative' } } },
    ],
  };
}

/** Overhead: heap per pending wait, shared engine against per-server waits, with the 50 MB per 10,000 target. */
function overheadSpec(r: OverheadResult): Spec {
  const values = [
    { mode: `shared (${r.pendingWaits} waits)`, kb: r.coalesced.heapPerWaitKB },
    { mode: `per-server (${r.perServer.waits} waits)`, kb: r.perServer.heapPerWaitKB },
  ];
  return {
    title: 'Heap per pending delete-wait',
    width: 300,
    height: 180,
    data: { values },
    layer: [
      { mark: 'bar', encoding: { x: { field: 'mode', type: 'nominal', title: null }, y: { field: 'kb', type: 'quantitative', title: 'KB per wait' } } },
      { mark: { type: 'rule', color: 'red' }, encoding: { y: { datum: 5, type: 'quantitative' } } },
    ],
  };
}

/** Fleet simulation: makespan over the bound (with the end-of-day tail), requests per job, and where the makespan goes, by run. */
function simSpec(rows: FleetSimRow[]): Spec {
  const run = (r: FleetSimRow): string => `${r.policy}${r.fleetWatcher ? ' + fleet watcher' : ''}, ${r.hosts} x ${r.workers / r.hosts}`;
  const values = rows.map((r) => ({ run: run(r), makespan: r.makespanOverSoundBound, requests: r.requestsPerJob }));
  const lags = rows
    .filter((r) => r.policy === 'nova-guard')
    .flatMap((r) => [
      { run: run(r), part: '404 detection lag', s: r.lags.detection404.makespanS },
      { run: run(r), part: 'wake-up lag', s: r.lags.wakeUp.makespanS },
      { run: run(r), part: 'counted twice', s: r.lags.countedTwice.makespanS },
      { run: run(r), part: 'fresh /limits waits', s: r.lags.freshLimits.makespanS },
      { run: run(r), part: 'end-of-day tail', s: r.tailS },
    ]);
  const x = { field: 'run', type: 'nominal', title: null, sort: null } as const;
  return {
    title: 'Fleet simulation in virtual time (30 hosts: 515 cores, 300 hosts: 5,150; 2- and 4-core jobs)',
    hconcat: [
      {
        data: { values },
        width: 200,
        height: 220,
        layer: [
          { mark: 'bar', encoding: { x, y: { field: 'makespan', type: 'quantitative', title: 'makespan / bound (whole-job with the tail)' } } },
          { mark: { type: 'rule', color: 'red' }, encoding: { y: { datum: 1.05, type: 'quantitative' } } },
        ],
      },
      {
        data: { values },
        width: 200,
        height: 220,
        mark: 'bar',
        encoding: { x, y: { field: 'requests', type: 'quantitative', title: 'Nova requests per job' } },
      },
      {
        data: { values: lags },
        width: 200,
        height: 220,
        mark: 'bar',
        encoding: { x, y: { field: 's', type: 'quantitative', title: 'makespan seconds (cores x time / quota)' }, color: { field: 'part', type: 'nominal', title: null } },
      },
    ],
  };
}

/** Draw whichever results were measured. */
export async function drawResults(dir: URL, suffix: string, results: { fleet?: FleetRow[]; churn?: ChurnRow[]; hosts?: FleetChurnRow[]; overhead?: OverheadResult; sim?: FleetSimRow[] }): Promise<string[]> {
  const written: string[] = [];
  const draw = async (name: string, spec: Spec): Promise<void> => {
    const file = new URL(`${name}${suffix}.svg`, dir);
    await render(spec, file);
    written.push(file.pathname);
  };
  if (results.fleet) await draw('fleet', fleetSpec(results.fleet));
  if (results.churn) await draw('churn', churnSpec(results.churn));
  if (results.hosts) await draw('hosts', hostsSpec(results.hosts));
  if (results.overhead) await draw('overhead', overheadSpec(results.overhead));
  if (results.sim) await draw('sim', simSpec(results.sim));
  return written;
}
