/**
 * `FakeKeystone`: a small Keystone v3 identity service on loopback for tests and demos. It issues
 * tokens (`POST /v3/auth/tokens`: password, application credential, token) with a settable lifetime
 * and a catalog that points at a compute URL (a FakeNova), rejects bad credentials with Keystone's
 * 401 body, and can expire tokens early. Give FakeNova `validateToken: (t) => keystone.isValid(t)`
 * to make it require these tokens.
 *
 * Faithful to (see `../shared/reference/nova-facts.md` §7 and `../shared/realnova/observed/keystone-smoke.out`):
 * - 201 with the token in `X-Subject-Token`; body `{"token": {methods, user, audit_ids, expires_at,
 *   issued_at, project, is_domain, roles, catalog}}`, times ISO 8601 with microseconds and `Z`
 *   (Keystone API reference, "Password authentication with scoped authorization");
 * - application credential tokens carry `application_credential: {id, name, restricted}` and are
 *   scoped to the credential's project; a scope in the request is refused with 401 "Error
 *   authenticating with application credential: Application credentials cannot request a scope."
 *   (`keystone/auth/core.py`);
 * - a token exchanged with the `token` method keeps the original's `expires_at`;
 * - 401 body `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made
 *   requires authentication."}}` with `WWW-Authenticate: Keystone uri="..."`
 *   (`keystone/server/flask/application.py`).
 *
 * Not modelled: domains beyond their names, roles beyond their names, trusts, receipts (MFA),
 * password expiry, `GET /v3/auth/tokens` validation.
 *
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { ValidationError } from '../errors/index.js';

/** A user of the fake. */
export interface FakeKeystoneUser {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  password: string;
  /** Domain id. Default `default`. */
  domainId?: string;
  /** Project ids or names the user may scope to (with role `member`). Default: the default project. */
  projects?: string[];
  /** Project used when a password request has no scope. Default: the first of `projects`. */
  defaultProject?: string;
}

/** A project of the fake. */
export interface FakeKeystoneProject {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  /** Domain id. Default `default`. */
  domainId?: string;
}

/** An application credential of the fake: scoped to `project` of `user`. */
export interface FakeKeystoneAppCred {
  /** Default: a random hex id. */
  id?: string;
  name: string;
  secret: string;
  /** Owning user's name or id. */
  user: string;
  /** Project name or id. Default: the user's default project. */
  project?: string;
}

/** One endpoint of the fake's compute service. */
export interface FakeKeystoneEndpoint {
  interface: 'public' | 'internal' | 'admin';
  /** Region id. Default `RegionOne`. */
  region?: string;
  url: string;
}

/** Options of {@link FakeKeystone.start}. */
export interface FakeKeystoneOptions {
  /** Compute URL for the catalog's `public` and `internal` endpoints in `RegionOne` (e.g. a FakeNova's endpoint). */
  computeUrl?: string;
  /** The compute endpoints, instead of `computeUrl`. */
  computeEndpoints?: FakeKeystoneEndpoint[];
  /** Token lifetime in ms. Default 3600000 (Keystone's `[token] expiration = 3600`). */
  tokenLifetimeMs?: number;
  /** Users. Default one user `ci-bot` / `ci-bot-password` in project `ci`. */
  users?: FakeKeystoneUser[];
  /** Projects. Default one project `ci`. */
  projects?: FakeKeystoneProject[];
  /** Application credentials. Default `ci-appcred` / `ci-appcred-secret` of `ci-bot`. */
  applicationCredentials?: FakeKeystoneAppCred[];
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number;
  /** Serve HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

/** One entry of {@link FakeKeystone.requests}: never a body, never a secret. */
export interface FakeKeystoneRequest {
  method: string;
  path: string;
  status: number;
  /** Auth methods of a token request, e.g. `['password']`. */
  authMethods?: string[];
  /** Epoch ms. */
  at: number;
}

interface IssuedToken {
  userId: string;
  projectId: string;
  methods: string[];
  appCred?: { id: string; name: string };
  issuedAtMs: number;
  expiresAtMs: number;
  revoked: boolean;
}

const UNAUTHORIZED = 'The request you have made requires authentication.';

function hexId(): string {
  return randomUUID().replace(/-/g, '');
}

/** A Keystone timestamp with microseconds: `2026-11-30T14:24:42.123000Z`. */
function keystoneTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

class AuthFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/**
 * A fake Keystone v3 on a real `node:http` server on 127.0.0.1. Start with {@link FakeKeystone.start},
 * stop with {@link FakeKeystone.stop}.
 *
 * @example
 * ```ts
 * const nova = await FakeNova.start({ validateToken: (t) => keystone.isValid(t) });
 * const keystone = await FakeKeystone.start({ computeUrl: nova.endpoint, tokenLifetimeMs: 200 });
 * ```
 */
export class FakeKeystone {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** `url` + `/v3`, the `auth_url` to configure. */
  readonly authUrl: string;
  /** Lifetime of tokens issued from now on, in ms. Settable. */
  tokenLifetimeMs: number;
  /** Every request served, oldest first. */
  readonly requests: FakeKeystoneRequest[] = [];
  /** Users by id. */
  readonly users = new Map<string, Required<Omit<FakeKeystoneUser, 'defaultProject'>> & { defaultProject: string | undefined }>();
  /** Projects by id. */
  readonly projects = new Map<string, Required<FakeKeystoneProject>>();
  /** Application credentials by id. */
  readonly applicationCredentials = new Map<string, Required<FakeKeystoneAppCred>>();
  /** The catalog's compute endpoints. Settable. */
  computeEndpoints: FakeKeystoneEndpoint[];

