/**
 * Huge or endless bodies: the client stops reading at maxResponseBytes and fails with
 * InvalidResponseError (not retried) instead of buffering without bound.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidResponseError, KeystoneAuth, NovaClient, ValidationError } from '../../src/index.js';
import { reply, scripted } from './scripted.js';

const endless: http.Server[] = [];
afterEach(async () => {
  for (const s of endless.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('maxResponseBytes', () => {
  it('a 2xx body over the limit is an InvalidResponseError after one request', async () => {
    const s = await scripted((_q, res) => reply(res, 200, JSON.stringify({ servers: [], pad: 'x'.repeat(5000) })));
    const c = new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: 'admin:demo', maxResponseBytes: 1000 });
    const e = await c.listServers().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect((e as Error).message).toBe(`GET ${s.endpoint}/servers/detail: the response body is larger than maxResponseBytes (1000 bytes); it was not read`);
    expect(s.seen).toHaveLength(1);
  });

  it('an endless chunked body is cut off at the limit', async () => {
    let written = 0;
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const tick = setInterval(() => {
        if (res.destroyed) return clearInterval(tick);
        res.write('x'.repeat(4096));
        written += 4096;
      }, 1);
      res.on('close', () => clearInterval(tick));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endless.push(server);
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}/v2.1`;
    const c = new NovaClient({ microversion: '2.1', endpoint, token: 'admin:demo', maxResponseBytes: 64 * 1024, retry: { retries: 0 } });
    await expect(c.getLimits()).rejects.toBeInstanceOf(InvalidResponseError);
    expect(written).toBeLessThan(4 * 1024 * 1024);
  });

  it.each([0, 1.5, Number.NaN, -1])('maxResponseBytes %s is refused', (maxResponseBytes) => {
    expect(() => new NovaClient({ microversion: '2.1', endpoint: 'http://127.0.0.1:1/v2.1', token: 't', maxResponseBytes })).toThrow(ValidationError);
  });

  it('the default reads a body of a few MiB', async () => {
    const servers = Array.from({ length: 1000 }, (_, i) => ({ id: `s-${i}`, name: 'x'.repeat(3000) }));
    const s = await scripted((_q, res) => reply(res, 200, { servers }));
    expect(await new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: 'admin:demo' }).listServers()).toHaveLength(1000);
  });
});

describe('Keystone bodies', () => {
  it('an endless token response is cut off (16 MiB) and fails as an InvalidResponseError, like Nova\'s', async () => {
    let written = 0;
    const chunk = 'x'.repeat(1024 * 1024);
    const server = http.createServer((_req, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json', 'X-Subject-Token': 'tok-1234567' });
      const pump = (): void => {
        while (!res.destroyed && written < 64 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
        if (!res.destroyed && written < 64 * 1024 * 1024) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endless.push(server);
    const auth = new KeystoneAuth({ authUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`, username: 'u', password: 'pw-secret', projectName: 'p' });
    const e = await auth.getToken().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidResponseError);
    expect((e as Error).message).toBe(`Keystone POST ${auth.authUrl!}/auth/tokens: the response body is larger than maxResponseBytes (16777216 bytes); it was not read`);
    expect(written).toBeLessThan(40 * 1024 * 1024);
  });
});
