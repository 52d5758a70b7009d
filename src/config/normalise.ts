/**
 * Turning one raw cloud entry (from a file or the environment) into a {@link CloudConfig}.
 *
 * Ported from openstacksdk `openstack/config/loader.py`: `_fix_args` (dashes → underscores, auth
 * options at the top level moved into `auth`), `_fix_backwards_auth_plugin` (`auth_plugin` →
 * `auth_type`), `_fix_backwards_project` (`tenant_*` → `project_*`), `_fix_backwards_interface`
 * (`endpoint_type` → `interface`), `_get_region` (region from `region_name` or the first of
 * `regions`, an unknown region is an error), `defaults.json` (`auth_type: password`,
 * `interface: public`, `verify: true`), `_util.get_boolean` (`'true'` in any case is true).
 *
 * @module
 */
import { homedir } from 'node:os';
import { inspect } from 'node:util';
import { ConfigError } from '../errors/index.js';
import { envVarFor } from './env.js';
import type { CloudAuth, CloudAuthType, CloudConfig, CloudSource } from './types.js';

/** Keys of the `auth:` block nova-guard reads. */
export const AUTH_KEYS = [
  'auth_url',
  'username',
  'user_id',
  'password',
  'project_name',
  'project_id',
  'user_domain_name',
  'user_domain_id',
  'project_domain_name',
  'project_domain_id',
  'domain_name',
  'domain_id',
  'application_credential_id',
  'application_credential_name',
  'application_credential_secret',
  'token',
] as const satisfies ReadonlyArray<keyof CloudAuth>;

/** Secret keys of the `auth:` block. */
export const SECRET_AUTH_KEYS: ReadonlySet<string> = new Set(['password', 'application_credential_secret', 'token']);

const AUTH_TYPES: Record<string, CloudAuthType> = {
  password: 'password',
  v3password: 'password',
  v3applicationcredential: 'v3applicationcredential',
  applicationcredential: 'v3applicationcredential',
  application_credential: 'v3applicationcredential',
  token: 'token',
  v3token: 'token',
};

/** Overrides applied over the cloud's own values (OSC semantics: `OS_REGION_NAME`, `OS_INTERFACE`, `OS_COMPUTE_API_VERSION`). */
export interface CloudOverrides {
  region_name?: string | undefined;
  interface?: string | undefined;
  compute_api_version?: string | undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function underscoreKeys(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k.replace(/-/g, '_'), v]));
}

/** openstacksdk `get_boolean`: booleans as they are, strings true only when `'true'` in any case. */
export function getBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (value === undefined || value === null) return false;
  return String(value).toLowerCase() === 'true';
}

function expandHome(path: string): string {
  return path === '~' ? homedir() : path.startsWith('~/') ? homedir() + path.slice(1) : path;
}

/** Builds the messages and errors of one cloud, naming the file (or the environment) and the key. */
class Where {
  constructor(
    readonly name: string,
    readonly source: CloudSource,
  ) {}
  get text(): string {
    return this.source.env ? `environment cloud "${this.name}"` : `cloud "${this.name}" in ${this.source.file ?? this.source.secureFile}`;
  }
  error(key: string, problem: string): ConfigError {
    const hint = this.source.env ? ` (set ${envVarFor(key)})` : '';
    return new ConfigError(`${this.text}: ${key} ${problem}${hint}`, { file: this.source.file ?? this.source.secureFile, key });
  }
}

function str(where: Where, key: string, v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  throw where.error(key, `must be a string, got ${Array.isArray(v) ? 'a list' : typeof v}`);
}