  readonly #server: http.Server;
  readonly #tokens = new Map<string, IssuedToken>();
  #failures: number[] = [];

  private constructor(server: http.Server, url: string, options: FakeKeystoneOptions) {
    this.#server = server;
    this.url = url;
    this.authUrl = `${url}/v3`;
    this.tokenLifetimeMs = options.tokenLifetimeMs ?? 3_600_000;
    this.computeEndpoints =
      options.computeEndpoints ??
      (options.computeUrl
        ? [
            { interface: 'public', region: 'RegionOne', url: options.computeUrl },
            { interface: 'internal', region: 'RegionOne', url: options.computeUrl },
          ]
        : []);
    for (const p of options.projects ?? [{ name: 'ci' }]) this.addProject(p);
    for (const u of options.users ?? [{ name: 'ci-bot', password: 'ci-bot-password', projects: ['ci'] }]) this.addUser(u);
    for (const a of options.applicationCredentials ?? (options.users ? [] : [{ name: 'ci-appcred', secret: 'ci-appcred-secret', user: 'ci-bot' }])) {
      this.addApplicationCredential(a);
    }
  }

  /**
   * Start a fake Keystone on 127.0.0.1 (HTTPS when `options.tls` is given).
   * @throws {@link ValidationError} for a `tokenLifetimeMs` that is not a finite number >= 0 (NaN made
   * every token request a 500) or a port outside 0-65535.
   */
  static async start(options: FakeKeystoneOptions = {}): Promise<FakeKeystone> {
    const life = options.tokenLifetimeMs;
    if (life !== undefined && !(typeof life === 'number' && Number.isFinite(life) && life >= 0)) {
      throw new ValidationError(`FakeKeystone option tokenLifetimeMs must be a finite number >= 0 (got ${String(life)})`);
    }
    const listenPort = options.port ?? 0;
    if (!Number.isInteger(listenPort) || listenPort < 0 || listenPort > 65535) {
      throw new ValidationError(`FakeKeystone option port must be an integer from 0 to 65535 (got ${String(listenPort)})`);
    }
    const ref: { self?: FakeKeystone } = {};
    const handler: http.RequestListener = (req, res) => {
      ref.self!.#handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 500, title: 'Internal Server Error', message: String(e) } }));
      });
    };
    const server: http.Server = options.tls
      ? (https.createServer({ key: options.tls.key, cert: options.tls.cert }, handler) as unknown as http.Server)
      : http.createServer(handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    ref.self = new FakeKeystone(server, `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`, options);
    return ref.self;
  }

