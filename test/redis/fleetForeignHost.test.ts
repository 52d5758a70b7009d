/**
 * A foreign host in a fleet (issue 29 item 3): a host whose client talks to another Nova (another
 * region, a staging Nova, a catalog override) but whose `RedisQuotaLedger.forClient` names the
 * fleet's Nova (`endpoint`) must not join the fleet: elected watcher, it would get its own Nova's
 * 404 for the other hosts' servers and publish them as proofs of deletion. Field case: 6 of 6 waits
 * of the correctly configured hosts ended `deleted` about 1 s into 5 s deletes, the servers still in
 * Nova. The same for a token-only client naming `projectId` itself, and a Keystone token of another
 * project. On a real redis-server, two FakeNovas (the same project id: the worst case, as two
 * regions of one cloud), the real clock with generous bounds.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/index.js';
import { KeystoneAuth } from '../../src/auth/index.js';
import { NovaClient } from '../../src/nova/index.js';
import { RedisQuotaLedger } from '../../src/redis/index.js';
import { FakeKeystone, type FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { haveRedis, skipReason, until, useRedisServer } from './support.js';

/** The fleet watcher's lease in these tests, ms. */
const TTL = 600;
/** How long a delete takes in Nova 1, ms. */
const DELETE_MS = 3000;

let prefixes = 0;

