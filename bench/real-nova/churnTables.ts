/**
 * The real-Nova churn's tables (`run.ts` prints them after a run, `churnReport.ts` from a results
 * file): one row per run, where the makespan goes, and the spread over the runs.
 *
 * @module
 */
import { markdownTable } from '../table.js';
import type { RealChurnResult } from './churn.js';

/** One row per run and policy. */
export function churnTable(r: RealChurnResult): string {
  return markdownTable(
    ['run', 'policy', 'jobs', 'failed jobs', 'quota 403s', 'servers created', 'created, not used', 'ERROR servers (Nova)', 'reported gone before 404', 'makespan s', 'whole-job bound s', 'makespan / bound', 'fluid bound s', 'makespan / fluid', 'requests', 'requests per job'],
    r.rows.map((x) => [x.run, x.policy, x.jobs, x.failedJobs, x.quota403s, x.serversCreated, x.createdNotUsed, x.errorRowsInNova, x.analysis.reportedBefore404, x.makespanMs / 1000, x.lowerBoundMs / 1000, x.makespanOverLowerBound, x.fluidBoundMs / 1000, x.makespanOverFluidBound, x.requests, x.requestsPerJob]),
  );
}

/** Where the makespan goes and requests per job by kind, per run. */
export function churnLagTable(r: RealChurnResult): string {
  const lag = (l: { medianMs: number; maxMs: number; makespanS: number }): string => `${l.medianMs} / ${l.maxMs} ms (${l.makespanS} s)`;
  return markdownTable(
    ['run', 'policy', '404 detection median / max (makespan s)', 'wake-up', 'counted twice while another create waited', 'fresh /limits per job', 'POST', 'DELETE', 'GET /servers/{id}', 'listings', '/limits', 'other', 'missed 1.10x: cause'],
    r.rows.map((x) => {
      const a = x.analysis;
      return [x.run, x.policy, lag(a.lags.detection404), lag(a.lags.wakeUp), `${lag(a.lags.countedTwice)}, whole span ${a.lags.countedTwice.wholeMedianMs} ms`, lag(a.lags.limitsWait), a.kinds.post, a.kinds.delete, a.kinds.getServer, a.kinds.listings, a.kinds.limits, a.kinds.other, x.missCause || 'held'];
    }),
  );
}

/** Median (min–max) over the runs of each policy. */
export function churnSpread(r: RealChurnResult): string {
  const spread = (xs: number[]): string => {
    const s = [...xs].sort((a, b) => a - b);
    return `${s[Math.floor(s.length / 2)]} (${s[0]}–${s[s.length - 1]})`;
  };
  const policies = [...new Set(r.rows.map((x) => x.policy))];
  return markdownTable(
    ['policy', 'runs', 'failed jobs', 'quota 403s', 'ERROR servers', 'makespan / whole-job bound', 'makespan / fluid bound', 'requests per job', 'GET /limits per job', 'listings per job', 'GET /servers/{id} per job'],
    policies.map((p) => {
      const rows = r.rows.filter((x) => x.policy === p);
      return [p, rows.length, spread(rows.map((x) => x.failedJobs)), spread(rows.map((x) => x.quota403s)), spread(rows.map((x) => x.errorRowsInNova)), spread(rows.map((x) => x.makespanOverLowerBound)), spread(rows.map((x) => x.makespanOverFluidBound)), spread(rows.map((x) => x.requestsPerJob)), spread(rows.map((x) => x.analysis.kinds.limits)), spread(rows.map((x) => x.analysis.kinds.listings)), spread(rows.map((x) => x.analysis.kinds.getServer))];
    }),
  );
}
