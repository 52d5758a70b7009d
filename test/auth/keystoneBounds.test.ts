/**
 * A Keystone renewal is bounded by the caller's signal and by the calling client's time limit of a
 * request: the caller gets its error at once; a shared renewal goes on for the callers still
 * waiting, bounded by KeystoneAuth.requestTimeoutMs, and is cancelled (its request released) when
 * nobody waits any more. On fake timers, through scripted axios adapters.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortError, KeystoneAuth, NovaClient, NovaNetworkError } from '../../src/index.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { scriptedAdapter, tokenBody, type ScriptedReply } from '../transport/scriptedAdapter.js';

const ENDPOINT = 'http://nova.test/v2.1';
const LIMITS: ScriptedReply = { status: 200, body: { limits: { absolute: { maxTotalCores: 20 } } } };

beforeEach(() => {
  vi.useFakeTimers();
  vi.spyOn(Math, 'random').mockReturnValue(0);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const issued = (): ScriptedReply => ({ status: 201, headers: { 'x-subject-token': `tok-${Math.round(performance.now())}` }, body: tokenBody(ENDPOINT, Date.now()) });

function keystone(replies: Array<ScriptedReply | 'issue'>, options: { requestTimeoutMs?: number; clock?: Clock } = {}) {
  const ks = scriptedAdapter((_r, n) => {
    const r = replies[n - 1] ?? 'issue';
    return r === 'issue' ? issued() : r;
  });
  const auth = new KeystoneAuth({ authUrl: 'http://keystone.test', username: 'ci-bot', password: 'pw-secret-42', projectName: 'ci', adapter: ks.adapter, ...options });
  return { auth, ks };
}

async function settle<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; atMs: number }> {
  const t0 = performance.now();
  let done: { value?: T; error?: unknown; atMs: number } | undefined;
  p.then(
    (value) => (done = { value, atMs: performance.now() - t0 }),
    (error: unknown) => (done = { error, atMs: performance.now() - t0 }),
  );
  for (let i = 0; i < 1000 && !done; i++) await vi.advanceTimersToNextTimerAsync();
  await vi.advanceTimersByTimeAsync(0);
  if (!done) throw new Error('never settled');
  return done;
}

describe('Keystone renewal under the client\'s time limit', () => {
  it('a hanging renewal ends a getLimits with requestTimeoutMs 300 at 300 ms, and is cancelled then', async () => {
    const { auth, ks } = keystone([{ hang: true }]);
    const nova = scriptedAdapter(() => LIMITS);
    const client = new NovaClient({ microversion: '2.1', endpoint: ENDPOINT, auth, adapter: nova.adapter, requestTimeoutMs: 300, retry: { retries: 0 } });
    const r = await settle(client.getLimits());
    expect(r.error).toBeInstanceOf(NovaNetworkError);
    expect((r.error as NovaNetworkError).timedOut).toBe(true);
    expect((r.error as Error).message).toBe(`GET ${ENDPOINT}/limits timed out (no response within 300 ms)`);
    expect(r.atMs).toBe(300);
    expect(ks.sent).toHaveLength(1);
    expect(ks.sent[0]!.aborted).toBe(true); // nobody waits for it: its socket is released at once
    expect(nova.sent).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0); // nothing keeps the process alive
  });

  it('with the default retries the call settles in about 5 s (5 attempts of 300 ms and the backoff), never 30 s', async () => {
    const { auth, ks } = keystone(Array(10).fill({ hang: true }));
    const client = new NovaClient({ microversion: '2.1', endpoint: ENDPOINT, auth, adapter: scriptedAdapter(() => LIMITS).adapter, requestTimeoutMs: 300 });
    const r = await settle(client.getLimits());
    expect(r.error).toBeInstanceOf(NovaNetworkError);
    // attempts at 0, 550, 1350, 2650, 4950 ms, each cut at 300 ms
    expect(r.atMs).toBe(5250);
    expect(ks.sent.map((s) => Math.round(s.atMs - ks.sent[0]!.atMs))).toEqual([0, 550, 1350, 2650, 4950]);
    expect(ks.sent.every((s) => s.aborted)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a renewal that answers within the time limit is used, and the request goes on', async () => {
    const { auth, ks } = keystone(['issue']);
    const nova = scriptedAdapter(() => LIMITS);
    const client = new NovaClient({ microversion: '2.1', endpoint: ENDPOINT, auth, adapter: nova.adapter, requestTimeoutMs: 300 });
    const r = await settle(client.getLimits());
    expect(r.value?.absolute.maxTotalCores).toBe(20);
    expect(ks.sent).toHaveLength(1);
    expect(nova.sent[0]!.headers['X-Auth-Token']).toBe(`tok-${Math.round(ks.sent[0]!.atMs)}`);
  });
});

describe('Keystone renewal under the caller\'s signal', () => {
  it('an aborted caller gets AbortError at once; the shared renewal goes on for the other, bounded by requestTimeoutMs', async () => {
    const { auth, ks } = keystone([{ hang: true }], { requestTimeoutMs: 1000 });
    const ac = new AbortController();
    const t0 = performance.now();
    const first = settle(auth.getToken({ signal: ac.signal }));
    const other = auth.getToken().then(
      () => ({ error: undefined, atMs: performance.now() - t0 }),
      (error: unknown) => ({ error, atMs: performance.now() - t0 }),
    );
    setTimeout(() => ac.abort(), 100);
    const a = await first;
    expect(a.error).toBeInstanceOf(AbortError);
    expect(a.atMs).toBe(100);
    expect(ks.sent[0]!.aborted).toBe(false); // the other caller still waits for it
    await vi.advanceTimersByTimeAsync(900);
    const b = await other;
    expect(b.error).toBeInstanceOf(NovaNetworkError);
    expect((b.error as NovaNetworkError).timedOut).toBe(true);
    expect((b.error as Error).message).toBe('Keystone POST http://keystone.test/v3/auth/tokens timed out (no response within 1000 ms)');
    expect(b.atMs).toBe(1000);
    expect(ks.sent).toHaveLength(1);
    expect(ks.sent[0]!.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('when the last caller leaves, the renewal is cancelled and the next caller starts afresh', async () => {
    const { auth, ks } = keystone([{ hang: true }, 'issue']);
    const a1 = new AbortController();
    const a2 = new AbortController();
    const p1 = auth.getToken({ signal: a1.signal }).catch((e: unknown) => e);
    const p2 = auth.getToken({ signal: a2.signal }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(100);
    a1.abort();
    expect(await p1).toBeInstanceOf(AbortError);
    expect(ks.sent[0]!.aborted).toBe(false);
    a2.abort();
    expect(await p2).toBeInstanceOf(AbortError);
    expect(ks.sent[0]!.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    const r = await settle(auth.getToken());
    expect(r.value).toMatch(/^tok-/);
    expect(ks.sent).toHaveLength(2);
    expect(auth.tokenRequests).toBe(2);
  });

  it('token expiry is read on the injected clock', async () => {
    let offsetMs = 0;
    const clock: Clock = { ...systemClock, wallNow: () => Date.now() + offsetMs };
    const { auth, ks } = keystone([], { clock });
    const t1 = (await settle(auth.getToken())).value;
    expect((await settle(auth.getToken())).value).toBe(t1);
    offsetMs = 3_600_000 - 60_000; // one minute left, under minTokenLifeMs (120 s): renew before use
    await vi.advanceTimersByTimeAsync(5);
    const t2 = (await settle(auth.getToken())).value;
    expect(t2).not.toBe(t1);
    expect(ks.sent).toHaveLength(2);
  });
});
