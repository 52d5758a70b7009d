/**
 * The guard's own verdicts are its own error classes (NovaGuardError, no `status`), never an HTTP
 * error with `status: 0`: "can never fit" (QuotaNeverFitsError) and "the server went to ERROR with a
 * quota fault" (QuotaBuildFaultError).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NovaApiError, NovaGuardError, QuotaExceededError } from '../../src/errors/index.js';
import { QuotaBuildFaultError, QuotaNeverFitsError, ServerBuildError } from '../../src/guard/index.js';
import { body, guardFor, posts, startNova } from './fixtures.js';
import { rejection, settle, useFakeClock } from '../helpers.js';

useFakeClock();
afterEach(() => {
  vi.useRealTimers();
});

/** An error of a guard verdict: a NovaGuardError that is not an HTTP error and carries no status at all. */
function expectVerdictError(err: Error): void {
  expect(err).toBeInstanceOf(NovaGuardError);
  expect(err).not.toBeInstanceOf(NovaApiError);
  expect(err).not.toBeInstanceOf(QuotaExceededError);
  expect('status' in err).toBe(false);
}

describe('guard verdicts are their own errors, never a status-0 HTTP error', () => {
  it('"never fits" (needed above the limit itself) is a QuotaNeverFitsError with the shortfall, needs and headroom; 0 POSTs', async () => {
    const nova = await startNova({ maxTotalCores: 4, maxTotalRAMSize: 1024 });
    const err = await rejection(settle(guardFor(nova).createServer(body('big'), { needs: { cores: 8, ramMiB: 512, instances: 1 } })));
    expect(err).toBeInstanceOf(QuotaNeverFitsError);
    expectVerdictError(err);
    const e = err as QuotaNeverFitsError;
    expect(e.permanent).toBe(true);
    expect(e.needs).toEqual({ cores: 8, ramMiB: 512, instances: 1 });
    expect(e.shortfalls).toEqual([expect.objectContaining({ resource: 'cores', needed: 8, max: 4, used: 0 })]);
    expect(e.resources).toEqual([{ name: 'cores', requested: 8, used: 0, allowed: 4 }]);
    expect(e.headroom.cores.max).toBe(4);
    expect(typeof e.requestId).toBe('string');
    expect(e.message).toContain('maxTotalCores=4');
    expect(posts(nova)).toHaveLength(0);
  });

  it('"never fits" through withQuotaGuard is the same QuotaNeverFitsError; fn is never called', async () => {
    const nova = await startNova({ maxTotalInstances: 1 });
    let calls = 0;
    const err = await rejection(
      settle(
        guardFor(nova).withQuotaGuard({ cores: 1, ramMiB: 1, instances: 2 }, async () => {
          calls++;
        }),
      ),
    );
    expect(err).toBeInstanceOf(QuotaNeverFitsError);
    expectVerdictError(err);
    expect(calls).toBe(0);
  });

  it('a server that went to ERROR with a quota fault (retries spent) is a QuotaBuildFaultError caused by a ServerBuildError', async () => {
    const nova = await startNova({ buildDelayMs: 2 });
    nova.failCreatesWithQuotaRecheck(10);
    const err = await rejection(settle(guardFor(nova, { maxAttempts: 2 }).createServer(body('late'))));
    expect(err).toBeInstanceOf(QuotaBuildFaultError);
    expectVerdictError(err);
    const e = err as QuotaBuildFaultError;
    expect(e.permanent).toBe(false);
    expect(e.serverId).toBe(posts(nova)[1]!.serverId);
    expect(e.resources).toEqual([expect.objectContaining({ name: 'cores' })]);
    expect(e.cause).toBeInstanceOf(ServerBuildError);
    expect((e.cause as ServerBuildError).deleted).toBe(true);
  });
});
