/**
 * Access to the real Nova the integration suites run against, as described by the environment that
 * `scripts/real-nova/run-tests.sh` (or `. .real-nova/env`) sets:
 *
 * - `NOVA_ENDPOINT`, `NOVA_TOKEN` (an admin token): required; `NOVA_PROJECT`: required unless the token
 *   is a noauth2 `admin:<project>`;
 * - `NOVA_MEMBER_TOKEN`: a non-admin token of `NOVA_PROJECT` (under noauth2 derived from the project);
 * - `NOVA_IMAGE_ID`, `NOVA_FLAVOR_ID` (1 vCPU), `NOVA_FLAVOR_ID_2VCPU`, `NOVA_FLAVOR_ID_4VCPU`,
 *   `NOVA_FLAVOR_ID_NO_VALID_HOST` (a flavor no host can take: its servers go ERROR);
 * - `REALNOVA_AUTH`: `noauth` (tokens are `user:project`) or `keystone`.
 *
 * Under noauth2 every test file works in its own project (`<NOVA_PROJECT>-<name>`), so a file's quota
 * changes and leftovers never reach another file. Under Keystone all files share the `ci` project and
 * run one after the other (vitest.integration.config.ts).
 */
import { NovaClient, type Server } from '../../../src/index.js';

/** One project on the real Nova with an admin and a member token. */
export interface RealNova {
  endpoint: string;
  /** The project the member token creates servers in. */
  project: string;
  /** Admin token: quota changes, `os-resetState`, hypervisors. */
  adminToken: string;
  /** Non-admin token of {@link RealNova.project}. */
  memberToken: string;
  auth: 'noauth' | 'keystone';
  imageId: string;
  flavors: { vcpus1: string; vcpus2: string; vcpus4: string; noValidHost: string };
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: the integration suites need a real Nova. Run them with \`npm run test:real-nova\`, ` +
        'or start one with scripts/real-nova/start.sh and `. .real-nova/env`.',
    );
  }
  return value;
}

const NOAUTH = /^([^:\s]+):([^:\s]+)$/;

/**
 * The real Nova of this run. Under noauth2 with `name`, a project of its own named
 * `<NOVA_PROJECT>-<name>` (noauth2 accepts any project; the Keystone stub says every project exists).
 */
export function realNova(name?: string): RealNova {
  const endpoint = required('NOVA_ENDPOINT');
  const adminToken = required('NOVA_TOKEN');
  // A noauth2 token names its project: NOVA_PROJECT may be left out then.
  const baseProject = process.env['NOVA_PROJECT'] || NOAUTH.exec(adminToken)?.[2] || required('NOVA_PROJECT');
  const auth = process.env['REALNOVA_AUTH'] === 'keystone' ? 'keystone' : 'noauth';
  const imageId = process.env['NOVA_IMAGE_ID'] ?? '155d900f-4e14-4e4c-a73d-069cbf4541e6';
  const flavors = {
    vcpus1: process.env['NOVA_FLAVOR_ID'] ?? '1',
    vcpus2: process.env['NOVA_FLAVOR_ID_2VCPU'] ?? '2',
    vcpus4: process.env['NOVA_FLAVOR_ID_4VCPU'] ?? '3',
    noValidHost: process.env['NOVA_FLAVOR_ID_NO_VALID_HOST'] ?? 'no-valid-host',
  };
  const noauthAdmin = NOAUTH.exec(adminToken);
  if (auth === 'noauth' && noauthAdmin) {
    const project = name ? `${baseProject}-${name}` : baseProject;
    const memberUser = NOAUTH.exec(process.env['NOVA_MEMBER_TOKEN'] ?? '')?.[1] ?? 'ci-bot';
    return { endpoint, project, adminToken: `${noauthAdmin[1]}:${project}`, memberToken: `${memberUser}:${project}`, auth, imageId, flavors };
  }
  return { endpoint, project: baseProject, adminToken, memberToken: required('NOVA_MEMBER_TOKEN'), auth, imageId, flavors };
}

/** Retries short enough for a test, long enough to ride out a busy 2-vCPU machine. */
const RETRY = { minDelayMs: 100, maxDelayMs: 1000, maxRetryTimeMs: 15_000 };

/** A client with the member token (what a CI worker has). */
export function memberClient(nova: RealNova, microversion = '2.79'): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: nova.memberToken, projectId: nova.project, microversion, retry: RETRY });
}

/** A client with the admin token. */
export function adminClient(nova: RealNova, microversion = '2.79'): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: nova.adminToken, projectId: nova.project, microversion, retry: RETRY });
}

