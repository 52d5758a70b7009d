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