  /** Stop the server and close open connections. */
  async stop(): Promise<void> {
    if (!this.#server.listening) return;
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Same as {@link FakeKeystone.stop}, named like `FakeNova.close()`. Idempotent. */
  close(): Promise<void> {
    return this.stop();
  }

  /** Add a project; returns its id. */
  addProject(p: FakeKeystoneProject): string {
    const id = p.id ?? hexId();
    this.projects.set(id, { id, name: p.name, domainId: p.domainId ?? 'default' });
    return id;
  }

  /** Add a user; `projects` may name projects by id or name. Returns the user id. */
  addUser(u: FakeKeystoneUser): string {
    const id = u.id ?? hexId();
    const projects = (u.projects ?? [...this.projects.values()].slice(0, 1).map((p) => p.id)).map((p) => this.#projectId(p));
    const defaultProject = u.defaultProject ? this.#projectId(u.defaultProject) : projects[0];
    this.users.set(id, { id, name: u.name, password: u.password, domainId: u.domainId ?? 'default', projects, defaultProject });
    return id;
  }

  /** Add an application credential; returns its id. */
  addApplicationCredential(a: FakeKeystoneAppCred): string {
    const id = a.id ?? hexId();
    const user = [...this.users.values()].find((u) => u.id === a.user || u.name === a.user);
    if (!user) throw new Error(`FakeKeystone: unknown user ${a.user} for application credential ${a.name}`);
    const project = a.project ? this.#projectId(a.project) : user.defaultProject;
    if (!project) throw new Error(`FakeKeystone: application credential ${a.name} needs a project`);
    this.applicationCredentials.set(id, { id, name: a.name, secret: a.secret, user: user.id, project });
    return id;
  }

  /** The id of the project named `nameOrId` (or `nameOrId` itself if it is an id). */
  projectId(nameOrId: string): string {
    return this.#projectId(nameOrId);
  }

  /** The id of the user named `nameOrId`. */
  userId(nameOrId: string): string {
    const u = [...this.users.values()].find((x) => x.id === nameOrId || x.name === nameOrId);
    if (!u) throw new Error(`FakeKeystone: unknown user ${nameOrId}`);
    return u.id;
  }

  /** The id of the application credential named `nameOrId`. */
  applicationCredentialId(nameOrId: string): string {
    const a = [...this.applicationCredentials.values()].find((x) => x.id === nameOrId || x.name === nameOrId);
    if (!a) throw new Error(`FakeKeystone: unknown application credential ${nameOrId}`);
    return a.id;
  }

  /** True when `token` was issued here, is not revoked or expired early, and its `expires_at` has not passed. */
  isValid(token: string | undefined): boolean {
    if (!token) return false;
    const t = this.#tokens.get(token);
    return t !== undefined && !t.revoked && Date.now() < t.expiresAtMs;
  }

  /** The project id a valid token is scoped to (for a FakeNova that checks projects), else undefined. */
  projectOf(token: string): string | undefined {
    return this.isValid(token) ? this.#tokens.get(token)?.projectId : undefined;
  }

  /** Make `token` invalid now (as if it expired or was revoked). Returns false if unknown. */
  expireToken(token: string): boolean {
    const t = this.#tokens.get(token);
    if (!t) return false;
    t.revoked = true;
    return true;
  }

  /** Make every token issued so far invalid. Returns how many were valid. */
  expireAllTokens(): number {
    let n = 0;
    for (const [token, t] of this.#tokens) {
      if (this.isValid(token)) n++;
      t.revoked = true;
    }
    return n;
  }

  /** Every token issued so far (for secret sweeps in tests). */
  issuedTokens(): string[] {
    return [...this.#tokens.keys()];
  }

  /** Number of `POST /v3/auth/tokens` requests served (any outcome). */
  get tokenRequests(): number {
    return this.requests.filter((r) => r.method === 'POST' && r.path === '/v3/auth/tokens').length;
  }

  /** Answer the next `count` token requests with `status` (e.g. 503) instead of a token. */
  failNextTokenRequests(count: number, status = 503): void {
    for (let i = 0; i < count; i++) this.#failures.push(status);
  }

  #projectId(nameOrId: string): string {
    if (this.projects.has(nameOrId)) return nameOrId;
    const p = [...this.projects.values()].find((x) => x.name === nameOrId);
    if (!p) throw new Error(`FakeKeystone: unknown project ${nameOrId}`);
    return p.id;
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
    const entry: FakeKeystoneRequest = { method: req.method ?? 'GET', path, status: 0, at: Date.now() };
    this.requests.push(entry);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      entry.status = status;
      const text = body === undefined ? '' : JSON.stringify(body);
      res.writeHead(status, {
        ...(text ? { 'Content-Type': 'application/json' } : {}),
        'Content-Length': String(Buffer.byteLength(text)),
        'x-openstack-request-id': `req-${randomUUID()}`,
        Vary: 'X-Auth-Token',
        ...headers,
      });
      res.end(text);
    };
    const error = (status: number, title: string, message: string): void =>
      send(status, { error: { code: status, title, message } }, status === 401 ? { 'WWW-Authenticate': `Keystone uri="${this.url}"` } : {});

    if (req.method === 'GET' && (path === '/v3' || path === '/')) {
      send(200, { version: { id: 'v3.14', status: 'stable', links: [{ rel: 'self', href: `${this.authUrl}/` }] } });
      return;
    }
    if (path !== '/v3/auth/tokens') return error(404, 'Not Found', 'The resource could not be found.');
    if (req.method === 'DELETE') {
      const subject = req.headers['x-subject-token'];
      const t = typeof subject === 'string' ? this.#tokens.get(subject) : undefined;
      if (!this.isValid(String(req.headers['x-auth-token'] ?? ''))) return error(401, 'Unauthorized', UNAUTHORIZED);
      if (!t) return error(404, 'Not Found', 'Failed to validate token');
      t.revoked = true;
      return send(204, undefined);
    }
    if (req.method !== 'POST') return error(405, 'Method Not Allowed', 'The method is not allowed for the requested URL.');
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return error(400, 'Bad Request', 'Expecting to find application/json in request body.');
    }
    const auth = obj(obj(body)?.['auth']);
    const identity = obj(auth?.['identity']);
    const methods = Array.isArray(identity?.['methods']) ? (identity['methods'] as unknown[]).filter((m): m is string => typeof m === 'string') : [];
    entry.authMethods = methods;
    if (!auth || !identity || methods.length === 0) return error(400, 'Bad Request', "'identity' is a required property");
    const failure = this.#failures.shift();
    if (failure !== undefined) return error(failure, failure === 503 ? 'Service Unavailable' : 'Error', 'The service is temporarily unavailable.');
    try {
      const issued = this.#authenticate(methods, identity, obj(auth['scope']));
      const token = `gAAAAAB${randomBytes(132).toString('base64url')}`;
      this.#tokens.set(token, issued);
      const query = new URL(req.url ?? '/', this.url).searchParams;
      send(201, this.#tokenBody(issued, !query.has('nocatalog')), { 'X-Subject-Token': token });
    } catch (e) {
      if (e instanceof AuthFailure) {
        return e.status === 401 ? error(401, 'Unauthorized', e.message) : error(e.status, 'Bad Request', e.message);
      }
      throw e;
    }
  }

  #findUser(u: Record<string, unknown> | undefined) {
    if (!u) return undefined;
    if (typeof u['id'] === 'string') return this.users.get(u['id']);
    const domain = obj(u['domain']);
    return [...this.users.values()].find(
      (x) =>
        x.name === u['name'] &&
        (domain === undefined ||
          x.domainId === domain['id'] ||
          (typeof domain['name'] === 'string' && domain['name'].toLowerCase() === x.domainId.toLowerCase())),
    );
  }

  #scopeProject(scope: Record<string, unknown> | undefined): string | null | undefined {
    const p = obj(scope?.['project']);
    if (!scope) return null;
    if (!p) throw new AuthFailure(401, UNAUTHORIZED);
    if (typeof p['id'] === 'string') return this.projects.has(p['id']) ? p['id'] : undefined;
    const domain = obj(p['domain']);
    if (!domain) throw new AuthFailure(400, "'domain' is a required property for a project given by name");
    const found = [...this.projects.values()].find(
      (x) =>
        x.name === p['name'] &&
        (x.domainId === domain['id'] || (typeof domain['name'] === 'string' && domain['name'].toLowerCase() === x.domainId.toLowerCase())),
    );
    return found?.id;
  }

