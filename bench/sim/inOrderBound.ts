/**
 * The in-order bound of a simulated day: the makespan an ideal scheduler reaches with the same jobs,
 * taken in the same order from the one queue, by the same number of workers, under the same quota,
 * when every job holds its cores exactly from its POST to its row's destruction (its own measured
 * time) and nothing is lost between jobs (no 404 detection lag, no wake-up lag, no wait for
 * `/limits`, no core counted twice).
 *
 * The whole-job bound spreads the day's core-time evenly over the quota; no scheduler that pulls jobs
 * in order can reach it when the last jobs drawn are long (they start when the queue empties and run
 * alone: the end-of-day tail). This bound keeps that tail, so `makespan / inOrderBound` is what the
 * guard's lags cost on the same timeline, like with like.
 *
 * Greedy list scheduling: job i starts at the earliest moment, no earlier than job i-1 started, at
 * which a worker is free and its cores fit beside the running jobs.
 *
 * @module
 */
import { MinHeap } from './minHeap.js';

/** One job as the bound sees it (durations in ms). */
export interface BoundJob {
  readonly cores: number;
  /** Its server's POST to the destruction of its row, in ms. */
  readonly heldMs: number;
}

/**
 * The in-order bound (see the module), in ms.
 * @param jobs - in queue order.
 * @param workers - how many jobs may run at once.
 * @param quotaCores - the project's core quota.
 * @throws `RangeError` when a job needs more cores than the quota.
 */
export function inOrderBoundMs(jobs: readonly BoundJob[], workers: number, quotaCores: number): number {
  // Running jobs as [end time, cores], the earliest end first.
  const running = new MinHeap<[number, number]>((a, b) => a[0] < b[0]);
  let used = 0;
  let t = 0;
  let makespan = 0;
  for (const job of jobs) {
    if (job.cores > quotaCores) throw new RangeError(`a job of ${job.cores} cores cannot fit a quota of ${quotaCores}`);
    // Jobs that ended by t free their cores; then wait for ends until this one fits.
    for (let top = running.peek(); top && (top[0] <= t || running.size >= workers || used + job.cores > quotaCores); top = running.peek()) {
      running.pop();
      used -= top[1];
      t = Math.max(t, top[0]);
    }
    const end = t + job.heldMs;
    running.push([end, job.cores]);
    used += job.cores;
    makespan = Math.max(makespan, end);
  }
  return makespan;
}

/**
 * The pull-order bound, in ms: a lower bound on the makespan of EVERY scheduler of these jobs whose
 * `workers` workers take them from one queue in order (job j is pulled no earlier than job j-1) and
 * keep a job from its pull to the end of its server, under `slotCores` cores at a time (the quota in
 * whole slots), with each job's own measured time. Unlike {@link inOrderBoundMs} it does not assume
 * the jobs START in order: a later small job may pass a waiting large one.
 *
 * Why it is a bound: when job j is pulled a worker is free, so at most `workers - 1` of the jobs
 * before it still run, and at least `j - (workers - 1)` of them have ended. Their core-time (at
 * least that of all the jobs before j but the `workers - 1` largest) was spent before the pull, at
 * most `slotCores` at a time: `pull(j) >= that / slotCores`. Every job k >= j is pulled no earlier
 * and then runs its own time: `makespan >= pull(j) + max over k >= j of heldMs(k)`. The bound is the
 * largest of these over j; with j = the first job it is the longest job.
 *
 * It keeps the end-of-day tail every such scheduler pays (the last jobs pulled cannot start before
 * most of the day's core-time is spent, and run their own time after), which the whole-job bound
 * (core-time spread evenly over the quota) leaves out. It is not reachable in general: it lets the
 * `workers - 1` largest jobs run beside the pull for free.
 *
 * @param jobs - in queue order (`cores` x `heldMs` is a job's core-time).
 * @param workers - how many jobs may be held at once.
 * @param slotCores - the most cores held at once (the quota in whole slots of the flavors' common divisor).
 */
export function pullOrderBoundMs(jobs: readonly BoundJob[], workers: number, slotCores: number): number {
  const n = jobs.length;
  const pull = new Array<number>(n).fill(0);
  // The workers - 1 largest core-times before j (smallest on top), and their sum.
  const largest = new MinHeap<number>((a, b) => a < b);
  let largestSum = 0;
  let before = 0;
  for (let j = 0; j < n; j++) {
    pull[j] = Math.max(0, before - largestSum) / slotCores;
    const w = jobs[j]!.cores * jobs[j]!.heldMs;
    before += w;
    if (workers - 1 > 0) {
      largest.push(w);
      largestSum += w;
      if (largest.size > workers - 1) largestSum -= largest.pop()!;
    }
  }
  let bound = 0;
  let longestAfter = 0;
  for (let j = n - 1; j >= 0; j--) {
    longestAfter = Math.max(longestAfter, jobs[j]!.heldMs);
    bound = Math.max(bound, pull[j]! + longestAfter);
  }
  return bound;
}
