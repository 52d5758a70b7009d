/**
 * Listings are bounded: at most `maxPages` pages (default 1000) within `timeoutMs` (default
 * 600000 ms) in all, so a proxy or a bug that hands out a new marker with every page ends with an
 * error instead of being followed for ever (issue 12 saw 3,510 links followed in 5 s). The loop
 * detection (a marker asked for twice) stays. Time runs on the fake clock.
 */
import type { AxiosAdapter } from 'axios';
import { describe, expect, it, vi } from 'vitest';
import { AbortError, BadRequestError, InvalidResponseError, NovaClient, NovaNetworkError, ValidationError } from '../../src/index.js';
import type { FakeNova } from '../../src/testing/index.js';
import { clientFor, fakeMs, rejection, settle, startNova, useFakeClock } from '../helpers.js';
import { scriptedAdapter, type SentRequest } from '../transport/scriptedAdapter.js';

const ENDPOINT = 'http://nova.test/v2.1';

/** Page n (1-based) holds server `s<n>` and links to marker `s<n>`: a listing without end. */
function endless(): { adapter: AxiosAdapter; sent: SentRequest[] } {
  return scriptedAdapter((_req, n) => ({
    status: 200,
    body: { servers: [{ id: `s${n}` }], servers_links: [{ rel: 'next', href: `${ENDPOINT}/servers/detail?marker=s${n}` }] },
  }));
}

