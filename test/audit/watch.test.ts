/** `watchQuota` on fake timers: samples at the interval, drift that settles versus drift that stays. */
import { describe, expect, it } from 'vitest';
import { ValidationError, watchQuota } from '../../src/index.js';
import { driftTrend } from '../../src/audit/watch.js';
import { clientFor, fakeMs, settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();

describe('watchQuota', () => {
  it('samples every intervalMs; a delete that finishes settles, stale usage persists', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const deleting = nova.addServer({ flavorId: '2' }).id;
    nova.causes.stickDeleting(deleting);
    nova.causes.staleUsage({ cores: 8 });
    const at: number[] = [];
    const w = await settle(
      watchQuota(clientFor(nova), {
        samples: 3,
        intervalMs: 30_000,
        checkGhosts: false,
        onSample: (s) => {
          at.push(fakeMs());
          if (s.index === 0) nova.destroyServer(deleting);
        },
      }),
    );
    expect(at).toEqual([0, 30_000, 60_000]);
    expect(nova.requestsTo('GET', '/servers/detail').map((r) => r.timeMs - nova.requests[0]!.timeMs)).toEqual([0, 30_000, 60_000]);
    expect(w.samples.map((s) => s.drift.cores)).toEqual([8, 8, 8]);
    expect(w.samples.map((s) => s.counted.instances)).toEqual([2, 1, 1]);
    expect(w.trend).toEqual({ cores: 'persistent', ramMiB: 'none', instances: 'none' });
    expect(w.persistent).toEqual([{ kind: 'stale-usage', serverId: undefined }]);
    expect(w.settled).toEqual([{ kind: 'delete-in-flight', serverId: deleting }]);
    expect(w.last.verdict).toBe('over-reported');
  });

  it('a finding that appears in the first half and stays to the end is persistent (the trend rule); one that goes is settled', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const w = await settle(
      watchQuota(clientFor(nova), {
        samples: 4,
        intervalMs: 1_000,
        checkGhosts: false,
        onSample: (s) => {
          if (s.index === 0) nova.causes.staleUsage({ cores: 4 });
        },
      }),
    );
    expect(w.samples.map((s) => s.drift.cores)).toEqual([0, 4, 4, 4]);
    expect(w.trend.cores).toBe('persistent');
    expect(w.persistent).toEqual([{ kind: 'stale-usage', serverId: undefined }]);
    expect(w.settled).toEqual([]);
  });

  it('drift trend rules', () => {
    expect(driftTrend([0, 0])).toBe('none');
    expect(driftTrend([4, 2, 0])).toBe('settled');
    expect(driftTrend([0, 4, 4, 4])).toBe('persistent');
    expect(driftTrend([4, 0, 4])).toBe('fluctuating');
    expect(driftTrend([4, null])).toBe('unknown');
  });

  it('refuses bad sampling options before any request', async () => {
    const nova = await startNova();
    await expect(watchQuota(clientFor(nova), { samples: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(watchQuota(clientFor(nova), { intervalMs: -1 })).rejects.toBeInstanceOf(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });
});
