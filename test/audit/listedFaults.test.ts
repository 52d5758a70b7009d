/**
 * A server never scheduled (cell0) is listed without its fault, as Nova 26.2 lists it (the detail
 * listing reads faults from the API's own database); its own GET shows it. The audit takes the fault
 * from that GET (the ghost check's, or one GET per ERROR server when ghosts are not checked).
 */
import { describe, expect, it } from 'vitest';
import { auditQuota } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';

const GET_ONE = /^\/servers\/[0-9a-f-]{36}$/;

describe('the fault of a server never scheduled', () => {
  it('FakeNova lists it without its fault; its own GET has it', async () => {
    const nova = await startNova();
    const id = nova.causes.addNeverScheduled({ flavorId: '2' });
    const client = clientFor(nova);

    const listed = (await client.listServers()).find((s) => s.id === id);

    expect(listed?.status).toBe('ERROR');
    expect(listed && 'fault' in listed).toBe(false);
    expect((await client.getServer(id)).fault?.message).toMatch(/^No valid host was found\./);
  });

  it('the ghost check GET gives the fault: never-scheduled, no extra request', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.causes.addNeverScheduled({ flavorId: '2' });
    nova.clearRequests();

    const a = await auditQuota(clientFor(nova));

    expect(a.unscheduled.map((s) => s.id)).toEqual([id]);
    expect(a.findings.map((f) => [f.kind, f.serverIds])).toEqual([['never-scheduled', [id]]]);
    expect(a.findings[0]!.holds).toEqual({ cores: 2, ramMiB: 2048, instances: 1 });
    // One GET per listed server (the ghost check), none more.
    expect(nova.requestsTo('GET', GET_ONE)).toHaveLength(2);
  });

  it('without the ghost check: one GET of the ERROR server only', async () => {
    const nova = await startNova();
    nova.addServer({ flavorId: '1' });
    const id = nova.causes.addNeverScheduled({ flavorId: '2' });
    nova.clearRequests();

    const a = await auditQuota(clientFor(nova), { checkGhosts: false });

    expect(a.findings.map((f) => [f.kind, f.serverIds])).toEqual([['never-scheduled', [id]]]);
    expect(nova.requestsTo('GET', GET_ONE).map((r) => r.path)).toEqual([`/servers/${id}`]);
    expect(a.notes).toEqual([]);
  });

  it('a GET that fails is noted; the server stays a plain ERROR server', async () => {
    const nova = await startNova();
    const id = nova.causes.addNeverScheduled({ flavorId: '2' });
    nova.inject({ method: 'GET', path: `/servers/${id}`, status: 500, body: { computeFault: { code: 500, message: 'boom' } }, times: Infinity });

    const a = await auditQuota(clientFor(nova, { retry: { retries: 0 } }), { checkGhosts: false });

    expect(a.unscheduled).toEqual([]);
    expect(a.findings.map((f) => f.kind)).not.toContain('never-scheduled');
    expect(a.notes).toHaveLength(1);
    expect(a.notes[0]).toMatch(new RegExp(`^fault of ERROR server ${id} not read: `));
  });
});
