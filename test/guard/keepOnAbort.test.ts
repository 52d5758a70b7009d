// QuotaGuard.createServer's keepOnAbort: an abort during the wait for ACTIVE keeps the server and
// names it (AbortError.serverId), where by default the guard deletes it.
import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortError, QuotaGuard } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

async function abortWhileBuilding(keepOnAbort: boolean | undefined) {
  const nova = await startNova({ buildDelayMs: 600_000, deleteDelayMs: 10 });
  const guard = new QuotaGuard(clientFor(nova), { activeIntervalMs: 20, deleteOptions: { intervalMs: 10 } });
  const ac = new AbortController();
  const call = guard.createServer({ name: 'k', flavorRef: '1', imageRef: 'img', networks: 'none' }, { signal: ac.signal, ...(keepOnAbort === undefined ? {} : { keepOnAbort }) });
  const caught = call.catch((e: unknown) => e);
  while (nova.listServerStates().length === 0) await sleep(10);
  await sleep(50);
  const serverId = nova.listServerStates()[0]!.id;
  ac.abort(new Error('stop'));
  const error = await caught;
  await guard.close();
  return { nova, error, serverId };
}

describe('QuotaGuard.createServer keepOnAbort', () => {
  it('keepOnAbort: true keeps the building server, no DELETE, and the AbortError names it (without it the guard deletes it)', async () => {
    const { nova, error, serverId } = await abortWhileBuilding(true);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as AbortError).serverId).toBe(serverId);
    expect((error as AbortError).message).toContain(`server ${serverId} was created and is kept`);
    expect(nova.requestsTo('DELETE', /^\/servers\//)).toHaveLength(0);
    expect(nova.getServerState(serverId)?.status).toBe('BUILD');
    // Without it, as before: the guard deletes the server before rejecting.
    const other = await abortWhileBuilding(undefined);
    expect((other.error as AbortError).message).toContain(`server ${other.serverId} was deleted`);
    expect(other.nova.requestsTo('DELETE', /^\/servers\//).length).toBeGreaterThan(0);
  });
});
