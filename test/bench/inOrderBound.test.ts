import { describe, expect, it } from 'vitest';
import { inOrderBoundMs } from '../../bench/sim/inOrderBound.js';

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
