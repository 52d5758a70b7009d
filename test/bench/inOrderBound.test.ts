import { describe, expect, it } from 'vitest';
import { inOrderBoundMs, pullOrderBoundMs } from '../../bench/sim/inOrderBound.js';

describe('inOrderBoundMs (the ideal in-order schedule of a simulated day)', () => {
  it('runs jobs side by side while their cores fit the quota', () => {
    const jobs = [
      { cores: 2, heldMs: 100 },
      { cores: 2, heldMs: 100 },
      { cores: 2, heldMs: 100 },
    ];
    expect(inOrderBoundMs(jobs, 10, 4)).toBe(200);
  });

  it('keeps the queue order: a small job never starts before an earlier one that waits for room', () => {
    const jobs = [
      { cores: 2, heldMs: 100 },
      { cores: 4, heldMs: 10 },
      { cores: 2, heldMs: 1 },
    ];
    // 0-100, then the 4-core job 100-110, then the last 110-111 (it would fit at 0 out of order).
    expect(inOrderBoundMs(jobs, 10, 4)).toBe(111);
  });

  it('starts a job that fits beside the running ones at once', () => {
    const jobs = [
      { cores: 4, heldMs: 10 },
      { cores: 2, heldMs: 100 },
      { cores: 2, heldMs: 5 },
    ];
    expect(inOrderBoundMs(jobs, 10, 4)).toBe(110);
  });

  it('is bounded by the number of workers', () => {
    expect(inOrderBoundMs([{ cores: 2, heldMs: 5 }, { cores: 2, heldMs: 5 }, { cores: 2, heldMs: 5 }], 1, 100)).toBe(15);
  });

  it('keeps the end-of-day tail: a long last job runs after the queue empties', () => {
    const jobs = [...Array.from({ length: 8 }, () => ({ cores: 2, heldMs: 10 })), { cores: 2, heldMs: 50 }];
    // 4 slots of 2 cores: two rounds of 4 (0-20), the last job 20-70; the whole-job bound would say max(50, 120/4 = 30) = 50.
    expect(inOrderBoundMs(jobs, 100, 8)).toBe(70);
  });

  it('refuses a job larger than the quota', () => {
    expect(() => inOrderBoundMs([{ cores: 8, heldMs: 1 }], 1, 4)).toThrow(RangeError);
  });
});

describe('pullOrderBoundMs (a lower bound for every scheduler that pulls the jobs in order)', () => {
  it('keeps the end-of-day tail the even whole-job bound leaves out', () => {
    // 2 workers, 2 slots of 2 cores: the last job is pulled once 3 of the 4 before it ended (>= 3 x 20 core-ms / 4 = 15 ms), then runs 50 ms.
    const jobs = [...Array.from({ length: 4 }, () => ({ cores: 2, heldMs: 10 })), { cores: 2, heldMs: 50 }];
    const wholeJob = Math.max(50, (2 * 90) / 4); // 50
    expect(pullOrderBoundMs(jobs, 2, 4)).toBe(65);
    expect(pullOrderBoundMs(jobs, 2, 4)).toBeGreaterThan(wholeJob);
    // The best in-order schedule: two rounds of two (0-20), the last 20-70.
    expect(inOrderBoundMs(jobs, 2, 4)).toBe(70);
  });

  it('stays below a schedule that lets a later small job pass a waiting large one (where the in-order schedule does not)', () => {
    const jobs = [
      { cores: 2, heldMs: 100 },
      { cores: 4, heldMs: 10 },
      { cores: 2, heldMs: 1 },
    ];
    // Out of order: the third job at 0 beside the first, the 4-core job 100-110.
    expect(inOrderBoundMs(jobs, 10, 4)).toBe(111);
    expect(pullOrderBoundMs(jobs, 10, 4)).toBeLessThanOrEqual(110);
    expect(pullOrderBoundMs(jobs, 10, 4)).toBe(100);
  });

  it('is the longest job when there are more workers than jobs', () => {
    expect(pullOrderBoundMs([{ cores: 2, heldMs: 5 }, { cores: 2, heldMs: 7 }, { cores: 4, heldMs: 3 }], 10, 4)).toBe(7);
  });

  it('never exceeds the best in-order schedule and is never below the longest job (random days)', () => {
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let day = 0; day < 200; day++) {
      const n = 1 + Math.floor(random() * 40);
      const jobs = Array.from({ length: n }, () => ({ cores: random() < 0.7 ? 2 : 4, heldMs: 1 + Math.floor(random() * 100) }));
      const workers = 1 + Math.floor(random() * 8);
      const quota = 4 + 2 * Math.floor(random() * 6);
      const bound = pullOrderBoundMs(jobs, workers, quota);
      // The in-order schedule is one schedule that pulls in order: no bound may exceed it.
      expect(bound).toBeLessThanOrEqual(inOrderBoundMs(jobs, workers, quota) + 1e-9);
      expect(bound).toBeGreaterThanOrEqual(Math.max(...jobs.map((j) => j.heldMs)));
    }
  });
});