/** A unique server name: `ng-it-<label>-<random>`. */
export function serverName(label: string): string {
  return `ng-it-${label}-${Math.random().toString(36).slice(2, 8)}`;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Poll `GET /servers/{id}` every `intervalMs` until `done(server)` holds; resolves the server, or
 * `undefined` once Nova answers 404. Rejects after `timeoutMs` with the last status seen.
 */
export async function waitForServer(
  client: NovaClient,
  id: string,
  done: (server: Server) => boolean,
  { intervalMs = 50, timeoutMs = 60_000 } = {},
): Promise<Server | undefined> {
  const deadline = Date.now() + timeoutMs;
  let last: Server | undefined;
  while (Date.now() < deadline) {
    try {
      last = await client.getServer(id);
    } catch (error) {
      if ((error as { status?: number }).status === 404) return undefined;
      throw error;
    }
    if (done(last)) return last;
    await sleep(intervalMs);
  }
  throw new Error(`server ${id} still ${last?.status}/${String(last?.['OS-EXT-STS:task_state'])} after ${timeoutMs} ms`);
}

/** Wait until Nova answers 404 for the server. */
export async function waitForGone(client: NovaClient, id: string, timeoutMs = 60_000): Promise<void> {
  await waitForServer(client, id, () => false, { intervalMs: 20, timeoutMs });
}

/** Create a server with the member client and record it for {@link Project.cleanup}. */
export async function createServer(
  project: Project,
  label: string,
  flavorRef: string = project.nova.flavors.vcpus1,
): Promise<Server> {
  const server = await project.member.createServer({ name: serverName(label), flavorRef, imageRef: project.nova.imageId, networks: 'none' });
  project.created.add(server.id);
  return server;
}

/** Create a server and wait until it is ACTIVE (fails on ERROR). */
export async function createActiveServer(project: Project, label: string, flavorRef?: string): Promise<Server> {
  const created = await createServer(project, label, flavorRef);
  const server = await waitForServer(project.member, created.id, (s) => s.status === 'ACTIVE' || s.status === 'ERROR');
  if (server?.status !== 'ACTIVE') {
    throw new Error(`server ${created.id} went ${server?.status ?? 'missing'}: ${JSON.stringify(server?.fault ?? null)}`);
  }
  return server;
}

/** One test file's project: its clients, and what to undo afterwards. */
export interface Project {
  nova: RealNova;
  member: NovaClient;
  admin: NovaClient;
  /** Servers created by the file (deleted by cleanup if still there). */
  created: Set<string>;
  /** Delete leftover servers of the project and restore its default quota. */
  cleanup(): Promise<void>;
  /** `PUT /os-quota-sets/{project}` as admin (Nova API reference, "Update Quotas"). */
  setQuota(quota: Record<string, number | boolean>): Promise<void>;
  /** `DELETE /os-quota-sets/{project}` as admin: back to the defaults (Nova API reference, "Revert Quotas to Defaults"). */
  resetQuota(): Promise<void>;
}

/** The project of one test file (see {@link realNova}); call `cleanup` in `beforeAll` and `afterAll`. */
export function project(name: string): Project {
  const nova = realNova(name);
  const member = memberClient(nova);
  const admin = adminClient(nova);
  const created = new Set<string>();
  const resetQuota = async (): Promise<void> => {
    await admin.request({ method: 'DELETE', path: `/os-quota-sets/${encodeURIComponent(nova.project)}` });
  };
  return {
    nova,
    member,
    admin,
    created,
    resetQuota,
    async setQuota(quota) {
      await admin.request({ method: 'PUT', path: `/os-quota-sets/${encodeURIComponent(nova.project)}`, body: { quota_set: quota } });
    },
    async cleanup() {
      await resetQuota();
      const leftovers = new Set([...created, ...(await member.listServers()).map((s) => s.id)]);
      await Promise.all(
        [...leftovers].map(async (id) => {
          await admin.requestDelete(id);
          await waitForGone(admin, id);
        }),
      );
      created.clear();
    },
  };
}

/** Current usage of the project from `GET /limits` (cores, instances, RAM MiB). */
export async function usage(client: NovaClient): Promise<{ cores: number; instances: number; ram: number }> {
  const { absolute } = await client.getLimits();
  return { cores: absolute.totalCoresUsed ?? Number.NaN, instances: absolute.totalInstancesUsed ?? Number.NaN, ram: absolute.totalRAMUsed ?? Number.NaN };
}
