/**
 * The request pipeline of one fake, shared by its socket front and its in-process axios adapter:
 * records every request, applies injected faults (status, delay, hang, reset), checks the token
 * (keystonemiddleware's 401), negotiates the microversion, routes, and writes the reply with Nova's
 * headers (`x-openstack-request-id` / `x-compute-request-id` `req-<uuid>`, `Date`, microversion
 * echo and `Vary`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { FaultQueue } from './faults.js';
import { formatMicroversion, negotiateMicroversion, type Microversion } from './microversion.js';
import { pyJson } from './pyjson.js';
import { defaultMessage, fault, type Reply } from './respond.js';
import type { Ctx, Engine } from './routes/context.js';
import { route, serverIdOf } from './routes/index.js';
import { versionEntry, versionList } from './routes/misc.js';
import type { TimerSet } from './timers.js';
import type { FaultSpec, RecordedRequest } from './types.js';
import type { WireReply, WireRequest } from '../wire/types.js';

/** What the pipeline needs from its owner. */
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

/** The request pipeline of one fake: {@link NovaFront.handle} is the `WireHandler` of both fronts. */
export class NovaFront {
  constructor(private readonly deps: FrontDeps) {}

  /**
   * Run `fn`; an exception (a bug of the fake, or a fault it cannot send) becomes Nova's 500 instead of
   * an uncaught exception that kills the test process and leaves the request hanging.
   */
  private guard(reply: WireReply, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      if (reply.gone) return;
      const body = Buffer.from(pyJson(fault(500, `Unexpected API Error. ${(err as Error).message}`).body), 'utf8');
      reply.send(500, { 'Content-Type': 'application/json; charset=UTF-8', 'Content-Length': String(body.length), Date: new Date().toUTCString() }, body);
    }
  }

  /** Serve one request (the `WireHandler`). */
  readonly handle = (req: WireRequest, reply: WireReply): void => {
    this.guard(reply, () => this.dispatch(req, reply));
  };

  private dispatch(req: WireRequest, reply: WireReply): void {
    const url = new URL(req.url, 'http://127.0.0.1');
    const method = req.method;
    const { path, projectInPath, versioned } = this.splitPath(url.pathname);
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const rec: RecordedRequest = { method, path, query, timeMs: Date.now(), status: 0 };
    const sid = serverIdOf(path);
    if (sid !== undefined) rec.serverId = sid;
    this.deps.requests.push(rec);

    const spec = this.deps.faults.take(method, path);
    const proceed = (): void => {
      void req.body.then((raw) =>
        this.guard(reply, () => {
          if (reply.gone) return;
          const answer = this.answer(req, method, path, url, raw, projectInPath, versioned);
          this.write(reply, rec, answer.reply, answer.extraHeaders);
        }),
      );
    };
    if (!spec) return proceed();
    if (spec.passThroughAfterMs !== undefined) {
      // The request got through to Nova after all: handled late, its answer dropped (nobody waits for it).
      const late = spec.passThroughAfterMs;
      this.deps.timers.later(late, () => {
        void req.body.then((raw) => {
          try {
            this.answer(req, method, path, url, raw, projectInPath, versioned);
          } catch {
            // Nobody hears this answer, nor its failure.
          }
        });
      });
    }
    if (spec.reset) {
      if (spec.delayMs && spec.delayMs > 0) this.deps.timers.later(spec.delayMs, () => reply.reset());
      else reply.reset();
      return;
    }
    if (spec.hang) return; // no answer until the client gives up or close()
    const act = spec.status === undefined ? proceed : () => this.guard(reply, () => this.writeFault(reply, rec, spec));
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
    req: WireRequest,
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

  private write(out: WireReply, rec: RecordedRequest, reply: Reply, extra: Record<string, string>): void {
    if (out.gone) return;
    const requestId = 'req-' + randomUUID();
    const headers: Record<string, string> = {
      'x-openstack-request-id': requestId,
      'x-compute-request-id': requestId,
      Date: new Date().toUTCString(),
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
    out.send(reply.status, headers, bytes);
  }

  private writeFault(out: WireReply, rec: RecordedRequest, spec: FaultSpec): void {
    const status = spec.status!;
    let body = spec.body;
    if (body === undefined && status >= 400) body = fault(status, defaultMessage(status)).body;
    const headers: Record<string, string> = { ...(spec.headers ?? {}) };
    this.write(out, rec, { status, body, headers }, {});
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
