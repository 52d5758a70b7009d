/**
 * A server the scheduler could not place (NoValidHost: ERROR in cell0, an instance but no cores or
 * RAM) fails for capacity, not quota: the guard deletes it and throws a ServerBuildError marked
 * `capacity`, never a quota retry. FakeNova through its adapter, on fake timers.
 */
import { describe, expect, it } from 'vitest';
import { ServerBuildError } from '../../src/guard/index.js';
import { body, guardFor, liveServers, posts, startNova } from './fixtures.js';
import { rejection, settle, useFakeClock } from '../helpers.js';

useFakeClock();

describe('NoValidHost after the 202', () => {
  it('is deleted and reported as a capacity failure after exactly one POST (no quota retry)', async () => {
    const nova = await startNova({ buildDelayMs: 10, deleteDelayMs: 10 });
    nova.failCreatesWithQuotaRecheck(1, 'No valid host was found. There are not enough hosts available.');
    const guard = guardFor(nova);
    const e = await rejection(settle(guard.createServer(body('nvh'))));
    expect(e).toBeInstanceOf(ServerBuildError);
    expect(e).toMatchObject({ reason: 'error', capacity: true, deleted: true });
    expect(posts(nova)).toHaveLength(1);
    expect(liveServers(nova)).toEqual([]);
  });

  it('a quota fault is not a capacity failure', async () => {
    const { ServerBuildError: E } = await import('../../src/guard/index.js');
    const quota = new E({ serverId: 's', reason: 'error', lastStatus: 'ERROR', faultMessage: 'Quota exceeded for cores: Requested 2, but already used 10 of 10 cores', faultCode: 413, elapsedMs: 1, deleted: true });
    expect(quota.capacity).toBe(false);
  });
});
