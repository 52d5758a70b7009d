/**
 * A `POST /servers` never goes on a kept-alive connection that sat idle: a server closing an idle
 * socket just as the client reuses it resets the request with nothing delivered, which for a create
 * is an answer of unknown outcome. Real sockets (node:http and node:https servers on 127.0.0.1,
 * real clock): the server here resets any request that arrives on a socket idle for more than 30 ms
 * (a keep-alive timeout met at the wrong moment, made certain).
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NovaClient, NovaNetworkError } from '../../src/index.js';
import { makeTestCert, type TestCert } from '../tlsCert.js';

const SERVER_ID = '0f0e0d0c-0b0a-4000-8000-000000000001';
const IDLE_RESET_MS = 30;

/** What one test server saw. */
interface Seen {
  /** New connections (TLS: after the handshake). */
  connections: number;
  /** Requests reset because their socket had sat idle. */
  resets: number;
  /** `METHOD path` and the request's `Connection` header, in order. */
  requests: Array<{ what: string; connection: string | undefined }>;
}

const servers: http.Server[] = [];
let made: TestCert;
beforeAll(() => {
  made = makeTestCert('nova-guard-fresh-conn-');
});
afterAll(() => made.remove());
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A tiny Nova on 127.0.0.1 (http, or https with `tls`) that resets a request on a socket idle past {@link IDLE_RESET_MS}. */
async function idleResettingNova(tls?: https.ServerOptions): Promise<{ endpoint: string; seen: Seen }> {
  const seen: Seen = { connections: 0, resets: 0, requests: [] };
  const idleSince = new WeakMap<Socket, number>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const socket = req.socket;
    const since = idleSince.get(socket);
    if (since !== undefined && Date.now() - since > IDLE_RESET_MS) {
      // The server had given this idle socket up as the request arrived: nothing is handled.
      seen.resets++;
      socket.resetAndDestroy();
      return;
    }
    seen.requests.push({ what: `${req.method} ${req.url}`, connection: req.headers.connection });
    req.resume();
    req.on('end', () => {
      const post = req.method === 'POST';
      res.writeHead(post ? 202 : 200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(post ? { server: { id: SERVER_ID, links: [] } } : { servers: [] }));
      res.on('finish', () => idleSince.set(socket, Date.now()));
    });
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  server.on(tls ? 'secureConnection' : 'connection', () => seen.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { endpoint: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as { port: number }).port}/v2.1`, seen };
}

const BODY = { name: 'ci-1', flavorRef: '1', imageRef: 'img', networks: 'none' as const };

describe('POST /servers on a fresh connection', () => {
  it('after an idle gap on a kept-alive connection: the POST gets its 202 on a new socket (no ECONNRESET), sent with Connection: close', async () => {
    const { endpoint, seen } = await idleResettingNova();
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', retry: { retries: 0 } });
    await client.listServers();
    await delay(150);
    const server = await client.createServer(BODY);
    expect(server.id).toBe(SERVER_ID);
    expect(seen.resets).toBe(0);
    expect(seen.connections).toBe(2);
    expect(seen.requests).toEqual([
      { what: 'GET /v2.1/servers/detail', connection: 'keep-alive' },
      { what: 'POST /v2.1/servers', connection: 'close' },
    ]);
  });

  it('a GET after the POST still uses a kept-alive connection', async () => {
    const { endpoint, seen } = await idleResettingNova();
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', retry: { retries: 1, minDelayMs: 1, maxDelayMs: 1 } });
    await client.createServer(BODY);
    await client.listServers();
    await client.listServers();
    // The POST's socket was closed after it; the two GETs shared one.
    expect(seen.connections).toBe(2);
    expect(seen.requests.map((r) => r.connection)).toEqual(['close', 'keep-alive', 'keep-alive']);
  });

  it('many creates each open their own connection: none of them reused', async () => {
    const { endpoint, seen } = await idleResettingNova();
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', retry: { retries: 0 } });
    for (let i = 0; i < 3; i++) {
      await client.createServer(BODY);
      await delay(60);
    }
    expect(seen.resets).toBe(0);
    expect(seen.connections).toBe(3);
  });
});

describe("the fresh connection's TLS is the shared agent's", () => {
  it('caCert: trusted on the POST as on the GET; without it the self-signed Nova is refused on the POST too', async () => {
    const { endpoint, seen } = await idleResettingNova({ key: made.key, cert: made.cert });
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', caCert: made.cert, retry: { retries: 0 } });
    await client.listServers();
    await delay(150);
    expect((await client.createServer(BODY)).id).toBe(SERVER_ID);
    expect(seen.resets).toBe(0);
    expect(seen.connections).toBe(2);
    const refused = await new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', retry: { retries: 0 } }).createServer(BODY).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NovaNetworkError);
    expect((refused as NovaNetworkError).code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
  });

  it('insecure: the POST is not verified either', async () => {
    const { endpoint } = await idleResettingNova({ key: made.key, cert: made.cert });
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', insecure: true, retry: { retries: 0 } });
    expect((await client.createServer(BODY)).id).toBe(SERVER_ID);
  });

  it('a client certificate is presented on the POST (a Nova that requires one takes it; without it the POST fails)', async () => {
    const tls: https.ServerOptions = { key: made.key, cert: made.cert, ca: [made.cert], requestCert: true, rejectUnauthorized: true };
    const { endpoint, seen } = await idleResettingNova(tls);
    const client = new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', caCert: made.cert, clientCert: made.cert, clientKey: made.key, retry: { retries: 0 } });
    expect((await client.createServer(BODY)).id).toBe(SERVER_ID);
    const without = await new NovaClient({ microversion: '2.79', endpoint, token: 'admin:demo', caCert: made.cert, retry: { retries: 0 } }).createServer(BODY).catch((e: unknown) => e);
    expect(without).toBeInstanceOf(NovaNetworkError);
    expect(seen.requests).toHaveLength(1);
  });
});
