import { describe, expect, it } from 'vitest';
import { churnLags } from '../../bench/fleetChurnLags.js';

const timings = { deleteDelayMs: 100, deletedWindowMs: 2, schedulingDelayMs: 30, quotaCores: 4, coresPerServer: 2 };

describe('churnLags (where a fleet churn run\'s makespan goes)', () => {
  it('measures each lag from the fake\'s timeline and the hosts\' traces', () => {
    const timeline = {
      servers: { a: { postAtMs: 1000, deleteAtMs: 3000 }, b: { postAtMs: 1500, deleteAtMs: 3500 }, c: { postAtMs: 3200 } },
      serversLeft: 0,
    };
    const trace = {
      // Three creates began; c's waited from 1600 until a was seen gone.
      createStarts: [990, 1490, 1600],
      counted: [['a', 1100], ['b', 1530]] as Array<[string, number]>,
      // a destroyed at 3102, seen at 3150 (48 ms late) while c waited; b destroyed at 3602, seen at 3602.
      deleteReturned: [['a', 3150], ['b', 3602]] as Array<[string, number]>,
      limits: 2,
      limitsWaitMs: 30,
    };
    const lags = churnLags(timeline, [trace], timings);
    expect(lags.detection404).toEqual({ n: 2, meanMs: 24, makespanMs: 24 });
    // Counted twice: a 1100 - 1030 = 70, b 1530 - 1530 = 0.
    expect(lags.countedTwice).toEqual({ n: 2, meanMs: 35, makespanMs: 35 });
    // Wake-up: a returned at 3150 while c's create waited; the next POST at 3200. At b's return nobody waited.
    expect(lags.wakeUp).toEqual({ n: 1, meanMs: 50, makespanMs: 25 });
    expect(lags.limitsWait).toEqual({ n: 2, meanMs: 15, makespanMs: 15 });
  });
});