/** Attach `toJSON` and `util.inspect` redaction (non-enumerable) to an auth block. */
export function redactAuth(auth: CloudAuth): CloudAuth {
  const redacted = (): Record<string, unknown> =>
    Object.fromEntries(Object.entries(auth).map(([k, v]) => [k, SECRET_AUTH_KEYS.has(k) && v !== undefined ? '[REDACTED]' : v]));
  Object.defineProperty(auth, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(auth, inspect.custom, {
    value: (depth: number, options: object, insp: typeof inspect) => insp(redacted(), options),
    enumerable: false,
  });
  return auth;
}

/**
 * Resolve a raw cloud entry.
 * @throws {@link ConfigError} naming the file (or environment variable) and the key: a missing
 * required field, a wrong type, an unknown `auth_type`, `interface` or region, a bad microversion.
 */
export function resolveCloud(name: string, rawEntry: unknown, source: CloudSource, overrides: CloudOverrides = {}): CloudConfig {
  const where = new Where(name, source);
  if (!isPlainObject(rawEntry)) throw where.error('clouds.' + name, 'must be a mapping');
  const raw = underscoreKeys(rawEntry);
  if (raw['profile'] !== undefined || raw['cloud'] !== undefined) {
    throw where.error(raw['profile'] !== undefined ? 'profile' : 'cloud', 'names a vendor profile, which nova-guard does not support: give auth_url and the rest explicitly');
  }
  if (raw['auth'] !== undefined && raw['auth'] !== null && !isPlainObject(raw['auth'])) throw where.error('auth', 'must be a mapping');
  const rawAuth = underscoreKeys(isPlainObject(raw['auth']) ? raw['auth'] : {});
  // Legacy names and auth options given at the top level.
  for (const [from, to] of [
    ['tenant_name', 'project_name'],
    ['tenant_id', 'project_id'],
  ] as const) {
    for (const o of [raw, rawAuth]) if (o[to] === undefined && o[from] !== undefined) o[to] = o[from];
  }
  for (const k of [...AUTH_KEYS, 'endpoint']) if (rawAuth[k] === undefined && raw[k] !== undefined) rawAuth[k] = raw[k];

  const auth: CloudAuth = {};
  for (const k of AUTH_KEYS) {
    const v = str(where, `auth.${k}`, rawAuth[k]);
    if (v !== undefined) auth[k] = v;
  }

  const typeRaw = str(where, 'auth_type', raw['auth_type'] ?? raw['auth_plugin']);
  let authType: CloudAuthType;
  if (typeRaw === undefined) {
    authType = auth.token !== undefined && auth.password === undefined ? 'token' : auth.application_credential_secret !== undefined ? 'v3applicationcredential' : 'password';
  } else {
    const t = AUTH_TYPES[typeRaw.toLowerCase()];
    if (!t) throw where.error('auth_type', `is ${JSON.stringify(typeRaw)}; supported: password, v3password, v3applicationcredential, token, v3token`);
    authType = t;
  }

  // Region: explicit override, else region_name, else the first of regions.
  const regionsRaw = raw['regions'];
  let regions: string[] | undefined;
  if (regionsRaw !== undefined && regionsRaw !== null) {
    if (!Array.isArray(regionsRaw)) throw where.error('regions', 'must be a list');
    regions = regionsRaw.map((r, i) => (isPlainObject(r) ? str(where, `regions[${i}].name`, r['name']) : str(where, `regions[${i}]`, r)) ?? '');
  }
  const region = overrides.region_name || str(where, 'region_name', raw['region_name']) || regions?.[0] || undefined;
  if (region !== undefined && regions && regions.length > 0 && !regions.includes(region)) {
    throw where.error('region_name', `is "${region}", which is not one of the cloud's regions (${regions.join(', ')})`);
  }

  const ifaceRaw = overrides.interface || str(where, 'interface', raw['interface'] ?? raw['endpoint_type']) || 'public';
  const iface = ifaceRaw.toLowerCase().replace(/url$/, '');
  if (iface !== 'public' && iface !== 'internal' && iface !== 'admin') throw where.error('interface', `is "${ifaceRaw}"; use public, internal or admin`);

  const verify = raw['verify'] === undefined || raw['verify'] === null ? true : getBoolean(raw['verify']);
  const insecure = getBoolean(raw['insecure']) || !verify;
  const cacertRaw = str(where, 'cacert', raw['cacert']);

  let mv = overrides.compute_api_version || str(where, 'compute_api_version', raw['compute_api_version']);
  if (mv === '2' || mv === '2.0') mv = '2.1';
  if (mv !== undefined && !/^(2\.\d+|latest)$/.test(mv)) throw where.error('compute_api_version', `is "${mv}"; use a microversion like 2.79, or latest`);

  const override =
    str(where, 'compute_endpoint_override', raw['compute_endpoint_override']) ??
    str(where, 'compute_endpoint', raw['compute_endpoint']) ??
    str(where, 'auth.endpoint', rawAuth['endpoint']);
  if (override !== undefined && !/^https?:\/\/[^/]+/i.test(override)) throw where.error('compute_endpoint_override', `must be an http(s) URL`);

  requireFields(where, authType, auth, override);
  return {
    name,
    auth_type: authType,
    auth: redactAuth(auth),
    region_name: region,
    interface: iface,
    cacert: cacertRaw === undefined ? undefined : expandHome(cacertRaw),
    verify: !insecure,
    insecure,
    compute_api_version: mv,
    compute_endpoint_override: override?.replace(/\/+$/, ''),
    source,
  };
}

function requireFields(where: Where, authType: CloudAuthType, auth: CloudAuth, override: string | undefined): void {
  const missing = (key: string, extra = ''): ConfigError => where.error(key, `is missing${extra}`);
  if (authType === 'token') {
    if (auth.token === undefined) throw missing('auth.token');
    if (auth.auth_url === undefined && override === undefined) throw missing('auth.auth_url', ' (or give compute_endpoint_override to use the token as it is)');
    return;
  }
  if (auth.auth_url === undefined) throw missing('auth.auth_url');
  if (authType === 'password') {
    if (auth.username === undefined && auth.user_id === undefined) throw missing('auth.username');
    if (auth.password === undefined) throw missing('auth.password');
    return;
  }
  if (auth.application_credential_secret === undefined) throw missing('auth.application_credential_secret');
  if (auth.application_credential_id === undefined) {
    if (auth.application_credential_name === undefined) throw missing('auth.application_credential_id');
    if (auth.user_id === undefined && auth.username === undefined) throw missing('auth.user_id', ' (needed with application_credential_name)');
  }
}
