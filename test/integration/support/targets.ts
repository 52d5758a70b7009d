/**
 * The two targets of the fidelity suite: FakeNova and the real Nova, behind one shape, plus a raw HTTP
 * helper that keeps the exact bytes of each answer (the library's client parses them away).
 */
import { FakeNova } from '../../../src/testing/index.js';
import { breakMapping, HARNESS_DB, stickDeleting } from './harnessDb.js';
import { createServer, project, waitForGone, waitForServer } from './realNova.js';

/**
 * Causes of quota drift a target can make by hand (FakeNova: `nova.causes`; the real Nova: the
 * harness's databases). Each resolves a function that removes the server for good (waits for its 404).
 */
export interface TargetCauses {
  /** The server's instance mapping loses its cell (absent without the harness's database). */
  breakMapping?: ((serverId: string) => Promise<() => Promise<void>>) | undefined;
  /** The server's delete never finishes: DELETED, never destroyed, an hour old (absent without the harness's database). */
  stickDeleting?: ((serverId: string) => Promise<() => Promise<void>>) | undefined;
  /** A server of the project the scheduler found no host for (ERROR, in cell0); resolves its id. */
  neverScheduled(): Promise<string>;
  /** The server is shelved and offloaded (SHELVED_OFFLOADED, no task left). */
  shelveOffload(serverId: string): Promise<void>;
}

/** A Nova to run the fidelity scenarios against. */
export interface Target {
  name: string;
  endpoint: string;
  project: string;
  /** Admin token: quota changes. */
  adminToken: string;
  /** Non-admin token of {@link Target.project}: everything else. */
  memberToken: string;
  imageId: string;
  flavors: { vcpus1: string; vcpus2: string };
  /** Causes of quota drift it can make by hand. */
  causes: TargetCauses;
  /** Delete what the scenarios left, restore the quota, stop what was started. */
  close(): Promise<void>;
}

/**
 * FakeNova with timings close to what the real stack shows on this kind of machine (create to ACTIVE
 * 0.3-0.7 s, delete to 404 0.2-0.4 s with a DELETED window of 20-50 ms before the 404).
 */
export async function fakeTarget(): Promise<Target> {
  const fake = await FakeNova.start({ projectId: 'nova-guard-fidelity', buildDelayMs: 300, deleteDelayMs: 200, deletedWindowMs: 30 });
  return {
    name: 'FakeNova',
    endpoint: fake.endpoint,
    project: fake.projectId,
    adminToken: `admin:${fake.projectId}`,
    memberToken: `ci-bot:${fake.projectId}`,
    imageId: '155d900f-4e14-4e4c-a73d-069cbf4541e6',
    flavors: { vcpus1: '1', vcpus2: '2' },
    causes: {
      neverScheduled: () => Promise.resolve(fake.causes.addNeverScheduled({ flavorId: '1' })),
      shelveOffload: (id) => Promise.resolve(fake.causes.shelveOffload(id)),
      breakMapping: (id) => {
        fake.causes.breakMapping(id);
        return Promise.resolve(() => Promise.resolve(fake.destroyServer(id)));
      },
      stickDeleting: (id) => {
        fake.causes.stickDeleting(id);
        return Promise.resolve(() => Promise.resolve(fake.destroyServer(id)));
      },
    },
    close: () => fake.close(),
  };
}

/** The real Nova of this run, in a project of its own (under noauth2). */
export async function realTarget(): Promise<Target> {
  const p = project('fidelity');
  await p.cleanup();
  // Undo the edit, then delete the server as admin and wait for its 404.
  const thenDelete = (id: string, undo: () => Promise<void>) => async (): Promise<void> => {
    await undo();
    await p.admin.requestDelete(id);
    await waitForGone(p.admin, id);
  };
  const causes: TargetCauses = {
    neverScheduled: async () => {
      const id = (await createServer(p, 'fidelity-nvh', p.nova.flavors.noValidHost)).id;
      await waitForServer(p.member, id, (s) => s.status !== 'BUILD');
      return id;
    },
    shelveOffload: async (id) => {
      await p.member.request({ method: 'POST', path: `/servers/${id}/action`, body: { shelve: null } });
      // Nova shows SHELVED_OFFLOADED a moment before the offload has cleared the server's host and
      // zone: wait for the end state itself (no task, no hostId, no zone), as a caller would see it.
      await waitForServer(
        p.member,
        id,
        (s) => s.status === 'SHELVED_OFFLOADED' && !s['OS-EXT-STS:task_state'] && !s['hostId'] && !s['OS-EXT-AZ:availability_zone'],
        { intervalMs: 100, timeoutMs: 120_000 },
      );
    },
    ...(HARNESS_DB
      ? {
          breakMapping: async (id: string) => thenDelete(id, await breakMapping(id)),
          stickDeleting: async (id: string) => thenDelete(id, await stickDeleting(id)),
        }
      : {}),
  };
  return {
    name: 'real Nova',
    endpoint: p.nova.endpoint,
    project: p.nova.project,
    adminToken: p.nova.adminToken,
    memberToken: p.nova.memberToken,
    imageId: p.nova.imageId,
    flavors: { vcpus1: p.nova.flavors.vcpus1, vcpus2: p.nova.flavors.vcpus2 },
    causes,
    close: () => p.cleanup(),
  };
}

/** One HTTP exchange, bytes kept. */
export interface RawAnswer {
  status: number;
  /** The body exactly as sent. */
  text: string;
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  json: unknown;
  contentType: string | null;
  /** Nova's `Date` header, epoch ms. */
  dateMs: number;
}

/** Options of {@link raw}. */
export interface RawOptions {
  /** Default: the member token. */
  token?: string;
  body?: unknown;
  /** `OpenStack-API-Version: compute <microversion>`; default 2.79. */
  microversion?: string;
}

/** Send one request to a target with Node's fetch and keep the answer's bytes. */
export async function raw(target: Target, method: string, path: string, options: RawOptions = {}): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    'X-Auth-Token': options.token ?? target.memberToken,
    'OpenStack-API-Version': `compute ${options.microversion ?? '2.79'}`,
    Accept: 'application/json',
  };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(target.endpoint + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, contentType: res.headers.get('content-type'), dateMs: Date.parse(res.headers.get('date') ?? '') };
}
