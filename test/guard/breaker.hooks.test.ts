/**
 * Hostile hooks: an `onWait` or `onRetry` that is async and rejects (a common slip: `async (info)
 * => { await report(info) }` with a failing report) is ignored and logged like one that throws,
 * never an unhandled rejection (which ends a Node process). Fake timers, FakeNova.
 */
import { describe, expect, it } from 'vitest';
import { settle, useFakeClock } from '../helpers.js';
import { body, guardFor, quota403, startNova } from './fixtures.js';
import { warnLog } from './support/testLedger.js';

useFakeClock();

const unhandled = (): { seen: unknown[]; off: () => void } => {
  const seen: unknown[] = [];
  const on = (e: unknown): void => void seen.push(e);
  process.on('unhandledRejection', on);
  return { seen, off: () => process.off('unhandledRejection', on) };
};

describe('async hooks that reject', () => {
  it('onWait: the rejection is logged as the hook failing, no unhandled rejection, the create goes on', async () => {
    const u = unhandled();
    try {
      const nova = await startNova({ maxTotalCores: 2 });
      const blocker = nova.addServer({ flavorId: '2', status: 'ACTIVE' });
      const { logger, warnings } = warnLog();
      const guard = guardFor(nova, { logger, onWait: async () => Promise.reject(new Error('report failed')) });
      setTimeout(() => nova.destroyServer(blocker.id), 100);
      const s = await settle(guard.createServer(body('x', '2')));
      await settle(new Promise((r) => setTimeout(r, 10)));
      expect(s.status).toBe('ACTIVE');
      expect(warnings()).toContain('onWait hook threw (ignored)');
      expect(u.seen).toEqual([]);
      await guard.close();
    } finally {
      u.off();
    }
  });

  it('onRetry: the rejection is logged as the hook failing, no unhandled rejection, the retry goes on', async () => {
    const u = unhandled();
    try {
      const nova = await startNova({ maxTotalCores: 8 });
      nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403('Quota exceeded for cores: Requested 2, but already used 8 of 8 cores'), times: 1 });
      const { logger, warnings } = warnLog();
      const guard = guardFor(nova, { logger, onRetry: (async () => Promise.reject(new Error('report failed'))) as never });
      const s = await settle(guard.createServer(body('x', '2')));
      await settle(new Promise((r) => setTimeout(r, 10)));
      expect(s.status).toBe('ACTIVE');
      expect(warnings()).toContain('onRetry hook threw (ignored)');
      expect(u.seen).toEqual([]);
      await guard.close();
    } finally {
      u.off();
    }
  });
});

describe("the guard's deleteOptions.onProgress, async and rejecting", () => {
  it('a server the guard deletes (a late quota fault) is deleted and the create retried; the rejections ignored, none unhandled', async () => {
    const u = unhandled();
    try {
      const nova = await startNova({ maxTotalCores: 8, buildDelayMs: 20, deleteDelayMs: 20 });
      nova.failCreatesWithQuotaRecheck(1);
      let calls = 0;
      const guard = guardFor(nova, {
        deleteOptions: {
          intervalMs: 5,
          timeoutMs: 3000,
          redeleteAfterMs: 0,
          onProgress: (async () => {
            calls++;
            throw new Error('progress report failed');
          }) as never,
        },
      });
      const s = await settle(guard.createServer(body('x', '2')));
      await settle(new Promise((r) => setTimeout(r, 10)));
      expect(s.status).toBe('ACTIVE');
      expect(guard.stats.lateQuotaFaults).toBe(1);
      expect(calls).toBeGreaterThan(0);
      expect(u.seen).toEqual([]);
      await guard.close();
    } finally {
      u.off();
    }
  });
});