/** `inner`, each request `delayMs` later on the (fake) clock; an abort meanwhile cancels it (`released` counts those). */
function slow(inner: AxiosAdapter, delayMs: number): AxiosAdapter & { released: number } {
  const adapter = Object.assign(
    (config: Parameters<AxiosAdapter>[0]) =>
      new Promise<void>((resolve, reject) => {
        const signal = config.signal as AbortSignal | undefined;
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, delayMs);
        const onAbort = (): void => {
          clearTimeout(timer);
          adapter.released++;
          reject(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED', name: 'CanceledError' }));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      }).then(() => inner(config)),
    { released: 0 },
  );
  return adapter;
}

const client = (adapter: AxiosAdapter, extra: Record<string, unknown> = {}): NovaClient =>
  new NovaClient({ endpoint: ENDPOINT, token: 'admin:demo', adapter, microversion: '2.1', retry: { retries: 0 }, ...extra });

describe('listServers page bound (maxPages)', () => {
  it('a listing whose every page links to a new marker ends after the default 1000 pages with InvalidResponseError', async () => {
    const { adapter, sent } = endless();
    const e = await rejection(client(adapter).listServers());
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toBe(
      `Nova answered 200 to GET ${ENDPOINT}/servers/detail with an unexpected body: page 1000 of the listing still has a servers_links next link, ` +
        'and maxPages is 1000: a listing whose every page links to another is not followed for ever (raise maxPages if the project really has more servers)',
    );
    expect(sent).toHaveLength(1000);
    expect(sent.at(-1)!.url).toBe(`${ENDPOINT}/servers/detail`);
  });

  it('maxPages: 3 reads three pages and stops; brief listings are bounded the same way', async () => {
    for (const brief of [false, true]) {
      const { adapter, sent } = endless();
      const e = await rejection(client(adapter).listServersWithMeta({}, { maxPages: 3, brief }));
      expect(e).toBeInstanceOf(InvalidResponseError);
      expect(e.message).toContain('page 3 of the listing still has a servers_links next link, and maxPages is 3');
      expect(sent).toHaveLength(3);
    }
  });

  it('a listing of exactly maxPages pages is read whole', async () => {
    const { adapter, sent } = scriptedAdapter((_req, n) => ({
      status: 200,
      body: { servers: [{ id: `s${n}` }], servers_links: n < 3 ? [{ rel: 'next', href: `x?marker=s${n}` }] : [] },
    }));
    const r = await client(adapter).listServersWithMeta({}, { maxPages: 3 });
    expect(r.servers.map((s) => s.id)).toEqual(['s1', 's2', 's3']);
    expect(r.pages).toBe(3);
    expect(sent).toHaveLength(3);
  });

  it('the loop detection still answers first: a marker asked for twice', async () => {
    const { adapter, sent } = scriptedAdapter((_req, n) => ({
      status: 200,
      body: { servers: [{ id: `s${n}` }], servers_links: [{ rel: 'next', href: `x?marker=${n <= 2 ? `m${n}` : 'm1'}` }] },
    }));
    const e = await rejection(client(adapter).listServers({}, { maxPages: 10 }));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toContain('the servers_links next link asks again for marker "m1": the pagination loops');
    expect(sent).toHaveLength(3);
  });

  it.each([0, -1, 1.5, Number.NaN, '10'])('maxPages %j is refused before any request', async (maxPages) => {
    const { adapter, sent } = endless();
    const e = await rejection(client(adapter).listServers({}, { maxPages: maxPages as number }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(`maxPages must be a positive integer (or Infinity), got ${String(maxPages)}`);
    expect(sent).toHaveLength(0);
  });

  it('timeoutMs 0 or negative is refused before any request', async () => {
    const { adapter, sent } = endless();
    await expect(client(adapter).listServers({}, { timeoutMs: 0 })).rejects.toThrow(new ValidationError('timeoutMs must be a positive number of milliseconds, got 0'));
    await expect(client(adapter).listServers({}, { timeoutMs: -1 })).rejects.toThrow(ValidationError);
    expect(sent).toHaveLength(0);
  });
});

describe('listServers time bound (timeoutMs)', () => {
  useFakeClock();

  it('pages of 1 s each with a new marker every time: the listing ends at timeoutMs, naming the pages read, the open request released', async () => {
    const { adapter, sent } = endless();
    const slowAdapter = slow(adapter, 1000);
    const e = await rejection(settle(client(slowAdapter).listServers({}, { timeoutMs: 5500, maxPages: Number.POSITIVE_INFINITY })));
    expect(e).toBeInstanceOf(NovaNetworkError);
    expect(e).toMatchObject({ timedOut: true, code: 'ETIMEDOUT', status: 0, method: 'GET', url: `${ENDPOINT}/servers/detail` });
    expect(e.message).toBe(`GET ${ENDPOINT}/servers/detail timed out: the listing did not end within 5500 ms (timeoutMs; 5 pages read)`);
    expect(fakeMs()).toBe(5500);
    // Pages answered at 1, 2, 3, 4 and 5 s; the sixth request, still under way at 5.5 s, is released.
    expect(sent.map((r) => r.atMs - sent[0]!.atMs)).toEqual([0, 1000, 2000, 3000, 4000]);
    expect(slowAdapter.released).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the default time bound is 600000 ms: a listing that never ends is cut there, not later', async () => {
    const { adapter } = endless();
    const e = await rejection(settle(client(slow(adapter, 1000)).listServers({}, { maxPages: Number.POSITIVE_INFINITY })));
    expect(e).toBeInstanceOf(NovaNetworkError);
    // Page 600 would come at 600000 ms too: the deadline, set before the first request, fires first.
    expect(e.message).toContain('the listing did not end within 600000 ms (timeoutMs; 599 pages read)');
    expect(fakeMs()).toBe(600_000);
  });

  it("the caller's signal still wins: AbortError, not a timeout", async () => {
    const { adapter } = endless();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 2500);
    const e = await rejection(settle(client(slow(adapter, 1000)).listServers({}, { signal: controller.signal, timeoutMs: 10_000, maxPages: Number.POSITIVE_INFINITY })));
    expect(e).toBeInstanceOf(AbortError);
    expect(fakeMs()).toBe(2500);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a listing that ends in time leaves no timer behind', async () => {
    const { adapter } = scriptedAdapter(() => ({ status: 200, body: { servers: [{ id: 'a' }] } }));
    expect((await settle(client(slow(adapter, 1000)).listServers())).map((s) => s.id)).toEqual(['a']);
    expect(fakeMs()).toBe(1000);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('listServers when the marker server vanishes between pages (churn)', () => {
  /** FakeNova with pages of 3; `between` runs once, right after page `afterPage` was answered. */
  async function churning(afterPage: number, between: (nova: FakeNova, lastIds: string[]) => void): Promise<{ nova: FakeNova; sent: string[] }> {
    const nova = await startNova({ pageSize: 3 });
    const sent: string[] = [];
    const inner = nova.adapter;
    let pages = 0;
    const wrapped: AxiosAdapter = async (config) => {
      sent.push(String(config.url ?? '') + JSON.stringify(config.params ?? {}));
      const res = await inner(config);
      if (res.status === 200 && /\/servers(\/detail)?$/.test(String(config.url)) && ++pages === afterPage) {
        const body = JSON.parse(String(res.data)) as { servers: Array<{ id: string }> };
        between(nova, body.servers.map((s) => s.id));
      }
      return res;
    };
    (nova as unknown as { churnAdapter: AxiosAdapter }).churnAdapter = wrapped;
    return { nova, sent };
  }
  const listing = (nova: FakeNova): NovaClient =>
    clientFor(nova, { adapter: (nova as unknown as { churnAdapter: AxiosAdapter }).churnAdapter, retry: { retries: 0 } });

  it("Nova's 400 'marker [<id>] not found' (the marker deleted and archived) re-reads the last good page: every server once, none lost", async () => {
    const { nova, sent } = await churning(2, (n, ids) => {
      n.destroyServer(ids.at(-1)!);
      n.archiveDeletedRows();
    });
    const ids = Array.from({ length: 8 }, () => nova.addServer({ status: 'ACTIVE' }).id);
    const servers = await listing(nova).listServers();
    const got = servers.map((s) => s.id);
    expect(new Set(got).size).toBe(got.length);
    // Every server once: the vanished one as its page showed it, the others on the pages after it.
    expect(got.sort()).toEqual([...ids].sort());
    expect(nova.requestsTo('GET', /\/servers\/detail$/).filter((r) => r.status === 400)).toHaveLength(1);
    expect(sent.length).toBe(5); // pages 1, 2, the 400, page 2 again, page 3
  });

  it('the marker of the first page vanishing restarts the listing from its first page', async () => {
    const { nova } = await churning(1, (n, ids) => {
      n.destroyServer(ids.at(-1)!);
      n.archiveDeletedRows();
    });
    for (let i = 0; i < 5; i++) nova.addServer({ status: 'ACTIVE' });
    const servers = await listing(nova).listServers();
    expect(servers).toHaveLength(5);
    expect(new Set(servers.map((s) => s.id)).size).toBe(5);
  });

  it('a marker the caller gave that Nova cannot find is still a BadRequestError (not the listing\'s to replace)', async () => {
    const nova = await startNova({ pageSize: 3 });
    nova.addServer({ status: 'ACTIVE' });
    const e = await rejection(clientFor(nova, { retry: { retries: 0 } }).listServers({ marker: 'no-such-server' }));
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.message).toBe('marker [no-such-server] not found');
  });

  it('re-reads count against maxPages: a marker that vanishes after every page is followed to the end with room, and ends at maxPages without', async () => {
    /** 40 servers, pages of 2; every full page's last server is deleted and archived as soon as the page is answered. */
    async function everyMarkerVanishes(): Promise<{ nova: FakeNova; adapter: AxiosAdapter }> {
      const nova = await startNova({ pageSize: 2 });
      for (let i = 0; i < 40; i++) nova.addServer({ status: 'ACTIVE' });
      const inner = nova.adapter;
      const adapter: AxiosAdapter = async (config) => {
        const res = await inner(config);
        const body = res.status === 200 ? (JSON.parse(String(res.data)) as { servers: Array<{ id: string }> }) : undefined;
        const last = body?.servers.at(-1)?.id;
        if (last && body?.servers.length === 2) {
          nova.destroyServer(last);
          nova.archiveDeletedRows();
        }
        return res;
      };
      return { nova, adapter };
    }
    const roomy = await everyMarkerVanishes();
    const all = await clientFor(roomy.nova, { adapter: roomy.adapter, retry: { retries: 0 } }).listServers();
    expect(new Set(all.map((s) => s.id)).size).toBe(40);
    expect(all).toHaveLength(40);
    const tight = await everyMarkerVanishes();
    const e = await rejection(clientFor(tight.nova, { adapter: tight.adapter, retry: { retries: 0 } }).listServers({}, { maxPages: 6 }));
    expect(e).toBeInstanceOf(BadRequestError);
    expect(tight.nova.requestsTo('GET', /\/servers\/detail$/)).toHaveLength(6);
  });
});
