/**
 * The socket front of a fake: a `node:http` (or `node:https`) server on 127.0.0.1 that turns each
 * request into a {@link WireRequest} and writes the {@link WireReply} back.
 *
 * @module
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { WireHandler, WireReply, WireRequest } from './types.js';

/** Key and certificate (PEM) to serve HTTPS. */
export interface TlsPair {
  key: string | Buffer;
  cert: string | Buffer;
}

/** One fake's listening socket. */
export class HttpBinding {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(handler: WireHandler, tls?: TlsPair) {
    const listener = (req: IncomingMessage, res: ServerResponse): void => handler(wireRequest(req), wireReply(req, res));
    this.server = tls ? (createHttpsServer({ key: tls.key, cert: tls.cert }, listener) as unknown as Server) : createHttpServer(listener);
    this.server.keepAliveTimeout = 5000;
    this.server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Listen on 127.0.0.1:`port` (0: any free port); resolves with the port. Rejects with the listen error (e.g. `EADDRINUSE`). */
  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        const addr = this.server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  /** Stop listening and destroy every socket (hung requests too): their clients see `ECONNRESET`. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
    });
  }
}

function wireRequest(req: IncomingMessage): WireRequest {
  return {
    method: (req.method ?? 'GET').toUpperCase(),
    url: req.url ?? '/',
    headers: req.headers,
    body: new Promise((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', () => resolve(''));
      req.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    }),
  };
}

function wireReply(req: IncomingMessage, res: ServerResponse): WireReply {
  let done = false;
  return {
    get gone() {
      return done || res.destroyed || res.headersSent;
    },
    send(status, headers, body) {
      if (done || res.destroyed || res.headersSent) return;
      done = true;
      res.writeHead(status, headers);
      res.end(body);
    },
    reset() {
      if (done) return;
      done = true;
      req.socket.destroy();
    },
  };
}
