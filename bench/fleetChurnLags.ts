/**
 * Where the makespan of one fleet churn run goes (issue 20, item 6), from the fake's timeline (when
 * each server's POST and DELETE were accepted) and the hosts' traces (when each create started,
 * each claim ended as counted, each delete returned at its 404), all on this machine's wall clock:
 *
 * - 404 detection lag: from the server's destroy (its DELETE accepted + the fake's delete time and
 *   DELETED window) to its worker's `deleteServer(wait)` returning;
 * - wake-up lag: from a delete returning while some create waited to the next POST Nova accepted;
 * - counted twice: from Nova counting the server (POST + scheduling) to its claim ending (`'counted'`);
 * - /limits waits: the time a host waited for `GET /limits` answers.
 *
 * Each is a mean per event (ms) and its share of the makespan: the sum of 2 cores x its time over the
 * quota (ms), as the simulation's table prints it. Left at 0 for a policy that has none (it awaits no 404).
 *
 * @module
 */
import type { FakeTimeline } from './fakeProcess.js';
import type { HostTrace } from './fleetHost.js';
import { mean, round } from './stats.js';

/** One lag: mean per event and share of the makespan, in ms. */
export interface LagShare {
  n: number;
  meanMs: number;
  makespanMs: number;
}

/** Where one run's makespan goes. */
export interface ChurnLags {
  detection404: LagShare;
  wakeUp: LagShare;
  countedTwice: LagShare;
  limitsWait: LagShare;
}

/** The fake's timings a lag is measured against (ms). */
export interface LagTimings {
  deleteDelayMs: number;
  deletedWindowMs: number;
  schedulingDelayMs: number;
  quotaCores: number;
  coresPerServer: number;
}

/** Compute {@link ChurnLags} of one run. */
export function churnLags(timeline: FakeTimeline, traces: readonly HostTrace[], t: LagTimings): ChurnLags {
  const share = (xs: number[], total = xs.reduce((a, b) => a + b, 0)): LagShare => ({
    n: xs.length,
    meanMs: xs.length ? round(mean(xs), 1) : 0,
    makespanMs: Math.round((t.coresPerServer * total) / t.quotaCores),
  });
  const detection: number[] = [];
  const twice: number[] = [];
  const posts = Object.values(timeline.servers)
    .map((s) => s.postAtMs)
    .filter((x): x is number => x !== undefined)
    .sort((a, b) => a - b);
  const starts = traces.flatMap((h) => h.createStarts).sort((a, b) => a - b);
  const returned = traces.flatMap((h) => h.deleteReturned).sort((a, b) => a[1] - b[1]);
  for (const [id, atMs] of returned) {
    const d = timeline.servers[id]?.deleteAtMs;
    if (d !== undefined) detection.push(Math.max(0, atMs - (d + t.deleteDelayMs + t.deletedWindowMs)));
  }
  for (const [id, atMs] of traces.flatMap((h) => h.counted)) {
    const p = timeline.servers[id]?.postAtMs;
    if (p !== undefined) twice.push(Math.max(0, atMs - (p + t.schedulingDelayMs)));
  }
  // A create waits at time x when more creates started by x than POSTs were accepted by x.
  const countAtOrBefore = (xs: number[], x: number): number => {
    let lo = 0;
    let hi = xs.length;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (xs[m]! <= x) lo = m + 1;
      else hi = m;
    }
    return lo;
  };
  const wake: number[] = [];
  for (const [, atMs] of returned) {
    const p = countAtOrBefore(posts, atMs);
    if (countAtOrBefore(starts, atMs) > p && p < posts.length) wake.push(posts[p]! - atMs);
  }
  const limits = traces.reduce((n, h) => n + h.limits, 0);
  const limitsWaitMs = traces.reduce((n, h) => n + h.limitsWaitMs, 0);
  return {
    detection404: share(detection),
    wakeUp: share(wake),
    countedTwice: share(twice),
    limitsWait: { n: limits, meanMs: limits ? round(limitsWaitMs / limits, 1) : 0, makespanMs: Math.round((t.coresPerServer * limitsWaitMs) / t.quotaCores) },
  };
}
