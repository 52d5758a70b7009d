/**
 * The fleet watcher on the SQLite ledger (`SqliteQuotaLedger.forClient`, on by default since issue 31),
 * its user API as the Redis ledger's: two "processes" (each a NovaClient with its own ledger object,
 * its own connection to one file in a tmp directory) on FakeNova, real clock, generous bounds.
 * test/sqlite/fleetProcesses.test.ts runs it across real processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AxiosAdapter } from 'axios';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NovaClient } from '../../src/nova/index.js';
import { SqliteQuotaLedger } from '../../src/sqlite/index.js';
import { ValidationError } from '../../src/errors/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { afterThisTest } from '../cleanup.js';
import { startNova } from '../helpers.js';
import { until } from '../redis/support.js';

const TTL = 600;
let dir = '';
beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'nova-guard-sqlite-fleet-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function client(nova: FakeNova, sent: string[] = []): NovaClient {
  const adapter: AxiosAdapter = (config) => {
    sent.push(`${(config.method ?? 'get').toUpperCase()} ${new URL(config.url ?? '', config.baseURL ?? nova.endpoint).pathname.replace(/^\/v2\.1/, '')}`);
    return nova.adapter(config);
  };
  return new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter, retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 }, maxRequestsPerSecond: Number.POSITIVE_INFINITY });
}

async function host(nova: FakeNova, holder: string): Promise<{ client: NovaClient; ledger: SqliteQuotaLedger; sent: string[] }> {
  const sent: string[] = [];
  const c = client(nova, sent);
  const ledger = await SqliteQuotaLedger.forClient(c, { path: dir, holder, fleetWatcher: true, fleetLeaseTtlMs: TTL });
  afterThisTest(() => ledger.close());
  return { client: c, ledger, sent };
}

describe('fleet watcher on the SQLite ledger', () => {
  it("one process watches, the other consumes: its deleteServer({ wait: true }) sends its DELETE only and ends at the watcher's 404", async () => {
    const nova = await startNova({ deleteDelayMs: 300 });
    const hosts = [await host(nova, 'a'), await host(nova, 'b')];
    expect(await until(() => hosts.filter((h) => h.ledger.fleetWatcher!.watching).length === 1 && hosts.every((h) => h.ledger.fleetWatcher!.watching || h.ledger.fleetWatcher!.consuming), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => !h.ledger.fleetWatcher!.watching)!;
    const leader = hosts.find((h) => h !== consumer)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    consumer.sent.length = 0;
    const r = await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 });
    expect(r.outcome).toBe('deleted');
    expect(consumer.sent).toEqual([`DELETE /servers/${id}`]);
    expect(consumer.ledger.fleetWatcher!.stats.proofs).toBe(1);
    expect(leader.sent.filter((x) => x === `GET /servers/${id}`).length).toBeGreaterThanOrEqual(1);
    expect(leader.ledger.fleetWatcher!.stats.published).toBeGreaterThan(0);
    // Both ledgers serve the same file: the fleet's tables are in the ledger's file.
    expect(consumer.ledger.path).toBe(leader.ledger.path);
  });

  it('close() gives the lease up at once: the other process watches at its next election (a sixth of the TTL)', async () => {
    const nova = await startNova();
    const a = await host(nova, 'a');
    expect(await until(() => a.ledger.fleetWatcher!.watching, 10 * TTL)).toBe(true);
    const b = await host(nova, 'b');
    expect(await until(() => b.ledger.fleetWatcher!.consuming, 10 * TTL)).toBe(true);
    const closedAt = Date.now();
    await a.ledger.close();
    expect(a.ledger.fleetWatcher!.watching).toBe(false);
    expect(a.client.deleteEngine.idle).toBe(true);
    expect(await until(() => b.ledger.fleetWatcher!.watching, 5 * TTL)).toBe(true);
    expect(Date.now() - closedAt).toBeLessThan(TTL / 3 + 400);
  });

  it('one ledger with fleetWatcher per client: a second is refused with ValidationError', async () => {
    const nova = await startNova();
    const h = await host(nova, 'a');
    await expect(SqliteQuotaLedger.forClient(h.client, { path: dir, holder: 'again', fleetWatcher: true })).rejects.toThrow(ValidationError);
    expect(h.ledger.fleetWatcher).toBeDefined();
  });

  it('new SqliteQuotaLedger refuses fleetWatcher: true (it needs the client: forClient); a short lease, a fraction and a misspelling are refused; fleetWatcher: false turns it off', async () => {
    const base = { endpoint: 'http://nova.example:8774/v2.1', projectId: 'p', path: dir };
    expect(() => new SqliteQuotaLedger({ ...base, fleetWatcher: true })).toThrow(/forClient/);
    expect(() => new SqliteQuotaLedger({ ...base, fleetLeaseTtlMs: 299 })).toThrow(/fleetLeaseTtlMs must be at least 300/);
    expect(() => new SqliteQuotaLedger({ ...base, fleetLeaseTtlMs: 1000.5 })).toThrow(/whole number/);
    expect(() => new SqliteQuotaLedger({ ...base, fleetWatch: true } as never)).toThrow(/fleetWatcher/);
    const nova = await startNova();
    await expect(SqliteQuotaLedger.forClient(client(nova), { path: dir, fleetwatcher: true } as never)).rejects.toThrow(/fleetWatcher/);
    const off = await SqliteQuotaLedger.forClient(client(nova), { path: dir, fleetWatcher: false });
    expect(off.fleetWatcher).toBeUndefined();
    await off.close();
  });
});

describe('fleet watcher on the SQLite ledger by default (issue 31)', () => {
  it("forClient without fleetWatcher joins the fleet: one process watches, the other's deleteServer({ wait: true }) sends its DELETE only", async () => {
    const nova = await startNova({ deleteDelayMs: 200 });
    const hosts = await Promise.all(['a', 'b'].map(async (holder) => {
      const sent: string[] = [];
      const c = client(nova, sent);
      const ledger = await SqliteQuotaLedger.forClient(c, { path: dir, holder, fleetLeaseTtlMs: TTL });
      afterThisTest(() => ledger.close());
      return { client: c, ledger, sent };
    }));
    expect(hosts.every((h) => h.ledger.fleetWatcher !== undefined && h.client.deleteEngine.fleetAttached)).toBe(true);
    expect(await until(() => hosts.some((h) => h.ledger.fleetWatcher!.watching) && hosts.some((h) => h.ledger.fleetWatcher!.consuming), 10 * TTL)).toBe(true);
    const consumer = hosts.find((h) => h.ledger.fleetWatcher!.consuming)!;
    const id = nova.addServer({ status: 'ACTIVE' }).id;
    consumer.sent.length = 0;
    expect((await consumer.client.deleteServer(id, { wait: true, intervalMs: 100, timeoutMs: 20_000 })).outcome).toBe('deleted');
    expect(consumer.sent).toEqual([`DELETE /servers/${id}`]);
  });

  it('by default a client that does not know its project, or that has a fleet link already, gets the ledger without a watcher (fleetWatcher: true refuses both)', async () => {
    const nova = await startNova();
    const bare = new NovaClient({ endpoint: nova.endpoint, token: 'a-bare-token', adapter: nova.adapter });
    const plain = await SqliteQuotaLedger.forClient(bare, { path: dir, projectId: nova.projectId });
    afterThisTest(() => plain.close());
    expect(plain.fleetWatcher).toBeUndefined();
    await expect(SqliteQuotaLedger.forClient(bare, { path: dir, projectId: nova.projectId, fleetWatcher: true })).rejects.toThrow(/does not know its project/);
    const c = client(nova);
    const first = await SqliteQuotaLedger.forClient(c, { path: dir, holder: 'first', fleetLeaseTtlMs: TTL });
    afterThisTest(() => first.close());
    expect(first.fleetWatcher).toBeDefined();
    const second = await SqliteQuotaLedger.forClient(c, { path: dir, holder: 'second' });
    afterThisTest(() => second.close());
    expect(second.fleetWatcher).toBeUndefined();
    await expect(SqliteQuotaLedger.forClient(c, { path: dir, holder: 'third', fleetWatcher: true })).rejects.toThrow(ValidationError);
    expect(nova.requests).toEqual([]);
  });

  it('by default a client whose token request fails (Keystone out of reach, its project not known yet) gets the ledger without a watcher, as before the default; fleetWatcher: true refuses it', async () => {
    const nova = await startNova();
    let asked = 0;
    const auth = { getToken: () => (asked++, Promise.reject(new Error('keystone out of reach'))), getProjectId: () => undefined };
    const c = new NovaClient({ endpoint: nova.endpoint, auth, adapter: nova.adapter });
    const plain = await SqliteQuotaLedger.forClient(c, { path: dir, projectId: nova.projectId });
    afterThisTest(() => plain.close());
    expect(plain.fleetWatcher).toBeUndefined();
    expect(plain.scope.projectId).toBe(nova.projectId);
    expect(asked).toBe(1);
    await expect(SqliteQuotaLedger.forClient(c, { path: dir, projectId: nova.projectId, fleetWatcher: true })).rejects.toThrow(/keystone out of reach/);
    expect(nova.requests).toEqual([]);
  });
});
