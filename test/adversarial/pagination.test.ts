/**
 * servers_links that loop, repeat servers, point at another host or are not URLs: the listing is
 * never silently truncated or doubled (an audit would count wrong), and never leaves the endpoint.
 */
import { describe, expect, it } from 'vitest';
import { InvalidResponseError, NovaClient, reapServers, ValidationError } from '../../src/index.js';
import { clientFor, startNova } from '../helpers.js';
import { reply, scripted } from './scripted.js';

const client = (endpoint: string): NovaClient => new NovaClient({ microversion: '2.1', endpoint, token: 'admin:demo', retry: { retries: 0 } });

describe('listServers pagination', () => {
  it('a next link that asks again for the same marker (a proxy dropping the query) is an error, not a doubled list', async () => {
    const s = await scripted((_q, res) =>
      reply(res, 200, { servers: [{ id: 'a' }, { id: 'b' }], servers_links: [{ rel: 'next', href: 'http://nova/v2.1/servers/detail?marker=b' }] }),
    );
    const e = await client(s.endpoint).listServers().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect((e as Error).message).toBe(
      `Nova answered 200 to GET ${s.endpoint}/servers/detail with an unexpected body: the servers_links next link asks again for marker "b": the pagination loops`,
    );
    expect(s.seen.map((r) => r.url)).toEqual(['/v2.1/servers/detail', '/v2.1/servers/detail?marker=b']);
  });

  it('a server on two pages is listed once', async () => {
    const pages: Record<string, unknown> = {
      '/v2.1/servers/detail': { servers: [{ id: 'a' }, { id: 'b' }], servers_links: [{ rel: 'next', href: 'x?marker=b' }] },
      '/v2.1/servers/detail?marker=b': { servers: [{ id: 'b' }, { id: 'c' }] },
    };
    const s = await scripted((q, res) => reply(res, 200, pages[q.url ?? '']));
    expect((await client(s.endpoint).listServers()).map((x) => x.id)).toEqual(['a', 'b', 'c']);
  });

  it('a next link to another host is followed on this endpoint only (query taken, host ignored)', async () => {
    const s = await scripted((q, res) =>
      q.url === '/v2.1/servers/detail'
        ? reply(res, 200, { servers: [{ id: 'a' }], servers_links: [{ rel: 'next', href: 'https://evil.example/steal?marker=a&limit=1' }] })
        : reply(res, 200, { servers: [{ id: 'b' }] }),
    );
    expect((await client(s.endpoint).listServers()).map((x) => x.id)).toEqual(['a', 'b']);
    expect(s.seen.map((r) => r.url)).toEqual(['/v2.1/servers/detail', '/v2.1/servers/detail?marker=a&limit=1']);
  });

  it('a next link that is not a URL is an error', async () => {
    const s = await scripted((_q, res) => reply(res, 200, { servers: [{ id: 'a' }], servers_links: [{ rel: 'next', href: 'http://[' }] }));
    await expect(client(s.endpoint).listServers()).rejects.toThrow('the servers_links next link "http://[" is not a URL');
  });

  it('a next link that names no marker (a proxy paging with ?page=2) is an error, not the last page', async () => {
    const s = await scripted((_q, res) => reply(res, 200, { servers: [{ id: 'a' }], servers_links: [{ rel: 'next', href: 'http://nova/v2.1/servers/detail?page=2' }] }));
    const e = await client(s.endpoint).listServers().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect((e as Error).message).toBe(
      `Nova answered 200 to GET ${s.endpoint}/servers/detail with an unexpected body: the servers_links next link "http://nova/v2.1/servers/detail?page=2" names no marker: the next page cannot be read, and the listing would be truncated`,
    );
    expect(s.seen).toHaveLength(1);
  });

  it("FakeNova's real pagination still reads every page", async () => {
    const nova = await startNova({ pageSize: 2, maxTotalInstances: -1 });
    for (let i = 0; i < 5; i++) nova.addServer({ name: `s${i}` });
    const r = await clientFor(nova).listServersWithMeta();
    expect(r.pages).toBe(3);
    expect(r.servers.map((x) => x.name).sort()).toEqual(['s0', 's1', 's2', 's3', 's4']);
  });
});

describe('reaper deleteOptions', () => {
  it('a bad deleteOptions value is refused before the listing', async () => {
    const nova = await startNova();
    nova.addServer({ name: 'ci-1', createdMs: Date.now() - 3_600_000 });
    await expect(
      reapServers(clientFor(nova), { prefix: 'ci-', olderThanMs: 0, passIntervalMs: 1, deleteOptions: { pollRetries: -1 } }),
    ).rejects.toThrow(ValidationError);
    expect(nova.requests).toHaveLength(0);
  });
});
