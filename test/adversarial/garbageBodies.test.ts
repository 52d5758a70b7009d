/**
 * Nova (or a proxy in front of it) answering 2xx with garbage: every read must reject with
 * InvalidResponseError, never a TypeError and never a silently empty answer.
 */
import { describe, expect, it } from 'vitest';
import { InvalidResponseError, NovaClient, auditQuota, waitForDelete } from '../../src/index.js';
import { reply, scripted } from './scripted.js';
import { rejection } from '../helpers.js';

const client = (endpoint: string): NovaClient =>
  new NovaClient({ microversion: '2.1', endpoint, token: 'admin:demo', retry: { minDelayMs: 1, maxDelayMs: 2, maxRetryTimeMs: 100 }, coalesce: false });

const HTML = '<html><body>Welcome to the proxy</body></html>';

describe('2xx bodies that are not what Nova promises', () => {
  it.each([
    ['an HTML page', HTML, 'body: "Welcome to the proxy"'],
    ['JSON null', 'null', 'empty body'],
    ['{"server": null}', '{"server": null}', 'body: "{"server":null}"'],
    ['an empty body', '', 'empty body'],
    ['a list', '[1]', 'body: "[1]"'],
    ['{"server": "x"}', '{"server": "x"}', 'body: "{"server":"x"}"'],
  ])('getServer with %s rejects with InvalidResponseError', async (_what, body, snippet) => {
    const s = await scripted((_q, res) => reply(res, 200, body, { 'x-openstack-request-id': 'req-1' }));
    const e = await rejection(client(s.endpoint).getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toBe(
      `Nova answered 200 to GET ${s.endpoint}/servers/abcabcab-0000-4000-8000-000000000abc with an unexpected body: expected a JSON object with a "server" object (${snippet})`,
    );
    expect(e).toMatchObject({ status: 200, requestId: 'req-1', serverId: 'abcabcab-0000-4000-8000-000000000abc', method: 'GET', url: `${s.endpoint}/servers/abcabcab-0000-4000-8000-000000000abc` });
    expect(s.seen).toHaveLength(1); // never retried
  });

  it('waitForDelete rejects with InvalidResponseError instead of a TypeError', async () => {
    const s = await scripted((_q, res) => reply(res, 200, '{"server": null}'));
    const e = await rejection(waitForDelete(client(s.endpoint), 'abcabcab-0000-4000-8000-000000000abc', { intervalMs: 5, timeoutMs: 1000 }));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(s.seen).toHaveLength(1);
  });

  it('listServers never takes a proxy page as an empty listing', async () => {
    const s = await scripted((_q, res) => reply(res, 200, HTML, { 'Content-Type': 'text/html' }));
    const e = await rejection(client(s.endpoint).listServers());
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toContain('expected a JSON object with a "servers" list of objects');
  });

  it.each([
    ['servers an object', { servers: { a: 1 } }],
    ['a null server', { servers: [null] }],
    ['servers_links a string', { servers: [{ id: 'a' }], servers_links: 'next' }],
  ])('listServers with %s rejects with InvalidResponseError', async (_what, body) => {
    const s = await scripted((_q, res) => reply(res, 200, body));
    expect(await rejection(client(s.endpoint).listServers())).toBeInstanceOf(InvalidResponseError);
  });

  it('listServers still reads a page without servers_links, and fails on a next link without an href (a next page it cannot read)', async () => {
    const plain = await scripted((_q, res) => reply(res, 200, { servers: [{ id: 'a' }] }));
    expect(await client(plain.endpoint).listServers()).toEqual([{ id: 'a' }]);
    const s = await scripted((_q, res) => reply(res, 200, { servers: [{ id: 'a' }], servers_links: [{ rel: 'next' }] }));
    const e = await rejection(client(s.endpoint).listServers());
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(String((e as Error).message)).toMatch(/next link has no href/);
    expect(s.seen).toHaveLength(1);
  });

  it('a quota audit behind a proxy page fails instead of reporting all usage as drift', async () => {
    const s = await scripted((q, res) => {
      if (q.url?.startsWith('/v2.1/limits')) return reply(res, 200, { limits: { absolute: { maxTotalCores: 10, totalCoresUsed: 4 } } });
      reply(res, 200, HTML, { 'Content-Type': 'text/html' });
    });
    const e = await rejection(auditQuota(client(s.endpoint), { readQuotaSetDetail: false, checkGhosts: false }));
    expect(e).toBeInstanceOf(InvalidResponseError);
  });

  it('createServer: 202 with an empty body says that a server may exist', async () => {
    const s = await scripted((_q, res) => reply(res, 202, ''));
    const e = await rejection(client(s.endpoint).createServer({ name: 'x', flavorRef: '1' }));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toBe(
      `Nova answered 202 to POST ${s.endpoint}/servers with an unexpected body: expected a JSON object with a "server" object ` +
        '(empty body). Nova accepted the request, so a server may have been created: look for it by name',
    );
  });

  it.each([
    ['getLimits', (c: NovaClient) => c.getLimits(), '{"limits": null}', '"limits" object'],
    ['getLimits', (c: NovaClient) => c.getLimits(), '{"limits": {"rate": []}}', '"absolute" object'],
    ['getQuotaSetDetail', (c: NovaClient) => c.getQuotaSetDetail('demo'), HTML, '"quota_set" object'],
    ['getFlavor', (c: NovaClient) => c.getFlavor('1'), 'null', '"flavor" object'],
  ])('%s with %s rejects with InvalidResponseError', async (_m, call, body, expected) => {
    const s = await scripted((_q, res) => reply(res, 200, body));
    const e = await rejection(call(client(s.endpoint)));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toContain(`expected a JSON object with a ${expected}`);
  });

  it.each([
    ['getServer', (c: NovaClient) => c.getServer('abcabcab-0000-4000-8000-000000000abc'), '{"server": {"status": "ACTIVE"}}', '"server" object that has an "id"'],
    ['listServers', (c: NovaClient) => c.listServers(), '{"servers": [{"id": "a"}, {"name": "no-id"}]}', '"servers" list of objects that have an "id"'],
    ['createServer', (c: NovaClient) => c.createServer({ name: 'x', flavorRef: '1' }), '{"reservation_id": "r-3fhpjulh"}', '"server" object'],
  ])('%s with a server without an id (%s) rejects with InvalidResponseError', async (_m, call, body, expected) => {
    const s = await scripted((_q, res) => reply(res, 200, body));
    const e = await rejection(call(client(s.endpoint)));
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect(e.message).toContain(`expected a JSON object with a ${expected}`);
  });

  it('a flavor read that got garbage is not cached', async () => {
    let n = 0;
    const s = await scripted((_q, res) => (++n === 1 ? reply(res, 200, 'null') : reply(res, 200, { flavor: { id: '1', vcpus: 1, ram: 512 } })));
    const c = client(s.endpoint);
    expect(await rejection(c.getFlavor('1'))).toBeInstanceOf(InvalidResponseError);
    expect(await c.getFlavor('1')).toEqual({ id: '1', vcpus: 1, ram: 512 });
  });
});
