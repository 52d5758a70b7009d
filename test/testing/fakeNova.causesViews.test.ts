/**
 * How FakeNova shows the servers its causes make, as Nova 26.2 shows them (checked against the real
 * one in test/integration/fidelity.test.ts): a server never scheduled (cell0) and a shelved-offloaded
 * server have no host (hostId '', no availability zone, host attributes null); a cell0 server is
 * listed without its fault, which its own GET shows.
 */
import { describe, expect, it } from 'vitest';
import { clientFor, startNova } from '../helpers.js';

const placeOf = (s: Record<string, unknown>): unknown[] => [
  s['status'],
  s['OS-EXT-STS:vm_state'],
  s['OS-EXT-STS:power_state'],
  s['hostId'],
  s['OS-EXT-AZ:availability_zone'],
  s['OS-EXT-SRV-ATTR:host'],
  s['OS-EXT-SRV-ATTR:hypervisor_hostname'],
];

describe('FakeNova causes: how their servers look', () => {
  it('never scheduled: no host, listed without its fault, its GET has it', async () => {
    const nova = await startNova();
    const id = nova.causes.addNeverScheduled({ flavorId: '1' });
    const client = clientFor(nova);

    const listed = (await client.listServers()).find((s) => s.id === id)! as Record<string, unknown>;
    const own = (await client.getServer(id)) as Record<string, unknown>;

    expect(placeOf(listed)).toEqual(['ERROR', 'error', 0, '', '', null, null]);
    expect(listed).not.toHaveProperty('fault');
    expect(placeOf(own)).toEqual(['ERROR', 'error', 0, '', '', null, null]);
    expect(own['fault']).toMatchObject({ code: 500, message: expect.stringMatching(/^No valid host was found\. /) as unknown });
  });

  it('shelved-offloaded: no host, no zone; an ACTIVE server keeps its host', async () => {
    const nova = await startNova();
    const shelved = nova.addServer({ flavorId: '2' }).id;
    const active = nova.addServer({ flavorId: '1' }).id;
    nova.causes.shelveOffload(shelved);
    const client = clientFor(nova);

    expect(placeOf((await client.getServer(shelved)) as Record<string, unknown>)).toEqual(['SHELVED_OFFLOADED', 'shelved_offloaded', 4, '', '', null, null]);
    const up = (await client.getServer(active)) as Record<string, unknown>;
    expect(placeOf(up).slice(0, 3)).toEqual(['ACTIVE', 'active', 1]);
    expect(up['hostId']).toMatch(/^[0-9a-f]{56}$/);
    expect(up['OS-EXT-AZ:availability_zone']).toBe('nova');
    expect(up['OS-EXT-SRV-ATTR:host']).toBe('fake-compute-1');
  });
});
