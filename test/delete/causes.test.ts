/**
 * A delete or a wait that times out or fails says what went wrong on the way: the message names it
 * (`Nova at <URL> refused every connection (ECONNREFUSED, N tries)`, `answered every request with
 * HTTP 500`), `cause` is the latest failure, `failures` counts them by kind with the last error of
 * each, and `onFailure` is told of each failure as it happens. Real sockets (a closed port) on the
 * real clock, outcomes with generous bounds; ScriptedNova on fake timers for the rest.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeleteFailedError, DeleteTimeoutError, NovaClient, NovaNetworkError, ServerError, waitForDelete } from '../../src/index.js';
import type { DeleteFailureNotice } from '../../src/delete/index.js';
import { KeystoneAuth } from '../../src/auth/keystone.js';
import { ScriptedNova } from './support/scriptedNova.js';
import { closedPort } from '../helpers.js';

/** Server ids: Nova's are UUIDs, and the library refuses anything else. */
const S1 = '00000001-0000-4000-8000-000000000000';

afterEach(() => {
  vi.useRealTimers();
});

/** A port that refuses connections: bound, then closed. */
describe('a Nova that refuses every connection (real sockets)', () => {
  it('deleteServer --wait: DeleteTimeoutError names ECONNREFUSED and the tries, cause is the NovaNetworkError, failures by kind', async () => {
    const port = await closedPort();
    const endpoint = `http://127.0.0.1:${port}/v2.1`;
    const client = new NovaClient({ endpoint, token: 'admin:demo', retry: { minDelayMs: 5, maxDelayMs: 20, maxRetryTimeMs: 1000 } });
    const seen: DeleteFailureNotice[] = [];
    const started = Date.now();
    const e = await client
      .deleteServer('8d3b2c1e-0000-4000-8000-000000000001', { wait: true, timeoutMs: 1500, intervalMs: 100, onFailure: (f) => seen.push(f) })
      .catch((x: unknown) => x);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(e).toBeInstanceOf(DeleteTimeoutError);
    const t = e as DeleteTimeoutError;
    expect(t.message).toMatch(new RegExp(`: Nova at ${endpoint.replace(/[.]/g, '\\.')} refused every connection \\(ECONNREFUSED, \\d+ tries\\)$`));
    expect(t.cause).toBeInstanceOf(NovaNetworkError);
    expect((t.cause as NovaNetworkError).code).toBe('ECONNREFUSED');
    expect(t.failures?.counts.delete).toBeGreaterThanOrEqual(2);
    expect(t.failures?.lastError.delete).toBeInstanceOf(NovaNetworkError);
    expect(t.failures?.answered).toBe(0);
    const tries = Number(/ECONNREFUSED, (\d+) tries/.exec(t.message)![1]);
    expect(tries).toBe(t.failures!.counts.delete + t.failures!.counts.look + t.failures!.counts.auth);
    // Each failure was told as it happened: the first one is the first DELETE attempt.
    expect(seen[0]).toMatchObject({ kind: 'delete', count: 1 });
    expect(seen).toHaveLength(tries);
  });

  it('deleteServer without wait: DeleteFailedError names ECONNREFUSED and how many tries', async () => {
    const port = await closedPort();
    const client = new NovaClient({ endpoint: `http://127.0.0.1:${port}/v2.1`, token: 'admin:demo', retry: { minDelayMs: 5, maxDelayMs: 20, maxRetryTimeMs: 1000 } });
    const e = await client.deleteServer('8d3b2c1e-0000-4000-8000-000000000002', { timeoutMs: 5000 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DeleteFailedError);
    expect((e as Error).message).toContain('refused every connection (ECONNREFUSED, 4 tries)');
    expect((e as DeleteFailedError).failures?.counts.delete).toBe(4);
  });
  it('a Keystone that refuses every connection is named as such: failures of kind auth', async () => {
    const port = await closedPort();
    const auth = new KeystoneAuth({ authUrl: `http://127.0.0.1:${port}/v3`, username: 'ci', password: 'pw', userDomainName: 'Default', projectName: 'ci', projectDomainName: 'Default' });
    const client = new NovaClient({ auth, retry: { minDelayMs: 5, maxDelayMs: 20, maxRetryTimeMs: 1000 } });
    const e = await client.deleteServer('8d3b2c1e-0000-4000-8000-000000000003', { timeoutMs: 5000 }).catch((x: unknown) => x);
    expect((e as Error).message).toContain(`Keystone at http://127.0.0.1:${port}/v3 refused every connection (ECONNREFUSED, 4 tries)`);
    expect((e as DeleteFailedError).failures?.counts).toEqual({ delete: 0, look: 0, auth: 4 });
    expect((e as Error).message).not.toContain('pw');
  });
});

async function fakeSettle<T>(p: Promise<T>, maxMs = 1_000_000): Promise<{ value?: T; error?: unknown }> {
  let out: { value?: T; error?: unknown } | undefined;
  p.then(
    (value) => (out = { value }),
    (error: unknown) => (out = { error }),
  );
  for (let t = 0; t < maxMs && !out; t += 100) await vi.advanceTimersByTimeAsync(100);
  if (!out) throw new Error('did not settle');
  return out;
}

describe('failures that do not read alike', () => {
  it('a DELETE answered 500 every time: the timeout says Nova answered every request with HTTP 500, not a refused connection', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 1000, goneAfterMs: 2000 });
    nova.fault = () => ({ kind: 'status', status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } });
    const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:demo', adapter: nova.adapter });
    const r = await fakeSettle(client.deleteServer(S1, { wait: true, timeoutMs: 60_000 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    const t = r.error as DeleteTimeoutError;
    expect(t.message).toMatch(/: Nova at http:\/\/nova\.test\/v2\.1 answered every request with HTTP 500 \(\d+ tries\): Unexpected API Error\.$/);
    expect(t.cause).toBeInstanceOf(ServerError);
    expect(t.failures?.counts.delete).toBeGreaterThan(0);
    expect(t.failures?.counts.look).toBeGreaterThan(0);
  });

  it("waitForDelete's timeout outcome carries the failed looks (by kind, the last error) beside the observations", async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 10_000_000 });
    const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:demo', adapter: nova.adapter });
    await fakeSettle(client.deleteServer(S1));
    let gets = 0;
    nova.fault = ({ method }) => (method === 'GET' && ++gets % 2 === 0 ? { kind: 'reset' } : undefined);
    // Each failed look widens the interval (pollPace.ts): 30 s leaves room for three of each.
    const r = await fakeSettle(waitForDelete(client, S1, { intervalMs: 1000, timeoutMs: 30_000 }));
    expect(r.value?.outcome).toBe('timeout');
    expect(r.value?.failures?.counts.look).toBeGreaterThanOrEqual(3);
    expect((r.value?.failures?.lastError.look as NovaNetworkError).code).toBe('ECONNRESET');
    expect(r.value?.failures?.answered).toBeGreaterThanOrEqual(3);
  });
});

