/**
 * Fidelity: one list of scenarios, run against FakeNova and against the real Nova, asserting the same
 * observable behaviour of both: bodies byte for byte where Nova's bytes matter to a client (404, 403,
 * 400), the status and task_state sequence of a create and a delete (the short `DELETED` window
 * tolerated), `/limits` and quota-set keys, and how usage moves with creates and deletes.
 *
 * Users test their workers against FakeNova, so every difference found here is a FakeNova bug.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ERROR_CONTENT_TYPE,
  LIMITS_2_1,
  LIMITS_2_57,
  QUOTA_2_1,
  QUOTA_2_57,
  badRequestBody,
  forbiddenBody,
  notFoundBody,
} from './support/novaFacts.js';
import { fakeTarget, raw, realTarget, type Target } from './support/targets.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Absolute {
  totalCoresUsed: number;
  totalInstancesUsed: number;
  totalRAMUsed: number;
  [key: string]: number;
}

/** One look at a server: HTTP status and, on 200, status / task_state / vm_state. */
interface Look {
  http: number;
  status?: string;
  task?: string | null;
  vm?: string;
}

const label = (l: Look): string => (l.http === 404 ? '404' : `${l.status}/${l.task ?? 'null'}/${l.vm}`);

describe.each([
  ['FakeNova', fakeTarget],
  ['real Nova', realTarget],
])('fidelity: %s', (_name, makeTarget) => {
  let t: Target;

  beforeAll(async () => {
    t = await makeTarget();
  });
  afterAll(async () => {
    await t?.close();
  });

  const limits = async (microversion = '2.79'): Promise<Absolute> => {
    const res = await raw(t, 'GET', '/limits', { microversion });
    expect(res.status).toBe(200);
    return (res.json as { limits: { absolute: Absolute } }).limits.absolute;
  };
  const look = async (id: string): Promise<Look> => {
    const res = await raw(t, 'GET', `/servers/${id}`);
    if (res.status === 404) {
      expect(res.text).toBe(notFoundBody(id));
      return { http: 404 };
    }
    expect(res.status).toBe(200);
    const s = (res.json as { server: Record<string, unknown> }).server;
    return { http: 200, status: s['status'] as string, task: s['OS-EXT-STS:task_state'] as string | null, vm: s['OS-EXT-STS:vm_state'] as string };
  };
  const create = async (flavorRef = t.flavors.vcpus1): Promise<string> => {
    const res = await raw(t, 'POST', '/servers', { body: { server: { name: 'fidelity', imageRef: t.imageId, flavorRef, networks: 'none' } } });
    expect(res.status, res.text).toBe(202);
    return (res.json as { server: { id: string } }).server.id;
  };
  const waitFor = async (id: string, done: (l: Look) => boolean, timeoutMs = 60_000): Promise<Look> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const l = await look(id);
      if (done(l)) return l;
      if (Date.now() > deadline) throw new Error(`server ${id} still ${label(l)}`);
      await sleep(20);
    }
  };
  const createActive = async (flavorRef?: string): Promise<string> => {
    const id = await create(flavorRef);
    expect(label(await waitFor(id, (l) => l.status !== 'BUILD'))).toBe('ACTIVE/null/active');
    return id;
  };
  const deleteAndWait = async (id: string): Promise<void> => {
    expect((await raw(t, 'DELETE', `/servers/${id}`)).status).toBe(204);
    await waitFor(id, (l) => l.http === 404);
  };
  const setQuota = async (quota: Record<string, number | boolean>): Promise<void> => {
    const res = await raw(t, 'PUT', `/os-quota-sets/${t.project}`, { token: t.adminToken, body: { quota_set: quota } });
    expect(res.status, res.text).toBe(200);
  };
  const resetQuota = async (): Promise<void> => {
    const res = await raw(t, 'DELETE', `/os-quota-sets/${t.project}`, { token: t.adminToken });
    expect(res.status).toBe(202);
    expect(res.text).toBe('');
  };

  it('GET and DELETE of an unknown server: 404 with the same bytes', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await raw(t, method, `/servers/${UNKNOWN_ID}`);
      expect(res.status).toBe(404);
      expect(res.text).toBe(notFoundBody(UNKNOWN_ID));
      expect(res.contentType).toBe(ERROR_CONTENT_TYPE);
    }
  });

  it('POST /servers: 202 with the create body', async () => {
    const res = await raw(t, 'POST', '/servers', { body: { server: { name: 'fidelity', imageRef: t.imageId, flavorRef: t.flavors.vcpus1, networks: 'none' } } });
    expect(res.status).toBe(202);
    const server = (res.json as { server: Record<string, unknown> }).server;
    expect(Object.keys(server).sort()).toEqual(['OS-DCF:diskConfig', 'adminPass', 'id', 'links', 'security_groups']);
    expect(server['OS-DCF:diskConfig']).toBe('MANUAL');
    expect(server['security_groups']).toEqual([{ name: 'default' }]);
    expect(server['adminPass']).toMatch(/^[A-Za-z0-9]{12}$/);
    expect(server['links']).toEqual([
      { rel: 'self', href: `${t.endpoint}/servers/${String(server['id'])}` },
      { rel: 'bookmark', href: `${t.endpoint.replace(/\/v2\.1$/, '')}/servers/${String(server['id'])}` },
    ]);
    await deleteAndWait(server['id'] as string);
  });

  it('create: BUILD with a build task_state, then ACTIVE; usage counts the server once ACTIVE', async () => {
    const before = await limits();
    const id = await create(t.flavors.vcpus2);
    const seen: string[] = [];
    for (;;) {
      const l = await look(id);
      if (seen[seen.length - 1] !== label(l)) seen.push(label(l));
      if (l.status !== 'BUILD') break;
      await sleep(5);
    }
    expect(seen[0]).toMatch(/^BUILD\//);
    expect(seen[seen.length - 1]).toBe('ACTIVE/null/active');
    for (const state of seen.slice(0, -1)) {
      expect(state).toMatch(/^BUILD\/(scheduling|null|networking|block_device_mapping|spawning)\/building$/);
    }
    const after = await limits();
    expect([after.totalCoresUsed, after.totalInstancesUsed, after.totalRAMUsed]).toEqual([
      before.totalCoresUsed + 2,
      before.totalInstancesUsed + 1,
      before.totalRAMUsed + 2048,
    ]);
    await deleteAndWait(id);
  });

  it('delete: deleting with the status unchanged, an optional DELETED window, then 404; usage drops at the 404', async () => {
    const before = await limits();
    const id = await createActive();
    const res = await raw(t, 'DELETE', `/servers/${id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const seen: string[] = [];
    let coresWhileDeleting: number | undefined;
    for (let i = 0; i < 3000; i++) {
      const l = await look(id);
      if (seen[seen.length - 1] !== label(l)) seen.push(label(l));
      if (l.http === 404) break;
      if (l.task === 'deleting') coresWhileDeleting ??= (await limits()).totalCoresUsed;
      await sleep(5);
    }

    // The API sets task_state before answering 204, so the first look already shows it.
    expect(seen[0]).toBe('ACTIVE/deleting/active');
    expect(seen.join(' ')).toMatch(/^ACTIVE\/deleting\/active( DELETED\/null\/deleted)? 404$/);
    expect(coresWhileDeleting).toBe(before.totalCoresUsed + 1);
    const after = await limits();
    expect([after.totalCoresUsed, after.totalInstancesUsed, after.totalRAMUsed]).toEqual([
      before.totalCoresUsed,
      before.totalInstancesUsed,
      before.totalRAMUsed,
    ]);
  });

  it('delete right after the create (BUILD): 204, then 404, usage back', async () => {
    const before = await limits();
    const id = await create();
    expect((await look(id)).status).toBe('BUILD');
    expect((await raw(t, 'DELETE', `/servers/${id}`)).status).toBe(204);
    await waitFor(id, (l) => l.http === 404);
    const after = await limits();
    expect([after.totalCoresUsed, after.totalInstancesUsed, after.totalRAMUsed]).toEqual([
      before.totalCoresUsed,
      before.totalInstancesUsed,
      before.totalRAMUsed,
    ]);
  });

  it('changes-since lists a deleted server with status DELETED; the plain listing does not', async () => {
    const id = await createActive();
    const del = await raw(t, 'DELETE', `/servers/${id}`);
    expect(del.status).toBe(204);
    await waitFor(id, (l) => l.http === 404);
    // Nova's clock, with a margin: its Date header has a one-second resolution.
    const since = new Date(del.dateMs - 2000).toISOString();

    const listed = await raw(t, 'GET', `/servers/detail?changes-since=${encodeURIComponent(since)}`);
    expect(listed.status).toBe(200);
    const mine = (listed.json as { servers: Array<Record<string, unknown>> }).servers.filter((s) => s['id'] === id);
    expect(mine.map((s) => [s['status'], s['OS-EXT-STS:task_state'], s['OS-EXT-STS:vm_state']])).toEqual([['DELETED', null, 'deleted']]);

    const plain = await raw(t, 'GET', '/servers/detail');
    expect((plain.json as { servers: Array<{ id: string }> }).servers.map((s) => s.id)).not.toContain(id);
  });

  it('quota 403 bodies on create, byte for byte: cores, instances, ram, several', async () => {
    const over = async (flavorRef: string, message: string): Promise<void> => {
      const res = await raw(t, 'POST', '/servers', { body: { server: { name: 'over', imageRef: t.imageId, flavorRef, networks: 'none' } } });
      expect(res.status, res.text).toBe(403);
      expect(res.text).toBe(forbiddenBody(message));
      expect(res.contentType).toBe(ERROR_CONTENT_TYPE);
    };
    await setQuota({ cores: 2 });
    const held = await createActive(t.flavors.vcpus2);
    try {
      await over(t.flavors.vcpus1, 'Quota exceeded for cores: Requested 1, but already used 2 of 2 cores');
      await setQuota({ cores: 20, instances: 1 });
      await over(t.flavors.vcpus1, 'Quota exceeded for instances: Requested 1, but already used 1 of 1 instances');
      await setQuota({ instances: 10, ram: 2304 });
      await over(t.flavors.vcpus1, 'Quota exceeded for ram: Requested 512, but already used 2048 of 2304 ram');
      await setQuota({ cores: 1, force: true });
      await over(t.flavors.vcpus2, 'Quota exceeded for cores, ram: Requested 2, 2048, but already used 2, 2048 of 1, 2304 cores, ram');
      expect((await limits()).maxTotalCores).toBe(1);
    } finally {
      await resetQuota();
      await deleteAndWait(held);
    }
    expect((await limits()).maxTotalCores).toBe(20);
  });

  it('a quota limit below usage: 400 byte for byte unless forced', async () => {
    const held = await createActive(t.flavors.vcpus2);
    try {
      const res = await raw(t, 'PUT', `/os-quota-sets/${t.project}`, { token: t.adminToken, body: { quota_set: { ram: 1024 } } });
      expect(res.status).toBe(400);
      expect(res.text).toBe(badRequestBody('Quota limit 1024 for ram must be greater than or equal to already used and reserved 2048.'));
    } finally {
      await resetQuota();
      await deleteAndWait(held);
    }
  });

  it('policy 403 for a member updating or reverting its own quota, byte for byte', async () => {
    try {
      const put = await raw(t, 'PUT', `/os-quota-sets/${t.project}`, { body: { quota_set: { cores: 100 } } });
      expect(put.status).toBe(403);
      expect(put.text).toBe(forbiddenBody("Policy doesn't allow os_compute_api:os-quota-sets:update to be performed."));
      expect(put.contentType).toBe(ERROR_CONTENT_TYPE);
      const del = await raw(t, 'DELETE', `/os-quota-sets/${t.project}`);
      expect(del.status).toBe(403);
      expect(del.text).toBe(forbiddenBody("Policy doesn't allow os_compute_api:os-quota-sets:delete to be performed."));
    } finally {
      await resetQuota();
    }
  });

  it('the admin quota update answers the whole quota set', async () => {
    const res = await raw(t, 'PUT', `/os-quota-sets/${t.project}`, { token: t.adminToken, body: { quota_set: { cores: 5 } }, microversion: '2.1' });
    await resetQuota();
    expect(res.status).toBe(200);
    expect(res.text).toBe(
      '{"quota_set": {"cores": 5, "fixed_ips": -1, "floating_ips": -1, "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255, ' +
        '"injected_files": 5, "instances": 10, "key_pairs": 100, "metadata_items": 128, "ram": 51200, "security_group_rules": -1, ' +
        '"security_groups": -1, "server_group_members": 10, "server_groups": 10}}',
    );
  });

  it('/limits and quota-set detail values at 2.1 with no servers (the default quota)', async () => {
    expect(await limits('2.1')).toEqual({
      maxTotalCores: 20,
      maxTotalInstances: 10,
      maxTotalRAMSize: 51200,
      maxTotalKeypairs: 100,
      maxServerMeta: 128,
      maxImageMeta: 128,
      maxPersonality: 5,
      maxPersonalitySize: 10240,
      maxServerGroups: 10,
      maxServerGroupMembers: 10,
      maxTotalFloatingIps: -1,
      maxSecurityGroups: -1,
      maxSecurityGroupRules: -1,
      totalCoresUsed: 0,
      totalInstancesUsed: 0,
      totalRAMUsed: 0,
      totalFloatingIpsUsed: 0,
      totalSecurityGroupsUsed: 0,
      totalServerGroupsUsed: 0,
    });
    const res = await raw(t, 'GET', `/os-quota-sets/${t.project}/detail`, { microversion: '2.1' });
    const item = (limit: number): { limit: number; in_use: number; reserved: number } => ({ limit, in_use: 0, reserved: 0 });
    expect(res.json).toEqual({
      quota_set: {
        id: t.project,
        cores: item(20),
        fixed_ips: item(-1),
        floating_ips: item(-1),
        injected_file_content_bytes: item(10240),
        injected_file_path_bytes: item(255),
        injected_files: item(5),
        instances: item(10),
        key_pairs: item(100),
        metadata_items: item(128),
        ram: item(51200),
        security_group_rules: item(-1),
        security_groups: item(-1),
        server_group_members: item(10),
        server_groups: item(10),
      },
    });
  });

  it('/limits and quota-set keys at 2.1 and 2.79', async () => {
    expect(Object.keys(await limits('2.1')).sort()).toEqual([...LIMITS_2_1].sort());
    expect(Object.keys(await limits('2.79')).sort()).toEqual([...LIMITS_2_57].sort());
    for (const [microversion, keys] of [
      ['2.1', QUOTA_2_1],
      ['2.79', QUOTA_2_57],
    ] as const) {
      const res = await raw(t, 'GET', `/os-quota-sets/${t.project}/detail`, { microversion });
      expect(res.status).toBe(200);
      const set = (res.json as { quota_set: Record<string, unknown> }).quota_set;
      expect(Object.keys(set).sort()).toEqual([...keys].sort());
      expect(set['cores']).toEqual({ limit: 20, in_use: 0, reserved: 0 });
    }
  });

  it('400s on create: unknown flavor (byte for byte), missing networks at 2.37+', async () => {
    const flavor = await raw(t, 'POST', '/servers', { body: { server: { name: 'x', imageRef: t.imageId, flavorRef: '999', networks: 'none' } } });
    expect(flavor.status).toBe(400);
    expect(flavor.text).toBe(badRequestBody('Flavor 999 could not be found.'));

    const networks = await raw(t, 'POST', '/servers', { body: { server: { name: 'x', imageRef: t.imageId, flavorRef: t.flavors.vcpus1 } } });
    expect(networks.status).toBe(400);
    const fault = (networks.json as { badRequest: { code: number; message: string } }).badRequest;
    expect(fault.code).toBe(400);
    expect(fault.message).toMatch(/^Invalid input for field\/attribute server\. .*'networks' is a required property$/);
  });

  it('400s on create for a key the schema does not know: in server (byte for byte), misspelled networks, beside server', async () => {
    const server = { name: 'x', imageRef: t.imageId, flavorRef: t.flavors.vcpus1, networks: 'none' };
    const repr = `{'name': 'x', 'imageRef': '${t.imageId}', 'flavorRef': '${t.flavors.vcpus1}', 'networks': 'none'`;
    const bogus = await raw(t, 'POST', '/servers', { body: { server: { ...server, bogus: 1 } } });
    expect(bogus.status).toBe(400);
    expect(bogus.text).toBe(badRequestBody(`Invalid input for field/attribute server. Value: ${repr}, 'bogus': 1}. Additional properties are not allowed ('bogus' was unexpected)`));
    expect(bogus.contentType).toBe(ERROR_CONTENT_TYPE);

    // Before 2.37 networks is optional, so the misspelling itself is named.
    const misspelled = await raw(t, 'POST', '/servers', { microversion: '2.1', body: { server: { name: 'x', imageRef: t.imageId, flavorRef: t.flavors.vcpus1, network: [] } } });
    expect(misspelled.status).toBe(400);
    expect((misspelled.json as { badRequest: { message: string } }).badRequest.message).toMatch(/\. Additional properties are not allowed \('network' was unexpected\)$/);

    // A key the microversion does not know yet: description arrived at 2.19.
    const early = await raw(t, 'POST', '/servers', { microversion: '2.18', body: { server: { name: 'x', imageRef: t.imageId, flavorRef: t.flavors.vcpus1, description: 'd' } } });
    expect((early.json as { badRequest: { message: string } }).badRequest.message).toMatch(/\('description' was unexpected\)$/);

    const beside = await raw(t, 'POST', '/servers', { body: { server, bogus: 1 } });
    expect(beside.status).toBe(400);
    expect(beside.text).toBe(badRequestBody("Additional properties are not allowed ('bogus' was unexpected)"));
  });

  // Causes of quota drift made by hand (FakeNova: `nova.causes`; real Nova: the harness's databases).
  const listed = async (id: string): Promise<string[]> => {
    const res = await raw(t, 'GET', '/servers/detail');
    expect(res.status).toBe(200);
    const mine = (res.json as { servers: Array<Record<string, unknown>> }).servers.filter((s) => s['id'] === id);
    return mine.map((s) => `${String(s['status'])}/${String(s['OS-EXT-STS:task_state'] ?? null)}/${String(s['OS-EXT-STS:vm_state'])}`);
  };
  const usedOf = (a: Absolute): number[] => [a.totalCoresUsed, a.totalInstancesUsed, a.totalRAMUsed];

  it('an orphaned instance mapping: listed and counted; GET and DELETE answer 404 byte for byte', async (ctx) => {
    if (!t.causes.breakMapping) return ctx.skip();
    const before = await limits();
    const id = await createActive(t.flavors.vcpus2);
    const removeForGood = await t.causes.breakMapping(id);
    try {
      expect(await look(id)).toEqual({ http: 404 });
      const del = await raw(t, 'DELETE', `/servers/${id}`);
      expect(del.status).toBe(404);
      expect(del.text).toBe(notFoundBody(id));
      expect(await listed(id)).toEqual(['ACTIVE/null/active']);
      expect(usedOf(await limits())).toEqual([before.totalCoresUsed + 2, before.totalInstancesUsed + 1, before.totalRAMUsed + 2048]);
    } finally {
      await removeForGood();
    }
    expect(usedOf(await limits())).toEqual(usedOf(before));
  });

  it('a delete never finished: listed and shown as DELETED/null/deleted, still counted', async (ctx) => {
    if (!t.causes.stickDeleting) return ctx.skip();
    const before = await limits();
    const id = await createActive(t.flavors.vcpus2);
    const removeForGood = await t.causes.stickDeleting(id);
    try {
      expect(label(await look(id))).toBe('DELETED/null/deleted');
      expect(await listed(id)).toEqual(['DELETED/null/deleted']);
      expect(usedOf(await limits())).toEqual([before.totalCoresUsed + 2, before.totalInstancesUsed + 1, before.totalRAMUsed + 2048]);
    } finally {
      await removeForGood();
    }
    expect(usedOf(await limits())).toEqual(usedOf(before));
  });

  /** The fields of a listed (or shown) server that say where it lives. */
  const placeOf = (s: Record<string, unknown>): unknown[] => [
    s['status'],
    s['OS-EXT-STS:task_state'],
    s['OS-EXT-STS:vm_state'],
    s['OS-EXT-STS:power_state'],
    s['hostId'],
    s['OS-EXT-AZ:availability_zone'],
  ];
  const listedServer = async (id: string): Promise<Record<string, unknown> | undefined> => {
    const res = await raw(t, 'GET', '/servers/detail');
    return (res.json as { servers: Array<Record<string, unknown>> }).servers.find((s) => s['id'] === id);
  };
  const shown = async (id: string): Promise<Record<string, unknown>> => ((await raw(t, 'GET', `/servers/${id}`)).json as { server: Record<string, unknown> }).server;

  it('a server never scheduled (cell0): ERROR on no host, listed without its fault, counted with its flavor', async () => {
    const before = await limits();
    const id = await t.causes.neverScheduled();
    const item = await listedServer(id);
    expect(placeOf(item!)).toEqual(['ERROR', null, 'error', 0, '', '']);
    expect(item).not.toHaveProperty('fault');
    expect(item!['OS-SRV-USG:launched_at']).toBeNull();
    const own = await shown(id);
    expect(placeOf(own)).toEqual(['ERROR', null, 'error', 0, '', '']);
    expect((own['fault'] as { code: number; message: string }).code).toBe(500);
    expect((own['fault'] as { message: string }).message).toMatch(/^No valid host was found\. /);
    expect(usedOf(await limits())).toEqual([before.totalCoresUsed + 1, before.totalInstancesUsed + 1, before.totalRAMUsed + 512]);
    await deleteAndWait(id);
    expect(usedOf(await limits())).toEqual(usedOf(before));
  });

  it('a shelved-offloaded server: no host, no zone, still counted with its flavor (legacy counting)', async () => {
    const before = await limits();
    const id = await createActive(t.flavors.vcpus2);
    await t.causes.shelveOffload(id);
    expect(placeOf((await listedServer(id))!)).toEqual(['SHELVED_OFFLOADED', null, 'shelved_offloaded', 4, '', '']);
    expect(placeOf(await shown(id))).toEqual(['SHELVED_OFFLOADED', null, 'shelved_offloaded', 4, '', '']);
    expect(usedOf(await limits())).toEqual([before.totalCoresUsed + 2, before.totalInstancesUsed + 1, before.totalRAMUsed + 2048]);
    await deleteAndWait(id);
    expect(usedOf(await limits())).toEqual(usedOf(before));
  });

  it('a microversion above 2.93: 406 byte for byte', async () => {
    const res = await raw(t, 'GET', '/limits', { microversion: '2.94' });
    expect(res.status).toBe(406);
    expect(res.text).toBe('{"computeFault": {"code": 406, "message": "Version 2.94 is not supported by the API. Minimum is 2.1 and maximum is 2.93."}}');
  });
});
