// A ledger named (a string, or NOVA_GUARD_LEDGER) is the ledger had, or a LedgerConfigError: a
// SQLite or Redis ledger serves one project, so a client without a project id (an endpoint and a
// plain token, no OS_PROJECT_ID) is a setup error at the guard's first call (reason
// 'missing-project', naming OS_PROJECT_ID), never a silent in-process fallback counted as an
// outage. NovaClient.fromEnv()/fromCloud() with OS_ENDPOINT + OS_TOKEN learn the project like
// `new NovaClient({ endpoint, token })` and the CLI do (a noauth token `user:project`), and read
// OS_PROJECT_ID. Every fallback's warning names its cause. Real clock, FakeNova, a real SQLite file.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientFromOptions } from '../../src/cli/common.js';
import { ConfigError, LedgerConfigError, NovaClient, QuotaGuard } from '../../src/index.js';
import { openLedger } from '../../src/ledgers/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { rejection, startNova } from '../helpers.js';
import { body, FAST, posts } from './fixtures.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nova-guard-missing-project-'));
  vi.stubEnv('NOVA_GUARD_LEDGER', '');
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

/** A client of `endpoint` with a plain (not `user:project`) token: no project id. */
function projectless(nova: FakeNova): NovaClient {
  return new NovaClient({ endpoint: nova.endpoint, token: 'plain-token-0123', microversion: '2.79', adapter: nova.adapter });
}

describe('a ledger named for a client without a project id: a setup error (LedgerConfigError), not a fallback', () => {
  it("ledger: 'sqlite:DIR/' rejects the first createServer and headroom with reason 'missing-project' naming OS_PROJECT_ID: no POST, no fallback, no outage, no file", async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const client = projectless(nova);
    expect(client.projectId).toBeUndefined();
    const warned: string[] = [];
    const guard = new QuotaGuard(client, { ...FAST, ledger: `sqlite:${dir}/`, onWarning: (m) => warned.push(m) });
    const e = await rejection(guard.createServer(body('a')));
    expect(e).toBeInstanceOf(LedgerConfigError);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e).toMatchObject({ kind: 'sqlite', reason: 'missing-project' });
    expect(e.message).toMatch(/the SQLite ledger serves one project and the client has no project id/);
    expect((e as LedgerConfigError).fix).toBe("set OS_PROJECT_ID (or projectId in NovaClient's options / clouds.yaml's auth.project_id)");
    expect(await rejection(guard.headroom())).toBeInstanceOf(LedgerConfigError);
    expect(posts(nova)).toHaveLength(0);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0 });
    expect(warned).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    await guard.close();
  });

  it('NOVA_GUARD_LEDGER=sqlite:FILE: the same LedgerConfigError (the README user\'s case)', async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    vi.stubEnv('NOVA_GUARD_LEDGER', `sqlite:${dir}/ledger.db`);
    const guard = new QuotaGuard(projectless(nova), { ...FAST, onWarning: () => undefined });
    const e = await rejection(guard.createServer(body('a')));
    expect(e).toMatchObject({ name: 'LedgerConfigError', reason: 'missing-project' });
    expect(posts(nova)).toHaveLength(0);
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0 });
    expect(existsSync(join(dir, 'ledger.db'))).toBe(false);
    await guard.close();
  });

  it("ledgerFallback: 'in-process' goes on without it, and its warning names the cause and the fix", async () => {
    const nova = await startNova({ maxTotalCores: 10 });
    const warned: string[] = [];
    const guard = new QuotaGuard(projectless(nova), { ...FAST, ledger: `sqlite:${dir}/`, ledgerFallback: 'in-process', onWarning: (m) => warned.push(m) });
    await guard.createServer(body('a'));
    expect(posts(nova)).toHaveLength(1);
    expect(guard.stats.ledgerOutages).toBe(0);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/client has no project id\. Fix: set OS_PROJECT_ID/);
    await guard.close();
  });

  it("openLedger with a client without a project id: the same LedgerConfigError (the CLI's --ledger)", async () => {
    const nova = await startNova();
    const e = await rejection(openLedger(`sqlite:${dir}/`, { client: projectless(nova) }));
    expect(e).toMatchObject({ name: 'LedgerConfigError', reason: 'missing-project' });
  });
});

describe('NovaClient.fromEnv() / fromCloud() with OS_ENDPOINT + OS_TOKEN learn the project id like new NovaClient({ endpoint, token }) and the CLI', () => {
  it("a noauth token 'fake:demo': projectId 'demo', and NOVA_GUARD_LEDGER=sqlite: opens its file (no fallback)", async () => {
    const nova = await startNova({ maxTotalCores: 10, projectId: 'demo' });
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: 'fake:demo' };
    expect(new NovaClient({ endpoint: nova.endpoint, token: 'fake:demo' }).projectId).toBe('demo');
    const client = await NovaClient.fromEnv(env, { adapter: nova.adapter, microversion: '2.79' });
    expect(client.projectId).toBe('demo');
    expect((await clientFromOptions({}, env)).projectId).toBe('demo');
    vi.stubEnv('OS_CLOUD', '');
    vi.stubEnv('OS_AUTH_URL', '');
    vi.stubEnv('OS_ENDPOINT', nova.endpoint);
    vi.stubEnv('OS_TOKEN', 'fake:demo');
    expect((await NovaClient.fromCloud(undefined, { adapter: nova.adapter })).projectId).toBe('demo');
    vi.stubEnv('NOVA_GUARD_LEDGER', `sqlite:${dir}/ledger.db`);
    const warned: string[] = [];
    const guard = new QuotaGuard(client, { ...FAST, onWarning: (m) => warned.push(m) });
    await guard.createServer(body('a'));
    expect(guard.stats).toMatchObject({ ledgerFallbacks: 0, ledgerOutages: 0 });
    expect(warned).toEqual([]);
    expect(existsSync(join(dir, 'ledger.db'))).toBe(true);
    await guard.close();
  });

  it('OS_PROJECT_ID names the project of a plain token (fromEnv and the CLI alike); a plain token alone names none', async () => {
    const nova = await startNova();
    const env = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: 'plain-token-0123', OS_PROJECT_ID: 'p-42' };
    expect((await NovaClient.fromEnv(env, { adapter: nova.adapter })).projectId).toBe('p-42');
    expect((await clientFromOptions({}, env)).projectId).toBe('p-42');
    expect((await clientFromOptions({ osProjectId: 'p-43' }, env)).projectId).toBe('p-43');
    const bare = { OS_ENDPOINT: nova.endpoint, OS_TOKEN: 'plain-token-0123' };
    expect((await NovaClient.fromEnv(bare, { adapter: nova.adapter })).projectId).toBeUndefined();
  });
});