describe('the logger hears of the first failure when it happens', () => {
  it('a DELETE answered 500 every time: one warning for the first DELETE failure and one for the first failed look, not one per retry', async () => {
    vi.useFakeTimers();
    const nova = new ScriptedNova();
    nova.add(S1, { deletedAfterMs: 1000, goneAfterMs: 2000 });
    nova.fault = () => ({ kind: 'status', status: 500, body: { computeFault: { code: 500, message: 'Unexpected API Error.' } } });
    // A console-like logger: each line comes as (msg, fields).
    const warnings: Array<{ obj: Record<string, unknown>; msg: string | undefined }> = [];
    const logger = {
      level: 'info',
      warn: (msg: string, obj: Record<string, unknown>) => void warnings.push({ obj, msg }),
      info: () => undefined,
      debug: () => undefined,
      error: () => undefined,
      trace: () => undefined,
      fatal: () => undefined,
    };
    const client = new NovaClient({ endpoint: 'http://nova.test/v2.1', token: 'admin:demo', adapter: nova.adapter, logger });
    const r = await fakeSettle(client.deleteServer(S1, { wait: true, timeoutMs: 60_000 }));
    expect(r.error).toBeInstanceOf(DeleteTimeoutError);
    const firsts = warnings.filter((w) => /failed \(.*\); still trying until the call's timeout$/.test(w.msg ?? ''));
    expect(firsts.map((w) => w.obj['kind']).sort()).toEqual(['delete', 'look']);
    expect(firsts.every((w) => w.obj['serverId'] === S1)).toBe(true);
    expect(firsts[0]!.msg).toContain('HTTP 500');
  });
});
