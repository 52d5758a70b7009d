/** Shared test helpers: a fake Nova per test and a client aimed at it with millisecond retry delays. */
import { afterEach } from 'vitest';
import { NovaClient, type NovaClientOptions } from '../src/index.js';
import { FakeNova, type FakeNovaOptions } from '../src/testing/index.js';

const started: FakeNova[] = [];

/** Start a FakeNova with FakeNova's own defaults (the realistic DELETED window), closed after the current test. */
export async function startNovaAsShipped(options: FakeNovaOptions = {}): Promise<FakeNova> {
  const nova = await FakeNova.start(options);
  started.push(nova);
  return nova;
}

/** Start a FakeNova that is closed after the current test (no DELETED window unless `deletedWindowMs` is given). */
export async function startNova(options: FakeNovaOptions = {}): Promise<FakeNova> {
  // On the real clock a realistic DELETED window (seconds with several deletes in flight) would make
  // every suite slow; tests that are about the window set it, and the fake-clock suites keep the default.
  const nova = await FakeNova.start({ deletedWindowMs: 0, ...options });
  started.push(nova);
  return nova;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((n) => n.close()));
});

/**
 * A client for `nova` with fast retries (ms) so that retry paths run for real but quickly, at
 * microversion 2.79 like a current worker (so `networks: 'none'` is valid, as on real Nova). The
 * tests poll every few ms, so the delete engine's rate cap is off unless a test sets it.
 */
export function clientFor(nova: FakeNova, options: Partial<NovaClientOptions> = {}): NovaClient {
  return new NovaClient({
    endpoint: nova.endpoint,
    token: `admin:${nova.projectId}`,
    microversion: '2.79',
    retry: { minDelayMs: 2, maxDelayMs: 20, maxRetryTimeMs: 2000 },
    maxRequestsPerSecond: Number.POSITIVE_INFINITY,
    ...options,
  });
}

/** Create a server through the fake's API and wait until it is ACTIVE. */
export async function activeServer(client: NovaClient, nova: FakeNova, flavorRef = '1'): Promise<string> {
  const s = await client.createServer({ name: `t-${Math.random().toString(36).slice(2, 8)}`, flavorRef, imageRef: 'img', networks: 'none' });
  for (let i = 0; i < 200; i++) {
    if (nova.getServerState(s.id)?.status === 'ACTIVE') return s.id;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`server ${s.id} never became ACTIVE`);
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
