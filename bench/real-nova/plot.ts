/**
 * The real-Nova bench's picture, drawn with vega-lite as `bench/plot.ts` draws the others: delete-and-wait
 * wall time and requests by fleet size and tool, and the churn's makespan over the lower bound, failed
 * jobs and requests per job by policy.
 *
 * @module
 */
import { writeFileSync } from 'node:fs';
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';
import type { RealChurnRow } from './churn.js';
import type { DeleteRow } from './deleteWait.js';

type Spec = vegaLite.TopLevelSpec;

/** Draw what was measured into `file`; returns false when there was nothing to draw. */
export async function drawRealNova(file: URL, deleteRows: DeleteRow[] | undefined, churnRows: RealChurnRow[] | undefined): Promise<boolean> {
  const rows: Array<{ hconcat: Array<Record<string, unknown>> }> = [];
  if (deleteRows && deleteRows.length > 0) {
    const values = deleteRows.map((r) => ({ tool: r.tool, servers: r.servers, wallS: r.wallMs / 1000, requests: r.requests, lagS: r.lagAfterLast404Ms / 1000 }));
    const x = { field: 'servers', type: 'quantitative', scale: { type: 'log' }, title: 'servers deleted at once' } as const;
    const color = { field: 'tool', type: 'nominal', title: null, legend: { labelLimit: 400 } } as const;
    const panel = (field: string, title: string, log: boolean): Record<string, unknown> => ({
      width: 220,
      height: 200,
      data: { values },
      mark: { type: 'line', point: true },
      encoding: { x, y: { field, type: 'quantitative', title, ...(log ? { scale: { type: 'log' } } : {}) }, color },
    });
    rows.push({ hconcat: [panel('wallS', 'wall time, s', false), panel('requests', 'requests to nova-api (log)', true), panel('lagS', 'return - last 404, s', false)] });
  }
  if (churnRows && churnRows.length > 0) {
    const values = churnRows.map((r) => ({ policy: r.policy, makespan: r.makespanOverLowerBound, failed: r.failedJobs, requests: r.requestsPerJob }));
    const x = { field: 'policy', type: 'nominal', title: null, sort: null } as const;
    const bar = (field: string, title: string): Record<string, unknown> => ({ width: 160, height: 200, data: { values }, mark: 'bar', encoding: { x, y: { field, type: 'quantitative', title } } });
    rows.push({ hconcat: [bar('makespan', 'churn: makespan / lower bound'), bar('failed', 'churn: failed jobs'), bar('requests', 'churn: requests per job')] });
  }
  if (rows.length === 0) return false;
  const spec = { title: 'nova-guard on a real Nova 26.2, beside openstackclient and openstacksdk', vconcat: rows } as unknown as Spec;
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  writeFileSync(file, await view.toSVG());
  view.finalize();
  return true;
}
