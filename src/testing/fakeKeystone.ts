/**
 * `FakeKeystone`: a small Keystone v3 identity service for tests and demos. It issues tokens
 * (`POST /v3/auth/tokens`: password, application credential, token) with a settable lifetime and a
 * catalog that points at a compute URL (a FakeNova), rejects bad credentials with Keystone's 401
 * body, and can expire tokens early. Give FakeNova `validateToken: (t) => keystone.isValid(t)` to
 * make it require these tokens. Served on a socket and, without one, through
 * {@link FakeKeystone.adapter}.
 *
 * Faithful to Keystone 22 (Zed) as a real one answered:
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
import { randomUUID } from 'node:crypto';
import type { AxiosAdapter } from 'axios';
import { checkOptions } from '../core/options.js';
import { APP_CRED_SPEC, FAKE_KEYSTONE_SPEC, PROJECT_SPEC, USER_SPEC } from './fakeKeystone/options.js';
import { AuthFailure, hexId, obj, TokenIssuer, UNAUTHORIZED, type StoredUser } from './fakeKeystone/tokens.js';
import type { FakeKeystoneAppCred, FakeKeystoneEndpoint, FakeKeystoneOptions, FakeKeystoneProject, FakeKeystoneRequest, FakeKeystoneUser } from './fakeKeystone/types.js';
import { AdapterBinding } from './wire/adapterBinding.js';
import { HttpBinding } from './wire/httpBinding.js';
import type { WireReply, WireRequest } from './wire/types.js';

export type * from './fakeKeystone/types.js';

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
  readonly users = new Map<string, StoredUser>();
  /** Projects by id. */
  readonly projects = new Map<string, Required<FakeKeystoneProject>>();
  /** Application credentials by id. */
  readonly applicationCredentials = new Map<string, Required<FakeKeystoneAppCred>>();
  /** The catalog's compute endpoints. Settable. */
  computeEndpoints: FakeKeystoneEndpoint[];

  readonly #http: HttpBinding;
  readonly #inProcess: AdapterBinding;
  readonly #issuer = new TokenIssuer(this);
  #failures: number[] = [];
  #stopping: Promise<void> | undefined;

  private constructor(http: HttpBinding, url: string, options: FakeKeystoneOptions, serve: (self: FakeKeystone) => void) {
    this.#http = http;
    this.#inProcess = new AdapterBinding(url, (req, reply) => this.#serve(req, reply));
    serve(this);
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
   * @throws `ValidationError` (nova-guard) for an unknown option name (in `options` or a nested user,
   * project, credential, endpoint or `tls`), a `tokenLifetimeMs` that is not a finite number >= 0 (NaN
   * made every token request a 500) or a port outside 0-65535.
   */
  static async start(options: FakeKeystoneOptions = {}): Promise<FakeKeystone> {
    checkOptions('FakeKeystone options', options, FAKE_KEYSTONE_SPEC);
    const listenPort = options.port ?? 0;
    const ref: { self?: FakeKeystone } = {};
    const http = new HttpBinding((req, reply) => ref.self!.#serve(req, reply), options.tls);
    const port = await http.listen(listenPort);
    return new FakeKeystone(http, `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`, options, (self) => (ref.self = self));
  }

  /**
   * An axios adapter that serves this fake in process: the same answers, headers and recorded
   * requests as {@link FakeKeystone.url} without a socket, e.g.
   * `new KeystoneAuth({ authUrl: keystone.authUrl, ..., adapter: keystone.adapter })`. It settles as
   * axios's `node:http` adapter does (see `FakeNova.adapter`); after {@link FakeKeystone.stop} every
   * request is refused (`ECONNREFUSED`).
   */
  get adapter(): AxiosAdapter {
    return this.#inProcess.adapter;
  }

  /** Stop the server, close open connections and reset open in-process requests. Idempotent. */
  stop(): Promise<void> {
    if (!this.#stopping) {
      this.#inProcess.close();
      this.#stopping = this.#http.close();
    }
    return this.#stopping;
  }

  /** Same as {@link FakeKeystone.stop}, named like `FakeNova.close()`. Idempotent. */
  close(): Promise<void> {
    return this.stop();
  }

  /** Add a project; returns its id. */
  addProject(p: FakeKeystoneProject): string {
    checkOptions('FakeKeystone.addProject', p, PROJECT_SPEC);
    const id = p.id ?? hexId();
    this.projects.set(id, { id, name: p.name, domainId: p.domainId ?? 'default' });
    return id;
  }

  /** Add a user; `projects` may name projects by id or name. Returns the user id. */
  addUser(u: FakeKeystoneUser): string {
    checkOptions('FakeKeystone.addUser', u, USER_SPEC);
    const id = u.id ?? hexId();
    const projects = (u.projects ?? [...this.projects.values()].slice(0, 1).map((p) => p.id)).map((p) => this.#projectId(p));
    const defaultProject = u.defaultProject ? this.#projectId(u.defaultProject) : projects[0];
    this.users.set(id, { id, name: u.name, password: u.password, domainId: u.domainId ?? 'default', projects, defaultProject });
    return id;
  }

  /** Add an application credential; returns its id. */
  addApplicationCredential(a: FakeKeystoneAppCred): string {
    checkOptions('FakeKeystone.addApplicationCredential', a, APP_CRED_SPEC);
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
    return this.#issuer.isValid(token);
  }

  /** The project id a valid token is scoped to (for a FakeNova that checks projects), else undefined. */
  projectOf(token: string): string | undefined {
    return this.isValid(token) ? this.#issuer.tokens.get(token)?.projectId : undefined;
  }

  /** Make `token` invalid now (as if it expired or was revoked). Returns false if unknown. */
  expireToken(token: string): boolean {
    const t = this.#issuer.tokens.get(token);
    if (!t) return false;
    t.revoked = true;
    return true;
  }

  /** Make every token issued so far invalid. Returns how many were valid. */
  expireAllTokens(): number {
    let n = 0;
    for (const [token, t] of this.#issuer.tokens) {
      if (this.isValid(token)) n++;
      t.revoked = true;
    }
    return n;
  }

  /** Every token issued so far (for secret sweeps in tests). */
  issuedTokens(): string[] {
    return [...this.#issuer.tokens.keys()];
  }

  /** Number of `POST /v3/auth/tokens` requests served (any outcome). */
  get tokenRequests(): number {
    return this.requests.filter((r) => r.method === 'POST' && r.path === '/v3/auth/tokens').length;
  }

  /** Answer the next `count` token requests with `status` (e.g. 503) instead of a token. */
  failNextTokenRequests(count: number, status = 503): void {
    for (let i = 0; i < count; i++) this.#failures.push(status);
  }

  #serve(req: WireRequest, reply: WireReply): void {
    this.#handle(req, reply).catch((e: unknown) => {
      const text = JSON.stringify({ error: { code: 500, title: 'Internal Server Error', message: String(e) } });
      reply.send(500, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) }, Buffer.from(text));
    });
  }

  #projectId(nameOrId: string): string {
    if (this.projects.has(nameOrId)) return nameOrId;
    const p = [...this.projects.values()].find((x) => x.name === nameOrId);
    if (!p) throw new Error(`FakeKeystone: unknown project ${nameOrId}`);
    return p.id;
  }

  async #handle(req: WireRequest, reply: WireReply): Promise<void> {
    const path = req.url.split('?')[0]!.replace(/\/+$/, '') || '/';
    const entry: FakeKeystoneRequest = { method: req.method, path, status: 0, at: Date.now() };
    this.requests.push(entry);
    const raw = await req.body;
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      entry.status = status;
      const text = body === undefined ? '' : JSON.stringify(body);
      reply.send(
        status,
        {
          ...(text ? { 'Content-Type': 'application/json' } : {}),
          'Content-Length': String(Buffer.byteLength(text)),
          'x-openstack-request-id': `req-${randomUUID()}`,
          Vary: 'X-Auth-Token',
          ...headers,
        },
        Buffer.from(text, 'utf8'),
      );
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
      const t = typeof subject === 'string' ? this.#issuer.tokens.get(subject) : undefined;
      if (!this.isValid(String(req.headers['x-auth-token'] ?? ''))) return error(401, 'Unauthorized', UNAUTHORIZED);
      if (!t) return error(404, 'Not Found', 'Failed to validate token');
      t.revoked = true;
      return send(204, undefined);
    }
    if (req.method !== 'POST') return error(405, 'Method Not Allowed', 'The method is not allowed for the requested URL.');
    let body: unknown;
    try {
      body = JSON.parse(raw);
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
      const query = new URL(req.url, this.url).searchParams;
      const { token, body: tokenBody } = this.#issuer.issue(methods, identity, obj(auth['scope']), !query.has('nocatalog'));
      send(201, tokenBody, { 'X-Subject-Token': token });
    } catch (e) {
      if (e instanceof AuthFailure) {
        return e.status === 401 ? error(401, 'Unauthorized', e.message) : error(e.status, 'Bad Request', e.message);
      }
      throw e;
    }
  }
}
