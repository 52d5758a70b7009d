// QuotaGuard.close() ends the creates waiting for quota headroom: they reject with AbortError at
// once, no /limits read and no POST follows, and the waiting-creates gauge is back where it was.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortError, QuotaGuard } from '../../src/index.js';
import { waitingCreatesNow } from '../../src/core/telemetry.js';
import { clientFor, startNova } from '../helpers.js';

describe('QuotaGuard.close() and waiting creates', () => {
  it('a create waiting for headroom rejects with AbortError when the guard closes; nothing is sent after', async () => {
    // One core of quota, held by a server that is never deleted: the create waits (maxWaitMs 1 h).
    const nova = await startNova({ maxTotalCores: 1 });
    nova.addServer({ name: 'holder', flavorId: '1' });
    const guard = new QuotaGuard(clientFor(nova), { maxWaitMs: 3_600_000, baseDelayMs: 50, maxDelayMs: 50, minDelayMs: 50 });
    const before = waitingCreatesNow();
    const call = guard.createServer({ name: 'w', flavorRef: '1', imageRef: 'img', networks: 'none' });
    const caught = call.catch((e: unknown) => e);
    while (nova.requestsTo('GET', '/limits').length < 3) await sleep(10);
    expect(waitingCreatesNow()).toBe(before + 1);
    await guard.close();
    const error = await caught;
    expect(error).toBeInstanceOf(AbortError);
    expect(waitingCreatesNow()).toBe(before);
    const reads = nova.requestsTo('GET', '/limits').length;
    await sleep(300);
    expect(nova.requestsTo('GET', '/limits')).toHaveLength(reads);
    expect(nova.requestsTo('POST', '/servers')).toHaveLength(0);
  });
});
