/**
 * Delete-and-wait against a real Nova 26.2 (Zed): ACTIVE, BUILD and ERROR servers, several at once.
 *
 * What real Nova does (`docs/nova-behaviour.md#the-deleted-window`): DELETE answers 204, GET then
 * shows the old status with task_state `deleting`, then for 20-50 ms `status: DELETED`, then 404; the
 * project's usage drops in the same transaction that makes GET answer 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/index.js';
import { createActiveServer, createServer, project, usage, waitForGone, waitForServer } from './support/realNova.js';

const p = project('delete');
const FAST = { wait: true, intervalMs: 25, timeoutMs: 60_000 } as const;

beforeAll(() => p.cleanup());
afterAll(() => p.cleanup());

/** After `deleteServer` resolved 'deleted', Nova answers 404. */
async function expectGoneSoon(id: string): Promise<void> {
  const started = Date.now();
  await waitForGone(p.member, id, 5_000);
  expect(Date.now() - started).toBeLessThan(5_000);
  await expect(p.member.getServer(id)).rejects.toBeInstanceOf(NotFoundError);
}

describe('deleteServer with wait on a real Nova', () => {
  it('deletes an ACTIVE server and frees its cores', async () => {
    const before = await usage(p.member);
    const server = await createActiveServer(p, 'active', p.nova.flavors.vcpus2);
    expect(await usage(p.member)).toEqual({ cores: before.cores + 2, instances: before.instances + 1, ram: before.ram + 2048 });

    const result = await p.member.deleteServer(server.id, FAST);

    expect(result.outcome).toBe('deleted');
    expect(result.serverId).toBe(server.id);
    expect(result.deleteAttempts).toBe(1);
    expect(result.polls).toBeGreaterThanOrEqual(1);
    expect(result.elapsedMs).toBeLessThan(30_000);
    await expectGoneSoon(server.id);
    expect(await usage(p.member)).toEqual(before);
  });

  it('deletes a server still in BUILD (DELETE right after the POST)', async () => {
    const before = await usage(p.member);
    const created = await createServer(p, 'build');
    const seen = await p.member.getServer(created.id);
    expect(seen.status).toBe('BUILD');

    const result = await p.member.deleteServer(created.id, FAST);

    expect(result.outcome).toBe('deleted');
    expect(result.deleteAttempts).toBe(1);
    await expectGoneSoon(created.id);
    expect(await usage(p.member)).toEqual(before);
  });

  it('deletes a server that went ERROR because no host can take it', async () => {
    const created = await createServer(p, 'novalidhost', p.nova.flavors.noValidHost);
    const server = await waitForServer(p.member, created.id, (s) => s.status !== 'BUILD');
    expect(server?.status).toBe('ERROR');
    expect(server?.['OS-EXT-STS:vm_state']).toBe('error');
    expect(server?.fault?.code).toBe(500);
    expect(server?.fault?.message).toMatch(/^No valid host was found\./);

    const result = await p.member.deleteServer(created.id, FAST);

    expect(result.outcome).toBe('deleted');
    expect(result.deleteAttempts).toBe(1);
    await expectGoneSoon(created.id);
  });

  it('deletes an ACTIVE server an admin reset to ERROR', async () => {
    const before = await usage(p.member);
    const server = await createActiveServer(p, 'reset');
    await p.admin.request({ method: 'POST', path: `/servers/${server.id}/action`, body: { 'os-resetState': { state: 'error' } } });
    const errored = await p.member.getServer(server.id);
    expect(errored.status).toBe('ERROR');
    expect(errored['OS-EXT-STS:task_state']).toBeNull();
    // An ERROR server still counts toward the project's usage until it is deleted.
    expect((await usage(p.member)).cores).toBe(before.cores + 1);

    const result = await p.member.deleteServer(server.id, FAST);

    expect(result.outcome).toBe('deleted');
    await expectGoneSoon(server.id);
    expect(await usage(p.member)).toEqual(before);
  });

  it("resolves 'deleted' only after the DELETED window, at Nova's 404: the cores are free when it returns", async () => {
    const before = await usage(p.member);
    const server = await createActiveServer(p, 'window');
    const seen: string[] = [];

    const result = await p.member.deleteServer(server.id, { ...FAST, onProgress: (x) => seen.push(String(x.status)) });
    const atReturn = await usage(p.member);

    expect(result.outcome).toBe('deleted');
    expect(result.server).toBeUndefined();
    expect(seen.at(-1)).toBe('NOT_FOUND');
    // Nova counts the server until its 404: at the return, nothing of it is counted any more.
    expect(atReturn).toEqual(before);
    await expect(p.member.getServer(server.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('resolves already-gone for a server that no longer exists', async () => {
    const server = await createActiveServer(p, 'gone');
    await p.member.deleteServer(server.id, FAST);
    await waitForGone(p.member, server.id);

    const result = await p.member.deleteServer(server.id, FAST);

    expect(result.outcome).toBe('already-gone');
    expect(result.polls).toBe(0);
  });

  it('deletes many servers at once, each settling on its own', async () => {
    const before = await usage(p.member);
    const servers = await Promise.all(Array.from({ length: 6 }, (_, i) => createActiveServer(p, `many${i}`)));
    expect((await usage(p.member)).cores).toBe(before.cores + 6);
    const ids = servers.map((s) => s.id);

    const result = await p.member.deleteServers(ids, { ...FAST, concurrency: 6 });

    expect(result.failed).toEqual([]);
    expect(result.succeeded.sort()).toEqual([...ids].sort());
    expect(result.results.map((r) => (r.status === 'fulfilled' ? r.value.outcome : r.reason.message))).toEqual(ids.map(() => 'deleted'));
    await Promise.all(ids.map((id) => expectGoneSoon(id)));
    expect(await usage(p.member)).toEqual(before);
    expect((await p.member.listServers()).filter((s) => ids.includes(s.id))).toEqual([]);
  });

  it('deletes a mix of ACTIVE, BUILD and ERROR servers at once', async () => {
    const before = await usage(p.member);
    const active = await createActiveServer(p, 'mix-active');
    const errored = await createServer(p, 'mix-error', p.nova.flavors.noValidHost);
    await waitForServer(p.member, errored.id, (s) => s.status === 'ERROR');
    const building = await createServer(p, 'mix-build');
    const ids = [active.id, errored.id, building.id];

    const result = await p.member.deleteServers(ids, FAST);

    expect(result.failed).toEqual([]);
    expect(result.succeeded.sort()).toEqual([...ids].sort());
    await Promise.all(ids.map((id) => expectGoneSoon(id)));
    expect(await usage(p.member)).toEqual(before);
  });
});
