/**
 * Durations longer than a Node timer can wait (2^31 - 1 ms, about 24.8 days): a timer given more
 * fires after 1 ms, so requestTimeoutMs: 3e9 timed every request out at once and waitForDelete with
 * timeoutMs: 3e9 timed out at once. They are refused; Infinity still means "no limit".
 */
import { describe, expect, it, vi } from 'vitest';
import { AbortError, KeystoneAuth, NovaClient, ValidationError, reapServers, waitForDelete } from '../../src/index.js';
import { FakeNova } from '../../src/testing/index.js';
import { clientFor, runUntil, settle, startNova } from '../helpers.js';

const TOO_LONG = 3e9;

describe('durations beyond a timer', () => {
  it('client requestTimeoutMs and per-call requestTimeoutMs', async () => {
    expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', requestTimeoutMs: TOO_LONG })).toThrow(
      'requestTimeoutMs must be at most 2147483647 ms (about 24.8 days, the longest a timer can wait), or Infinity for no limit, got 3000000000',
    );
    const nova = await startNova();
    await expect(clientFor(nova).getLimits({ requestTimeoutMs: TOO_LONG })).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
    // Infinity is no limit, and works.
    expect((await clientFor(nova, { requestTimeoutMs: Number.POSITIVE_INFINITY }).getLimits()).absolute.maxTotalCores).toBe(20);
  });

  it('waitForDelete timeoutMs and intervalMs', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer().id;
    await expect(waitForDelete(client, id, { timeoutMs: TOO_LONG })).rejects.toThrow(ValidationError);
    await expect(waitForDelete(client, id, { intervalMs: TOO_LONG })).rejects.toThrow(ValidationError);
    await expect(client.deleteServer(id, { wait: true, timeoutMs: TOO_LONG })).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });

  it('waitForDelete with timeoutMs Infinity waits (until aborted)', async () => {
    vi.useFakeTimers();
    try {
      const nova = await startNova();
      const client = clientFor(nova, { coalesce: false });
      const id = nova.addServer().id;
      nova.setServerBehavior(id, { onDelete: 'never' });
      await client.requestDelete(id);
      // On the fake clock: still waiting an hour later (past the 300 s default), then ended by the abort alone.
      const ac = new AbortController();
      const t0 = Date.now();
      let settled = false;
      const p = waitForDelete(client, id, { timeoutMs: Number.POSITIVE_INFINITY, intervalMs: 60_000, signal: ac.signal })
        .catch((e: unknown) => e)
        .finally(() => (settled = true));
      await runUntil(() => nova.requestsTo('GET', `/servers/${id}`).length > 3);
      await vi.advanceTimersByTimeAsync(3_600_000);
      expect(settled).toBe(false);
      expect(Date.now() - t0).toBeGreaterThan(3_600_000);
      ac.abort();
      const r = await settle(p);
      expect((r as Error).name).toBe('AbortError');
      expect(r).toBeInstanceOf(AbortError);
      expect(ac.signal.aborted).toBe(true); // it waited past 3 polls: the timeout was not what ended it
      expect(nova.requestsTo('GET', `/servers/${id}`).length).toBeGreaterThan(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('retry delays, Keystone, the reaper and FakeNova', async () => {
    expect(() => new NovaClient({ endpoint: 'http://127.0.0.1:1/v2.1', token: 't', retry: { maxDelayMs: TOO_LONG } })).toThrow(ValidationError);
    expect(() => new KeystoneAuth({ authUrl: 'http://127.0.0.1:1', username: 'u', password: 'pw-secret', projectName: 'p', requestTimeoutMs: TOO_LONG })).toThrow(ValidationError);
    const nova = await startNova();
    await expect(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 0, deleteTimeoutMs: TOO_LONG })).rejects.toThrow(ValidationError);
    await expect(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 0, passIntervalMs: Number.POSITIVE_INFINITY })).rejects.toThrow(ValidationError);
    // A fleet older than 30 days is fine: olderThanMs is compared, not waited for.
    await expect(reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 40 * 86_400_000, passIntervalMs: 1 })).resolves.toMatchObject({ deleted: [] });
    await expect(FakeNova.start({ deleteDelayMs: TOO_LONG })).rejects.toThrow(ValidationError);
  });
});
