/**
 * Every 403 a real Nova 26.2 (legacy DbQuotaDriver) sends on create, and a policy 403, through the
 * library's typed errors. The project's quota is lowered with an admin `PUT os-quota-sets` and restored
 * with `DELETE os-quota-sets` afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, ForbiddenError, QuotaExceededError, type NovaClient, type Server } from '../../src/index.js';
import { createActiveServer, project, serverName, waitForGone } from './support/realNova.js';

const p = project('quota');

beforeAll(() => p.cleanup());
afterAll(() => p.cleanup());

/** Try a create that must fail; resolve the error and how many POSTs the client sent for it. */
async function failedCreate(client: NovaClient, flavorRef: string): Promise<{ error: unknown; posts: number }> {
  const postsBefore = client.stats.byMethod['POST'] ?? 0;
  let error: unknown;
  try {
    const server = await client.createServer({ name: serverName('over'), flavorRef, imageRef: p.nova.imageId, networks: 'none' });
    p.created.add(server.id);
  } catch (e) {
    error = e;
  }
  return { error, posts: (client.stats.byMethod['POST'] ?? 0) - postsBefore };
}

function expectQuotaError(error: unknown, message: string): QuotaExceededError {
  expect(error).toBeInstanceOf(QuotaExceededError);
  const e = error as QuotaExceededError;
  expect(e.status).toBe(403);
  expect(e.fault).toBe('forbidden');
  expect(e.message).toBe(message);
  expect(e.method).toBe('POST');
  expect(e.requestId).toMatch(/^req-[0-9a-f-]{36}$/);
  expect(`${String(e)} ${JSON.stringify(e)}`).not.toContain(p.nova.memberToken);
  return e;
}

describe('quota 403s of a real Nova, as QuotaExceededError', () => {
  let held: Server;

  it('cores: one resource over its limit, not permanent', async () => {
    await p.setQuota({ cores: 2 });
    held = await createActiveServer(p, 'hold', p.nova.flavors.vcpus2);

    const { error, posts } = await failedCreate(p.member, p.nova.flavors.vcpus1);

    const e = expectQuotaError(error, 'Quota exceeded for cores: Requested 1, but already used 2 of 2 cores');
    expect(e.resources).toEqual([{ name: 'cores', requested: 1, used: 2, allowed: 2 }]);
    expect(e.permanent).toBe(false);
    expect(posts).toBe(1);
  });

  it('instances', async () => {
    await p.setQuota({ cores: 20, instances: 1 });

    const { error, posts } = await failedCreate(p.member, p.nova.flavors.vcpus1);

    const e = expectQuotaError(error, 'Quota exceeded for instances: Requested 1, but already used 1 of 1 instances');
    expect(e.resources).toEqual([{ name: 'instances', requested: 1, used: 1, allowed: 1 }]);
    expect(e.permanent).toBe(false);
    expect(posts).toBe(1);
  });

  it('ram (MiB)', async () => {
    await p.setQuota({ instances: 10, ram: 2304 });

    const { error } = await failedCreate(p.member, p.nova.flavors.vcpus1);

    const e = expectQuotaError(error, 'Quota exceeded for ram: Requested 512, but already used 2048 of 2304 ram');
    expect(e.resources).toEqual([{ name: 'ram', requested: 512, used: 2048, allowed: 2304 }]);
    expect(e.permanent).toBe(false);
  });

  it('several resources at once (cores and ram, sorted by name), permanent when a request exceeds its limit', async () => {
    // Below current usage only with force; without it Nova answers 400 (next test).
    await p.setQuota({ cores: 1, force: true });

    const { error } = await failedCreate(p.member, p.nova.flavors.vcpus2);

    const e = expectQuotaError(error, 'Quota exceeded for cores, ram: Requested 2, 2048, but already used 2, 2048 of 1, 2304 cores, ram');
    expect(e.resources).toEqual([
      { name: 'cores', requested: 2, used: 2, allowed: 1 },
      { name: 'ram', requested: 2048, used: 2048, allowed: 2304 },
    ]);
    expect(e.permanent).toBe(true);
  });

  it('a limit below current usage is refused with 400 unless forced', async () => {
    const put = p.admin.request({ method: 'PUT', path: `/os-quota-sets/${p.nova.project}`, body: { quota_set: { ram: 1024 } } });

    const error = await put.catch((e: unknown) => e);

    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).status).toBe(400);
    expect((error as BadRequestError).fault).toBe('badRequest');
    expect((error as BadRequestError).message).toBe('Quota limit 1024 for ram must be greater than or equal to already used and reserved 2048.');
  });

  it('a request larger than the whole limit is permanent', async () => {
    await p.member.deleteServer(held.id, { wait: true, intervalMs: 25 });
    // 'deleted' comes at the 404: the cores are already free.
    await waitForGone(p.member, held.id);
    await p.resetQuota();
    await p.setQuota({ cores: 2 });

    const { error } = await failedCreate(p.member, p.nova.flavors.vcpus4);

    const e = expectQuotaError(error, 'Quota exceeded for cores: Requested 4, but already used 0 of 2 cores');
    expect(e.resources).toEqual([{ name: 'cores', requested: 4, used: 0, allowed: 2 }]);
    expect(e.permanent).toBe(true);
  });

  it('creates again once the quota is restored', async () => {
    await p.resetQuota();
    const server = await createActiveServer(p, 'after');
    expect(server.status).toBe('ACTIVE');
    await p.member.deleteServer(server.id, { wait: true, intervalMs: 25 });
  });
});

describe('policy 403s of a real Nova, as ForbiddenError', () => {
  it('a member may not change its own quota', async () => {
    const error = await p.member
      .request({ method: 'PUT', path: `/os-quota-sets/${p.nova.project}`, body: { quota_set: { cores: 100 } } })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error).not.toBeInstanceOf(QuotaExceededError);
    expect((error as ForbiddenError).status).toBe(403);
    expect((error as ForbiddenError).fault).toBe('forbidden');
    expect((error as ForbiddenError).message).toBe("Policy doesn't allow os_compute_api:os-quota-sets:update to be performed.");
    expect((await p.admin.getQuotaSetDetail(p.nova.project)).cores?.limit).toBe(20);
  });

  it('a member may not reset a server state, and the request is sent once', async () => {
    const server = await createActiveServer(p, 'policy');
    const postsBefore = p.member.stats.byMethod['POST'] ?? 0;

    const error = await p.member
      .request({ method: 'POST', path: `/servers/${server.id}/action`, body: { 'os-resetState': { state: 'error' } } })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ForbiddenError);
    expect((error as ForbiddenError).message).toBe("Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed.");
    expect((p.member.stats.byMethod['POST'] ?? 0) - postsBefore).toBe(1);
    expect((await p.member.getServer(server.id)).status).toBe('ACTIVE');
    await p.member.deleteServer(server.id, { wait: true, intervalMs: 25 });
  });
});
