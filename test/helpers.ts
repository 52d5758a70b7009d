/**
 * Shared test helpers: a fake Nova per test, a client aimed at it through the fake's in-process
 * adapter (no socket, so `vi.useFakeTimers()` drives the whole exchange), and {@link settle} to run
 * the fake clock until a call settles.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import { NovaClient, type NovaClientOptions } from '../src/index.js';
import { FakeNova, type FakeNovaOptions } from '../src/testing/index.js';
import { afterThisTest } from './cleanup.js';

/** Start a FakeNova with FakeNova's own defaults (the realistic DELETED window), closed after the current test. */
export async function startNovaAsShipped(options: FakeNovaOptions = {}): Promise<FakeNova> {
  const nova = await FakeNova.start(options);
  afterThisTest(() => nova.close());
  return nova;
}

/** Start a FakeNova that is closed after the current test (no DELETED window unless `deletedWindowMs` is given). */
export async function startNova(options: FakeNovaOptions = {}): Promise<FakeNova> {
  // On the real clock a realistic DELETED window (seconds with several deletes in flight) would make
  // every suite slow; tests that are about the window set it, and the fake-clock suites keep the default.
  const nova = await FakeNova.start({ deletedWindowMs: 0, ...options });
  afterThisTest(() => nova.close());
  return nova;
}

/**
 * A client for `nova` with fast retries (ms) so that retry paths run for real but quickly, at
 * microversion 2.79 like a current worker (so `networks: 'none'` is valid, as on real Nova). The
 * tests poll every few ms, so the delete engine's rate cap is off unless a test sets it. It talks to
 * the fake through {@link FakeNova.adapter} (no socket; pass `adapter: undefined` for HTTP).
 */
export function clientFor(nova: FakeNova, options: Partial<NovaClientOptions> = {}): NovaClient {
  return new NovaClient({
    endpoint: nova.endpoint,
    token: `admin:${nova.projectId}`,
    microversion: '2.79',
    adapter: nova.adapter,
    retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 },
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    ...options,
  });
}

/** Create a server through the fake's API and wait until it is ACTIVE (on the real or the fake clock). */
export async function activeServer(client: NovaClient, nova: FakeNova, flavorRef = '1'): Promise<string> {
  const s = await client.createServer({ name: `t-${Math.random().toString(36).slice(2, 8)}`, flavorRef, imageRef: 'img', networks: 'none' });
  const fake = vi.isFakeTimers();
  for (let i = 0; i < 200; i++) {
    if (nova.getServerState(s.id)?.status === 'ACTIVE') return s.id;
    if (fake) await vi.advanceTimersByTimeAsync(2);
    else await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`server ${s.id} never became ACTIVE`);
}

/** The fake clock's start: `Date.now()` and `performance.now()` read from here on under {@link useFakeClock}. */
export const T0 = Date.UTC(2025, 0, 1);

/**
 * Run every test of the calling file (or `describe` block) on vitest's fake timers, which fake
 * `setTimeout`, `Date` and `performance` alike, so nova-guard's clock, p-retry, p-timeout and
 * FakeNova's own timers all follow the fake clock. Start FakeNova and FakeKeystone in the test as
 * usual; they only schedule timers once a request arrives.
 */
export function useFakeClock(now: number = T0): void {
  beforeEach(() => {
    vi.useFakeTimers({ now });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Fake ms since {@link T0} (under {@link useFakeClock}). */
export const fakeMs = (): number => Date.now() - T0;

// Taken before any test fakes the timers (vitest fakes setImmediate too).
const realSetImmediate = globalThis.setImmediate;
const realTurn = (): Promise<void> => new Promise((r) => realSetImmediate(r));

/**
 * Advance the fake clock, timer by timer, until `p` settles; resolve or reject as `p` does. Each
 * step runs the next due timer and then every promise callback it released, so the fake time at
 * which `p` settles is exact. Fails when `p` is still pending after `maxMs` fake ms, or when nothing
 * is scheduled that could ever settle it (no timer pending for 2 s of real time). On the real clock
 * it just awaits `p`. Only for work without real I/O (the fakes' in-process adapters): while a socket
 * is busy it would move the clock past timers that real I/O was meant to beat.
 */
export async function settle<T>(p: Promise<T>, maxMs = 3_600_000): Promise<T> {
  if (!vi.isFakeTimers()) return p;
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  const limit = Date.now() + maxMs;
  let idleSince: number | undefined;
  await realTurn();
  while (!done) {
    if (Date.now() > limit) throw new Error(`still pending after ${maxMs} fake ms`);
    if (vi.getTimerCount() === 0) {
      idleSince ??= vi.getRealSystemTime();
      if (vi.getRealSystemTime() - idleSince > 2000) throw new Error('still pending, and no timer is left that could settle it');
      await realTurn();
      continue;
    }
    idleSince = undefined;
    await vi.advanceTimersToNextTimerAsync();
  }
  return p;
}

/**
 * Wait, without moving the fake clock, until `condition()` holds: for real I/O (a socket) to reach a
 * fake while the test holds the clock. Fails after 10 s of real time.
 */
export async function untilReal(condition: () => boolean): Promise<void> {
  const start = vi.isFakeTimers() ? vi.getRealSystemTime() : Date.now();
  const now = (): number => (vi.isFakeTimers() ? vi.getRealSystemTime() : Date.now());
  while (!condition()) {
    if (now() - start > 10_000) throw new Error('condition still false after 10 s of real time');
    await realTurn();
  }
}

/** Advance the fake clock timer by timer until `condition()` holds (see {@link settle}). */
export async function runUntil(condition: () => boolean, maxMs = 3_600_000): Promise<void> {
  const limit = Date.now() + maxMs;
  await realTurn();
  while (!condition()) {
    if (Date.now() > limit) throw new Error(`condition still false after ${maxMs} fake ms`);
    if (vi.getTimerCount() === 0) throw new Error('condition still false, and no timer is left that could change it');
    await vi.advanceTimersToNextTimerAsync();
  }
}

/** The path of a server's own URL, as FakeNova records it. */
export const serverPath = (id: string): string => `/servers/${id}`;

/** The error `p` rejects with; fails the test when `p` resolves. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released): a refused connection. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A fresh temporary directory, removed (with what is in it) after the current test. */
export function tempDir(prefix = 'nova-guard-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  afterThisTest(() => rmSync(d, { recursive: true, force: true }));
  return d;
}