  #authenticate(methods: string[], identity: Record<string, unknown>, scope: Record<string, unknown> | undefined): IssuedToken {
    const now = Date.now();
    const method = methods[0]!;
    if (method === 'application_credential') {
      const ac = obj(identity['application_credential']);
      const found =
        typeof ac?.['id'] === 'string'
          ? this.applicationCredentials.get(ac['id'])
          : [...this.applicationCredentials.values()].find((a) => a.name === ac?.['name'] && a.user === this.#findUser(obj(ac?.['user']))?.id);
      if (!found || found.secret !== ac?.['secret']) throw new AuthFailure(401, UNAUTHORIZED);
      if (scope) throw new AuthFailure(401, 'Error authenticating with application credential: Application credentials cannot request a scope.');
      return {
        userId: found.user,
        projectId: found.project,
        methods: ['application_credential'],
        appCred: { id: found.id, name: found.name },
        issuedAtMs: now,
        expiresAtMs: now + this.tokenLifetimeMs,
        revoked: false,
      };
    }
    if (method === 'password') {
      const user = this.#findUser(obj(obj(obj(identity['password'])?.['user'])));
      const given = obj(obj(identity['password'])?.['user'])?.['password'];
      if (!user || user.password !== given) throw new AuthFailure(401, UNAUTHORIZED);
      const scoped = this.#scopeProject(scope);
      const projectId = scoped === null ? user.defaultProject : scoped;
      if (!projectId || !user.projects.includes(projectId)) throw new AuthFailure(401, UNAUTHORIZED);
      return { userId: user.id, projectId, methods: ['password'], issuedAtMs: now, expiresAtMs: now + this.tokenLifetimeMs, revoked: false };
    }
    if (method === 'token') {
      const given = obj(identity['token'])?.['id'];
      const original = typeof given === 'string' && this.isValid(given) ? this.#tokens.get(given) : undefined;
      if (!original) throw new AuthFailure(401, UNAUTHORIZED);
      const scoped = this.#scopeProject(scope);
      const projectId = scoped === null ? original.projectId : scoped;
      const user = this.users.get(original.userId);
      if (!projectId || !user?.projects.includes(projectId) || (original.appCred && projectId !== original.projectId)) {
        throw new AuthFailure(401, UNAUTHORIZED);
      }
      return { ...original, projectId, methods: ['token', ...original.methods.filter((m) => m !== 'token')], issuedAtMs: now, revoked: false };
    }
    throw new AuthFailure(401, UNAUTHORIZED);
  }

