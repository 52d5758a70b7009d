// What a newcomer on an emptied Redis store subtracts (issue 19): the servers Nova lists but does not
// count yet (`listUncounted`), by the guard's one rule of "past scheduling". Fake timers: FakeNova's
// builds stay `scheduling` for 400 ms, then `spawning` (counted), ACTIVE at 1000 ms.
import { describe, expect, it } from 'vitest';
import { listUncounted } from '../../src/guard/limitsRead.js';
import { CLAIM_ID_KEY } from '../../src/guard/index.js';
import { settle, useFakeClock } from '../helpers.js';
import { body, clientFor, startNova } from './fixtures.js';

useFakeClock();

describe('listUncounted: the servers Nova does not count yet', () => {
  it('lists BUILD servers still scheduling with their flavor and claim id; leaves out ACTIVE, spawning, ERROR and soft-deleted ones; none once scheduling ended', async () => {
    const nova = await startNova({ maxTotalCores: 40, buildDelayMs: 1000, schedulingDelayMs: 400 });
    const client = clientFor(nova);
    nova.addServer({ id: 'active-1', flavorId: '3', status: 'ACTIVE', vmState: 'active', taskState: null });
    nova.addServer({ id: 'error-1', flavorId: '3', status: 'ERROR', vmState: 'error', taskState: 'scheduling' });
    nova.addServer({ id: 'soft-1', flavorId: '3', status: 'SOFT_DELETED', vmState: 'soft-delete', taskState: null });
    const guarded = await settle(client.createServer({ ...body('guarded', '2'), metadata: { [CLAIM_ID_KEY]: 'claim-7' } }));
    const plain = await settle(client.createServer(body('plain', '1')));
    const before = await settle(listUncounted(client, undefined));
    expect(before.map((s) => s.serverId).sort()).toEqual([guarded.id, plain.id].sort());
    expect(before.find((s) => s.serverId === guarded.id)).toEqual({ serverId: guarded.id, claimId: 'claim-7', needs: { cores: 2, ramMiB: 2048, instances: 1 } });
    expect(before.find((s) => s.serverId === plain.id)).toEqual({ serverId: plain.id, claimId: undefined, needs: { cores: 1, ramMiB: 512, instances: 1 } });
    // One listing: a single GET /servers/detail (flavors embedded, no GET /flavors).
    expect(nova.requests.filter((r) => r.method === 'GET').map((r) => r.path)).toEqual(['/servers/detail']);

    // At 400 ms conductor has made both instances: Nova counts them, nothing is left to subtract.
    await settle(new Promise((r) => setTimeout(r, 400)));
    const after = await settle(listUncounted(client, undefined));
    expect(after).toEqual([]);
  });

  it('a BUILD server with a null task_state and no host is not counted yet either; one on a host is', async () => {
    const nova = await startNova({ maxTotalCores: 40 });
    const client = clientFor(nova);
    nova.addServer({ id: 'null-task', flavorId: '2', status: 'BUILD', vmState: 'building', taskState: null });
    nova.addServer({ id: 'spawning', flavorId: '2', status: 'BUILD', vmState: 'building', taskState: 'spawning' });
    const listed = await settle(listUncounted(client, undefined));
    expect(listed).toEqual([{ serverId: 'null-task', claimId: undefined, needs: { cores: 2, ramMiB: 2048, instances: 1 } }]);
  });
});
