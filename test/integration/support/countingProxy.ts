/**
 * A counting HTTP proxy in front of the real Nova: what a client under test sends is counted and timed
 * here, the same way for the library, the CLI (a child process) and a baseline written in the test.
 * It forwards every request unchanged (Host header included, so the links Nova writes into its answers
 * point back at the proxy) and records method, path, status and the time the request arrived
 * (`performance.now()` of the test process, the clock every measurement of a test shares).
 */
import { request as httpRequest, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request that went through the proxy. */
export interface ProxiedRequest {
  method: string;
  /** Path and query as sent. */
  path: string;
  /** `performance.now()` when the request arrived at the proxy. */
  atMs: number;
  /** Status Nova answered, or 0 when the upstream request failed. */
  status: number;
  /** `performance.now()` when Nova's answer (its status line and headers) reached the proxy. */
  answeredMs: number | undefined;
}

/** A running proxy. */
export interface CountingProxy {
  /** The endpoint to give the client under test (same path as the upstream endpoint, e.g. `/v2.1`). */
  endpoint: string;
  /** Every request since the last {@link CountingProxy.reset}. */
  readonly requests: readonly ProxiedRequest[];
  /** Forget the requests recorded so far. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Requests grouped as `METHOD shape`, where the shape replaces server ids with `{id}` and drops
 * the query values, e.g. `GET /servers/{id}: 12, GET /servers/detail?changes-since: 4`.
 */
export function requestShapes(requests: readonly ProxiedRequest[]): Record<string, number> {
  const shapes: Record<string, number> = {};
  for (const r of requests) {
    const [path = '', query] = r.path.split('?');
    const keys = query ? `?${[...new URLSearchParams(query).keys()].join('&')}` : '';
    const shape = `${r.method} ${path.replace(/^\/v2\.1/, '').replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '{id}')}${keys}`;
    shapes[shape] = (shapes[shape] ?? 0) + 1;
  }
  return shapes;
}

/** Start a proxy on 127.0.0.1 (a free port) in front of `upstreamEndpoint`. */
export async function startCountingProxy(upstreamEndpoint: string): Promise<CountingProxy> {
  const upstream = new URL(upstreamEndpoint);
  let requests: ProxiedRequest[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const record: ProxiedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', atMs: performance.now(), status: 0, answeredMs: undefined };
    requests.push(record);
    const up = httpRequest(
      { host: upstream.hostname, port: upstream.port || 80, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        record.status = answer.statusCode ?? 0;
        record.answeredMs = performance.now();
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`counting proxy: ${error.message}`);
    });
    req.pipe(up);
  };
  const server: Server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/+$/, '')}`,
    get requests() {
      return requests;
    },
    reset() {
      requests = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
