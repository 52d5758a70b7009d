/**
 * The HTTP front of the fake (node:http only): records every request, applies injected faults,
 * checks the token (keystonemiddleware's 401), negotiates the microversion, routes, and writes the
 * reply with Nova's headers (`x-openstack-request-id` / `x-compute-request-id` `req-<uuid>`, `Date`,
 * microversion echo and `Vary`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FaultQueue } from './faults.js';
import { formatMicroversion, negotiateMicroversion, type Microversion } from './microversion.js';
import { pyJson } from './pyjson.js';
import { defaultMessage, fault, type Reply } from './respond.js';
import type { Ctx, Engine } from './routes/context.js';
import { route, serverIdOf } from './routes/index.js';
import { versionEntry, versionList } from './routes/misc.js';
import type { TimerSet } from './timers.js';
import type { FaultSpec, RecordedRequest } from './types.js';

/** What the HTTP front needs from its owner. */
export interface FrontDeps {
  engine: Engine;
  faults: FaultQueue;
  timers: TimerSet;
  requests: RecordedRequest[];
  minVersion: Microversion;
  maxVersion: Microversion;
  validateToken: ((token: string) => boolean) | undefined;
  keystoneUri: string;
}

const UNAUTHORIZED = {
  error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' },
};

/** The node:http server of one fake. */
export class HttpFront {
  readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly deps: FrontDeps) {
    this.server = createServer((req, res) => this.guard(res, () => this.handle(req, res)));
    this.server.keepAliveTimeout = 5000;
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Listen on 127.0.0.1:`port`; resolves with the port. */
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

  /** Stop listening and destroy every socket (hung requests too). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
    });
  }

  /**
   * Run `fn`; an exception (a bug of the fake, or a fault it cannot send) becomes Nova's 500 instead of
   * an uncaught exception that kills the test process and leaves the request hanging.
   */
  private guard(res: ServerResponse, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      if (res.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const body = pyJson(fault(500, `Unexpected API Error. ${(err as Error).message}`).body);
      res.writeHead(500, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': String(Buffer.byteLength(body)) });
      res.end(body);
    }
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    const { path, projectInPath, versioned } = this.splitPath(url.pathname);
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const rec: RecordedRequest = { method, path, query, timeMs: Date.now(), status: 0 };
    const sid = serverIdOf(path);
    if (sid !== undefined) rec.serverId = sid;
    this.deps.requests.push(rec);
    const bodyPromise = readBody(req);

    const spec = this.deps.faults.take(method, path);
    const proceed = (): void => {
      void bodyPromise.then((raw) =>
        this.guard(res, () => {
          if (res.destroyed) return;
          const reply = this.answer(req, method, path, url, raw, projectInPath, versioned);
          this.write(res, rec, reply.reply, reply.extraHeaders);
        }),
      );
    };
    if (!spec) return proceed();
    if (spec.reset) {
      const destroy = (): void => {
        req.socket.destroy();
      };
      if (spec.delayMs && spec.delayMs > 0) this.deps.timers.later(spec.delayMs, destroy);
      else destroy();
      return;
    }
    if (spec.hang) return; // the socket stays open until the client gives up or close()
    const act = spec.status === undefined ? proceed : () => this.guard(res, () => this.writeFault(res, rec, spec));
    if (spec.delayMs && spec.delayMs > 0) this.deps.timers.later(spec.delayMs, act);
    else act();
  }

  /** Strip `/v2.1` and an optional project id segment. */
  private splitPath(pathname: string): { path: string; projectInPath: boolean; versioned: boolean } {
    if (pathname !== '/v2.1' && !pathname.startsWith('/v2.1/')) return { path: pathname, projectInPath: false, versioned: false };
    let rest = pathname.slice('/v2.1'.length) || '/';
    let projectInPath = false;
    const pid = '/' + this.deps.engine.projectId;
    if (rest === pid || rest.startsWith(pid + '/')) {
      rest = rest.slice(pid.length) || '/';
      projectInPath = true;
    }
    return { path: rest, projectInPath, versioned: true };
  }

  private answer(
    req: IncomingMessage,
    method: string,
    path: string,
    url: URL,
    raw: string,
    projectInPath: boolean,
    versioned: boolean,
  ): { reply: Reply; extraHeaders: Record<string, string> } {
    const e = this.deps.engine;
    const min = formatMicroversion(this.deps.minVersion);
    const max = formatMicroversion(this.deps.maxVersion);
    // Version documents: no token needed, not microversioned.
    if (!versioned && (path === '/' || path === '') && method === 'GET') {
      return { reply: { status: 200, body: versionList(e.baseUrl, min, max) }, extraHeaders: {} };
    }
    if (versioned && path === '/' && method === 'GET' && !projectInPath) {
      return { reply: { status: 200, body: { version: versionEntry(e.baseUrl, min, max) } }, extraHeaders: {} };
    }
    const tokenHeader = req.headers['x-auth-token'];
    const token = Array.isArray(tokenHeader) ? tokenHeader[0] : tokenHeader;
    if (this.deps.validateToken && (!token || !this.deps.validateToken(token))) {
      return {
        reply: { status: 401, body: UNAUTHORIZED, headers: { 'Content-Type': 'application/json' } },
        extraHeaders: { 'WWW-Authenticate': `Keystone uri="${this.deps.keystoneUri}"` },
      };
    }
    if (!versioned) return { reply: fault(404, 'The resource could not be found.'), extraHeaders: {} };
    const neg = negotiateMicroversion(req.headers, this.deps.minVersion, this.deps.maxVersion);
    if (!neg.ok) return { reply: fault(neg.status, neg.message), extraHeaders: {} };
    const v = formatMicroversion(neg.version);
    const mvHeaders = {
      'OpenStack-API-Version': `compute ${v}`,
      'X-OpenStack-Nova-API-Version': v,
      Vary: 'OpenStack-API-Version',
    };
    // noauth2-style tokens `user:project`: user `admin` is admin. Any other token is a project member.
    const user = token?.includes(':') ? token.split(':')[0]! : token ? 'member' : 'admin';
    const admin = user === 'admin';
    let body: unknown;
    let bodyMalformed = false;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        bodyMalformed = true;
      }
    }
    const ctx: Ctx = {
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      search: url.searchParams,
      body,
      bodyMalformed,
      version: neg.version,
      admin,
      userId: user,
      projectInPath,
      view: { baseUrl: e.baseUrl, version: neg.version, admin, projectId: e.projectId },
    };
    let reply: Reply;
    try {
      reply = route(e, ctx);
    } catch (err) {
      reply = fault(500, `Unexpected API Error. ${(err as Error).message}`);
    }
    return { reply, extraHeaders: mvHeaders };
  }

  private write(res: ServerResponse, rec: RecordedRequest, reply: Reply, extra: Record<string, string>): void {
    if (res.destroyed || res.headersSent) return;
    const requestId = 'req-' + randomUUID();
    const headers: Record<string, string> = {
      'x-openstack-request-id': requestId,
      'x-compute-request-id': requestId,
      ...extra,
    };
    let payload: string | undefined;
    if (reply.body !== undefined && reply.status !== 204) {
      if (typeof reply.body === 'string') {
        payload = reply.body;
        headers['Content-Type'] = 'text/plain; charset=UTF-8';
      } else {
        payload = pyJson(reply.body);
        headers['Content-Type'] = reply.status >= 400 ? 'application/json; charset=UTF-8' : 'application/json';
      }
    } else {
      headers['Content-Type'] = 'application/json';
    }
    mergeHeaders(headers, reply.headers);
    const bytes = payload === undefined ? undefined : Buffer.from(payload, 'utf8');
    headers['Content-Length'] = String(bytes?.length ?? 0);
    rec.status = reply.status;
    if (reply.serverId !== undefined) rec.serverId = reply.serverId;
    res.writeHead(reply.status, headers);
    res.end(bytes);
  }

  private writeFault(res: ServerResponse, rec: RecordedRequest, spec: FaultSpec): void {
    const status = spec.status!;
    let body = spec.body;
    if (body === undefined && status >= 400) body = fault(status, defaultMessage(status)).body;
    const headers: Record<string, string> = { ...(spec.headers ?? {}) };
    this.write(res, rec, { status, body, headers }, {});
  }
}

/** Copy `extra` into `headers`, replacing existing names case-insensitively. */
function mergeHeaders(headers: Record<string, string>, extra: Record<string, string> | undefined): void {
  if (!extra) return;
  for (const [name, value] of Object.entries(extra)) {
    for (const existing of Object.keys(headers)) {
      if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
    }
    headers[name] = value;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
    req.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
