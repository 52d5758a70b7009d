/**
 * A tiny scripted HTTP server on loopback for adversarial tests: each request is answered by a
 * handler; every server is closed (and its sockets destroyed) after the test.
 */
import http from 'node:http';
import { afterThisTest } from '../cleanup.js';

/** What a scripted server saw. */
export interface Scripted {
  /** `http://127.0.0.1:PORT/v2.1` */
  endpoint: string;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Every request: method and URL (path with query). */
  seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;
}

/** Start a server answering with `handler(req, res, body)`; closed after the current test. */
export async function scripted(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void): Promise<Scripted> {
  const seen: Scripted['seen'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  afterThisTest(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { endpoint: `http://127.0.0.1:${port}/v2.1`, url: `http://127.0.0.1:${port}`, seen };
}

/** Answer with `status`, a JSON (or raw string) body and headers. */
export function reply(res: http.ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}
