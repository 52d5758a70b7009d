/**
 * Reading a Keystone v3 token response: the token body's times, scope and catalog.
 *
 * Source: Keystone API reference "Password authentication with scoped authorization" response
 * (`api-ref/source/v3/samples/auth/responses/project-scoped-password.json`): `expires_at` and
 * `issued_at` are ISO 8601 with microseconds and `Z`; `expires_at: null` never expires.
 *
 * @module
 */
import type { CatalogEntry } from './catalog.js';

/** What nova-guard keeps of a token body (no secret: the token itself travels in a header). */
export interface KeystoneTokenInfo {
  /** Auth methods, e.g. `['password']`, `['application_credential']`. */
  methods: string[];
  /** `expires_at` as epoch ms on Keystone's clock; undefined when the token never expires. */
  expiresAtMs: number | undefined;
  /** `issued_at` as epoch ms on Keystone's clock, if given. */
  issuedAtMs: number | undefined;
  /** Lifetime (`expires_at - issued_at`) in ms, if both are given. */
  lifetimeMs: number | undefined;
  /** Scoped project id. */
  projectId: string | undefined;
  /** Scoped project name. */
  projectName: string | undefined;
  /** User id. */
  userId: string | undefined;
  /** User name. */
  userName: string | undefined;
  /** Role names. */
  roles: string[];
  /** Application credential id, for application credential tokens. */
  applicationCredentialId: string | undefined;
  /** The service catalog (empty when Keystone sent none). */
  catalog: CatalogEntry[];
}

/** Parse a Keystone timestamp (`2015-11-07T02:58:43.578887Z`) to epoch ms; undefined when absent or invalid. */
export function parseKeystoneTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const ms = Date.parse(value.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isFinite(ms) ? ms : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Read the `token` object of a `POST /v3/auth/tokens` response body. Missing fields become undefined. */
export function parseTokenBody(body: unknown): KeystoneTokenInfo {
  const token = obj(obj(body)['token']);
  const project = obj(token['project']);
  const user = obj(token['user']);
  const expiresAtMs = parseKeystoneTime(token['expires_at']);
  const issuedAtMs = parseKeystoneTime(token['issued_at']);
  return {
    methods: Array.isArray(token['methods']) ? token['methods'].filter((m): m is string => typeof m === 'string') : [],
    expiresAtMs,
    issuedAtMs,
    lifetimeMs: expiresAtMs !== undefined && issuedAtMs !== undefined ? expiresAtMs - issuedAtMs : undefined,
    projectId: str(project['id']),
    projectName: str(project['name']),
    userId: str(user['id']),
    userName: str(user['name']),
    roles: Array.isArray(token['roles']) ? token['roles'].map((r) => str(obj(r)['name'])).filter((r): r is string => r !== undefined) : [],
    applicationCredentialId: str(obj(token['application_credential'])['id']),
    catalog: Array.isArray(token['catalog']) ? (token['catalog'] as CatalogEntry[]) : [],
  };
}