describe.skipIf(!haveRedis)(`a foreign host in a fleet${haveRedis ? '' : ` (${skipReason})`}`, () => {
  const server = useRedisServer();

  function clientOf(nova: FakeNova, token = `admin:${nova.projectId}`): NovaClient {
    return new NovaClient({
      endpoint: nova.endpoint,
      token,
      microversion: '2.79',
      adapter: nova.adapter,
      retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 },
      maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    });
  }

  async function join(client: NovaClient, keyPrefix: string, holder: string, extra: { endpoint?: string; projectId?: string } = {}): Promise<RedisQuotaLedger> {
    const ledger = await RedisQuotaLedger.forClient(client, { url: server.url, keyPrefix, holder, fleetWatcher: true, fleetLeaseTtlMs: TTL, ...extra });
    afterThisTest(() => ledger.close());
    return ledger;
  }

  /** The foreign host's client: talks to `nova2`; with `tokenOnly`, a bare token and no projectId (it names the project itself). */
  const foreignHosts = [
    { name: 'a client of Nova 2 naming Nova 1 as endpoint', tokenOnly: false },
    { name: 'a token-only client of Nova 2 naming Nova 1 as endpoint and the projectId itself', tokenOnly: true },
  ];

  it.each(foreignHosts)(
    "$name is refused with a ValidationError naming both endpoints, before any request; the fleet's waits end at their servers' own 404 (0 false deleted)",
    async ({ tokenOnly }) => {
      const nova1 = await startNova({ deleteDelayMs: DELETE_MS });
      const nova2 = await startNova();
      expect(nova2.projectId).toBe(nova1.projectId);
      const keyPrefix = `foreign${++prefixes}:`;
      const foreignClient = tokenOnly ? clientOf(nova2, 'a-bare-token') : clientOf(nova2);
      // The foreign host comes first: on the old code it is elected watcher.
      const foreign = await join(foreignClient, keyPrefix, 'foreign', { endpoint: nova1.endpoint, ...(tokenOnly ? { projectId: nova1.projectId } : {}) }).catch((e: unknown) => e);
      if (foreign instanceof RedisQuotaLedger) await until(() => foreign.fleetWatcher!.watching, 10 * TTL);
      const sentToNova2 = nova2.requests.length;

      // The correctly configured hosts, after it.
      const hosts = await Promise.all(
        ['a', 'c'].map(async (name) => {
          const client = clientOf(nova1);
          return { client, ledger: await join(client, keyPrefix, name) };
        }),
      );
      expect(await until(() => [...hosts.map((h) => h.ledger), ...(foreign instanceof RedisQuotaLedger ? [foreign] : [])].some((l) => l.fleetWatcher!.watching), 10 * TTL)).toBe(true);
      // Six waits, three on each host, on servers that live in Nova 1 for DELETE_MS after their DELETE.
      const waits = hosts.flatMap((h) =>
        [0, 1, 2].map(async () => {
          const id = nova1.addServer({ status: 'ACTIVE' }).id;
          const t0 = performance.now();
          const r = await h.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
          return { outcome: r.outcome, stillInNova: nova1.getServerState(id) !== undefined, ms: performance.now() - t0 };
        }),
      );
      const ends = await Promise.all(waits);
      const falseDeleted = ends.filter((e) => e.outcome === 'deleted' && e.stillInNova);

      // The old code: every wait ended `deleted` from the foreign watcher's 404s, within a few hundred ms.
      expect({ falseDeleted: falseDeleted.length, sentToNova2 }).toEqual({ falseDeleted: 0, sentToNova2: 0 });
      expect(foreign).toBeInstanceOf(ValidationError);
      const message = (foreign as Error).message;
      expect(message).toContain('RedisQuotaLedger.forClient: endpoint');
      expect(message).toContain(JSON.stringify(nova1.endpoint));
      expect(message).toContain(JSON.stringify(nova2.endpoint));
      expect(ends.map((e) => e.outcome)).toEqual(Array(6).fill('deleted'));
      // Each ended at its server's own 404: not before the delete took its time in Nova 1.
      for (const e of ends) expect(e.ms).toBeGreaterThanOrEqual(DELETE_MS - 50);
    },
    40_000,
  );

  it("a token-only client of the fleet's own Nova naming projectId itself cannot join (it cannot know its token's project); the same client with projectId set joins", async () => {
    const nova = await startNova();
    const keyPrefix = `foreign${++prefixes}:`;
    const bare = clientOf(nova, 'a-bare-token');
    await expect(join(bare, keyPrefix, 'bare', { projectId: nova.projectId })).rejects.toThrow(
      "RedisQuotaLedger.forClient: the client does not know its project (no projectId, and its token does not say); a fleet answers for one project and its watcher looks with this client's token: set projectId on the NovaClient (the project its token is scoped to)",
    );
    expect(nova.requests).toEqual([]);
    // Without the fleet watcher, a ledger for it is still made (its projectId cannot be checked: as before).
    const plain = await RedisQuotaLedger.forClient(bare, { url: server.url, keyPrefix, holder: 'plain', projectId: nova.projectId });
    afterThisTest(() => plain.close());
    expect(plain.scope.projectId).toBe(nova.projectId);
    const known = new NovaClient({ endpoint: nova.endpoint, token: 'a-bare-token', projectId: nova.projectId, adapter: nova.adapter });
    const ledger = await join(known, keyPrefix, 'known');
    expect(await until(() => ledger.fleetWatcher!.watching, 10 * TTL)).toBe(true);
  });

  it("a Keystone client whose token is scoped to another project is refused (its token's project is learnt first); one scoped to the fleet's project joins without projectId anywhere", async () => {
    const nova = await startNova();
    const keystone = await FakeKeystone.start({
      computeUrl: nova.endpoint,
      projects: [
        { id: 'other-project', name: 'other' },
        { id: nova.projectId, name: 'ci' },
      ],
      users: [{ name: 'ci-bot', password: 'ci-bot-password', projects: ['other-project', nova.projectId] }],
    });
    afterThisTest(() => keystone.stop());
    const keystoneClient = (projectName: string): NovaClient =>
      new NovaClient({
        auth: new KeystoneAuth({ authUrl: keystone.url, username: 'ci-bot', password: 'ci-bot-password', userDomainName: 'Default', projectName, projectDomainName: 'Default', adapter: keystone.adapter }),
        microversion: '2.79',
        adapter: nova.adapter,
      });
    const keyPrefix = `foreign${++prefixes}:`;
    const other = keystoneClient('other');
    expect(other.projectId).toBeUndefined();
    await expect(join(other, keyPrefix, 'other', { projectId: nova.projectId })).rejects.toThrow(`projectId ${nova.projectId} is not the client's project (other-project)`);
    expect(nova.requests).toEqual([]);
    const mine = keystoneClient('ci');
    const ledger = await join(mine, keyPrefix, 'mine');
    expect(ledger.scope).toEqual({ endpoint: nova.endpoint, projectId: nova.projectId });
    expect(nova.requests).toEqual([]);
  });

  it("another spelling of the client's own endpoint (host case, default port, trailing slash) is taken: the same ledger keys as the client's", async () => {
    const nova = await startNova();
    const keyPrefix = `foreign${++prefixes}:`;
    const spelled = `${nova.endpoint.replace('http://127.0.0.1', 'HTTP://127.0.0.1')}/`;
    const ledger = await join(clientOf(nova), keyPrefix, 'spelled', { endpoint: spelled });
    expect(ledger.scope).toEqual({ endpoint: nova.endpoint, projectId: nova.projectId });
    // Without the fleet watcher too, another Nova is refused (a guard of this client would refuse that ledger anyway).
    const nova2 = await startNova();
    await expect(RedisQuotaLedger.forClient(clientOf(nova), { url: server.url, keyPrefix, endpoint: nova2.endpoint })).rejects.toBeInstanceOf(ValidationError);
  });
});