  #tokenBody(t: IssuedToken, withCatalog: boolean): unknown {
    const user = this.users.get(t.userId)!;
    const project = this.projects.get(t.projectId)!;
    const token: Record<string, unknown> = {
      methods: t.methods,
      user: { domain: { id: user.domainId, name: user.domainId === 'default' ? 'Default' : user.domainId }, id: user.id, name: user.name, password_expires_at: null },
      audit_ids: [randomBytes(16).toString('base64url').slice(0, 22)],
      expires_at: keystoneTime(t.expiresAtMs),
      issued_at: keystoneTime(t.issuedAtMs),
      project: {
        domain: { id: project.domainId, name: project.domainId === 'default' ? 'Default' : project.domainId },
        id: project.id,
        name: project.name,
      },
      is_domain: false,
      roles: [
        { id: 'reader-role-id', name: 'reader' },
        { id: 'member-role-id', name: 'member' },
      ],
    };
    if (t.appCred) token['application_credential'] = { id: t.appCred.id, name: t.appCred.name, restricted: true };
    if (withCatalog) {
      token['catalog'] = [
        {
          id: 'compute-service-id',
          type: 'compute',
          name: 'nova',
          endpoints: this.computeEndpoints.map((e, i) => ({
            id: `compute-endpoint-${i}`,
            interface: e.interface,
            region_id: e.region ?? 'RegionOne',
            region: e.region ?? 'RegionOne',
            url: e.url,
          })),
        },
        {
          id: 'identity-service-id',
          type: 'identity',
          name: 'keystone',
          endpoints: (['public', 'internal', 'admin'] as const).map((iface) => ({
            id: `identity-${iface}`,
            interface: iface,
            region_id: 'RegionOne',
            region: 'RegionOne',
            url: `${this.authUrl}/`,
          })),
        },
      ];
    }
    return { token };
  }
}
