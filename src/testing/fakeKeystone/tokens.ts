/**
 * Tokens of {@link FakeKeystone}: authenticating a `POST /v3/auth/tokens` request (password,
 * application credential, token) against the fake's users, projects and application credentials,
 * and Keystone's token body (Keystone API reference, "Password authentication with scoped
 * authorization"; `keystone/auth/core.py` for the application-credential scope refusal).
 *
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { FakeKeystoneAppCred, FakeKeystoneEndpoint, FakeKeystoneProject, FakeKeystoneUser } from './types.js';

/** A user as the fake keeps it. */
export type StoredUser = Required<Omit<FakeKeystoneUser, 'defaultProject'>> & { defaultProject: string | undefined };

/** What the issuer reads from its fake. */
export interface Directory {
  readonly users: Map<string, StoredUser>;
  readonly projects: Map<string, Required<FakeKeystoneProject>>;
  readonly applicationCredentials: Map<string, Required<FakeKeystoneAppCred>>;
  readonly tokenLifetimeMs: number;
  readonly computeEndpoints: FakeKeystoneEndpoint[];
  readonly authUrl: string;
  /** The id of the project named `nameOrId`; throws for an unknown one. */
  projectId(nameOrId: string): string;
}

/** One issued token. */
export interface IssuedToken {
  userId: string;
  projectId: string;
  methods: string[];
  appCred?: { id: string; name: string };
  issuedAtMs: number;
  expiresAtMs: number;
  revoked: boolean;
}

/** keystonemiddleware's and Keystone's 401 message. */
export const UNAUTHORIZED = 'The request you have made requires authentication.';

/** A random 32-hex-digit id, as Keystone's. */
export function hexId(): string {
  return randomUUID().replace(/-/g, '');
}

/** A Keystone timestamp with microseconds: `2026-11-30T14:24:42.123000Z`. */
function keystoneTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** An authentication refused with `status` (401, or 400 for a malformed request). */
export class AuthFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** `v` if it is a plain JSON object. */
export function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The tokens of one fake. */
export class TokenIssuer {
  /** Every token issued, by token text. */
  readonly tokens = new Map<string, IssuedToken>();

  constructor(private readonly dir: Directory) {}

  /** True when `token` was issued here, is not revoked, and its `expires_at` has not passed. */
  isValid(token: string | undefined): boolean {
    if (!token) return false;
    const t = this.tokens.get(token);
    return t !== undefined && !t.revoked && Date.now() < t.expiresAtMs;
  }

  /** Issue a token for a request body's `identity` and `scope`; returns the token text and its body. */
  issue(methods: string[], identity: Record<string, unknown>, scope: Record<string, unknown> | undefined, withCatalog: boolean): { token: string; body: unknown } {
    const issued = this.authenticate(methods, identity, scope);
    const token = `gAAAAAB${randomBytes(132).toString('base64url')}`;
    this.tokens.set(token, issued);
    return { token, body: this.tokenBody(issued, withCatalog) };
  }

  private findUser(u: Record<string, unknown> | undefined) {
    if (!u) return undefined;
    if (typeof u['id'] === 'string') return this.dir.users.get(u['id']);
    const domain = obj(u['domain']);
    return [...this.dir.users.values()].find(
      (x) =>
        x.name === u['name'] &&
        (domain === undefined ||
          x.domainId === domain['id'] ||
          (typeof domain['name'] === 'string' && domain['name'].toLowerCase() === x.domainId.toLowerCase())),
    );
  }

  private scopeProject(scope: Record<string, unknown> | undefined): string | null | undefined {
    const p = obj(scope?.['project']);
    if (!scope) return null;
    if (!p) throw new AuthFailure(401, UNAUTHORIZED);
    if (typeof p['id'] === 'string') return this.dir.projects.has(p['id']) ? p['id'] : undefined;
    const domain = obj(p['domain']);
    if (!domain) throw new AuthFailure(400, "'domain' is a required property for a project given by name");
    const found = [...this.dir.projects.values()].find(
      (x) =>
        x.name === p['name'] &&
        (x.domainId === domain['id'] || (typeof domain['name'] === 'string' && domain['name'].toLowerCase() === x.domainId.toLowerCase())),
    );
    return found?.id;
  }

  private authenticate(methods: string[], identity: Record<string, unknown>, scope: Record<string, unknown> | undefined): IssuedToken {
    const now = Date.now();
    const method = methods[0]!;
    if (method === 'application_credential') {
      const ac = obj(identity['application_credential']);
      const found =
        typeof ac?.['id'] === 'string'
          ? this.dir.applicationCredentials.get(ac['id'])
          : [...this.dir.applicationCredentials.values()].find((a) => a.name === ac?.['name'] && a.user === this.findUser(obj(ac?.['user']))?.id);
      if (!found || found.secret !== ac?.['secret']) throw new AuthFailure(401, UNAUTHORIZED);
      if (scope) throw new AuthFailure(401, 'Error authenticating with application credential: Application credentials cannot request a scope.');
      return {
        userId: found.user,
        projectId: found.project,
        methods: ['application_credential'],
        appCred: { id: found.id, name: found.name },
        issuedAtMs: now,
        expiresAtMs: now + this.dir.tokenLifetimeMs,
        revoked: false,
      };
    }
    if (method === 'password') {
      const user = this.findUser(obj(obj(obj(identity['password'])?.['user'])));
      const given = obj(obj(identity['password'])?.['user'])?.['password'];
      if (!user || user.password !== given) throw new AuthFailure(401, UNAUTHORIZED);
      const scoped = this.scopeProject(scope);
      const projectId = scoped === null ? user.defaultProject : scoped;
      if (!projectId || !user.projects.includes(projectId)) throw new AuthFailure(401, UNAUTHORIZED);
      return { userId: user.id, projectId, methods: ['password'], issuedAtMs: now, expiresAtMs: now + this.dir.tokenLifetimeMs, revoked: false };
    }
    if (method === 'token') {
      const given = obj(identity['token'])?.['id'];
      const original = typeof given === 'string' && this.isValid(given) ? this.tokens.get(given) : undefined;
      if (!original) throw new AuthFailure(401, UNAUTHORIZED);
      const scoped = this.scopeProject(scope);
      const projectId = scoped === null ? original.projectId : scoped;
      const user = this.dir.users.get(original.userId);
      if (!projectId || !user?.projects.includes(projectId) || (original.appCred && projectId !== original.projectId)) {
        throw new AuthFailure(401, UNAUTHORIZED);
      }
      return { ...original, projectId, methods: ['token', ...original.methods.filter((m) => m !== 'token')], issuedAtMs: now, revoked: false };
    }
    throw new AuthFailure(401, UNAUTHORIZED);
  }

  private tokenBody(t: IssuedToken, withCatalog: boolean): unknown {
    const user = this.dir.users.get(t.userId)!;
    const project = this.dir.projects.get(t.projectId)!;
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
          endpoints: this.dir.computeEndpoints.map((e, i) => ({
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
            url: `${this.dir.authUrl}/`,
          })),
        },
      ];
    }
    return { token };
  }
}
