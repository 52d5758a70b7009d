/**
 * Turning one raw cloud entry (from a file or the environment) into a {@link CloudConfig}.
 *
 * Ported from openstacksdk `openstack/config/loader.py`: `_fix_args` (dashes → underscores, auth
 * options at the top level moved into `auth`), `_fix_backwards_auth_plugin` (`auth_plugin` →
 * `auth_type`), `_fix_backwards_project` (`tenant_*` → `project_*`), `_fix_backwards_interface`
 * (`endpoint_type` → `interface`), `_get_region` (region from `region_name` or the first of
 * `regions`, an unknown region is an error), `defaults.json` (`auth_type: password`,
 * `interface: public`, `verify: true`), `_util.get_boolean` (`'true'` in any case is true),
 * `_get_known_regions`/`_expand_regions` (`regions:` as names or `{name, values}` entries, the
 * chosen region's `values` merged over the cloud; a comma list in `region_name`),
 * `_fix_backwards_auth` (`auth_token`, i.e. `OS_AUTH_TOKEN`, is `token`), and
 * `CloudRegion.get_requests_verify_args` (`cacert` is the one CA bundle, `cert` + `key` the
 * client certificate). A setting nova-guard does not support is ignored with a warning.
 *
 * @module
 */
import { closestOption } from '../core/options.js';
import { MAX_TIMER_MS, isPlainObject } from '../core/validate.js';
import { homedir } from 'node:os';
import { ConfigError } from '../errors/index.js';
import { envVarFor } from './env.js';
import type { CloudAuth, CloudAuthType, CloudConfig, CloudSource } from './types.js';
import { Secret } from '../core/secret.js';

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

/**
 * Resolve a raw cloud entry.
 * @throws {@link ConfigError} naming the file (or environment variable) and the key: a missing
 * required field, a wrong type, an unknown `auth_type`, `interface` or region, a bad microversion.
 */
export function resolveCloud(name: string, rawEntry: unknown, source: CloudSource, overrides: CloudOverrides = {}): CloudConfig {
  const where = new Where(name, source);
  if (!isPlainObject(rawEntry)) throw where.error('clouds.' + name, 'must be a mapping');
  const warnings: string[] = [];
  const raw0 = underscoreKeys(rawEntry);
  if (raw0['auth'] !== undefined && raw0['auth'] !== null && !isPlainObject(raw0['auth'])) throw where.error('auth', 'must be a mapping');
  // Region: explicit override, else region_name (a comma list names several), else the first of regions.
  const known = knownRegions(where, raw0, warnings);
  const region = overrides.region_name || known[0]?.name || undefined;
  const chosen = region === undefined ? undefined : known.find((r) => r.name === region);
  if (region !== undefined && known.length > 0 && !chosen) {
    throw where.error('region_name', `is "${region}", which is not one of the cloud's regions (${known.map((r) => r.name).join(', ')})`);
  }
  // The region's `values` over the cloud's own (openstacksdk `get_one`: `_auth_update` with them).
  const raw = chosen && Object.keys(chosen.values).length > 0 ? mergeAuthAware(raw0, underscoreKeys(chosen.values)) : raw0;
  if (raw['profile'] !== undefined || raw['cloud'] !== undefined) {
    throw where.error(raw['profile'] !== undefined ? 'profile' : 'cloud', 'names a vendor profile, which nova-guard does not support: give auth_url and the rest explicitly');
  }
  const rawAuth = underscoreKeys(isPlainObject(raw['auth']) ? raw['auth'] : {});
  // Legacy names and auth options given at the top level.
  for (const [from, to] of [
    ['tenant_name', 'project_name'],
    ['tenant_id', 'project_id'],
  ] as const) {
    for (const o of [raw, rawAuth]) if (o[to] === undefined && o[from] !== undefined) o[to] = o[from];
  }
  // `auth_token` / `auth-token` (`OS_AUTH_TOKEN`) is the token (openstacksdk `_fix_backwards_auth`).
  for (const o of [raw, rawAuth]) if (o['token'] === undefined && o['auth_token'] !== undefined) o['token'] = o['auth_token'];
  for (const k of [...AUTH_KEYS, 'endpoint']) if (rawAuth[k] === undefined && raw[k] !== undefined) rawAuth[k] = raw[k];
  const misspelt = warnUnsupported(where, raw, rawAuth, warnings);

  const auth: CloudAuth = {};
  for (const k of AUTH_KEYS) {
    const v = str(where, `auth.${k}`, rawAuth[k]);
    // A secret is kept as a Secret: it stays redacted in every copy of the block (`{ ...auth }`).
    if (v !== undefined) (auth as Record<string, string | Secret>)[k] = SECRET_AUTH_KEYS.has(k) ? new Secret(v) : v;
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

  const ifaceRaw = overrides.interface || str(where, 'interface', raw['interface'] ?? raw['endpoint_type']) || 'public';
  const iface = ifaceRaw.toLowerCase().replace(/url$/, '');
  if (iface !== 'public' && iface !== 'internal' && iface !== 'admin') throw where.error('interface', `is "${ifaceRaw}"; use public, internal or admin`);

  const verify = raw['verify'] === undefined || raw['verify'] === null ? true : getBoolean(raw['verify']);
  const insecure = getBoolean(raw['insecure']) || !verify;
  const cacertRaw = str(where, 'cacert', raw['cacert']);
  const certRaw = str(where, 'cert', raw['cert']);
  const keyRaw = str(where, 'key', raw['key']);
  if (keyRaw !== undefined && certRaw === undefined) throw where.error('cert', 'is missing (key is given: the client certificate goes with it)');
  const apiTimeoutMs = apiTimeout(where, raw['api_timeout']);

  let mv = overrides.compute_api_version || str(where, 'compute_api_version', raw['compute_api_version']);
  if (mv === '2' || mv === '2.0') mv = '2.1';
  if (mv !== undefined && !/^(2\.\d+|latest)$/.test(mv)) throw where.error('compute_api_version', `is "${mv}"; use a microversion like 2.79, or latest`);

  const override =
    str(where, 'compute_endpoint_override', raw['compute_endpoint_override']) ??
    str(where, 'compute_endpoint', raw['compute_endpoint']) ??
    str(where, 'auth.endpoint', rawAuth['endpoint']);
  if (override !== undefined && !/^https?:\/\/[^/]+/i.test(override)) throw where.error('compute_endpoint_override', `must be an http(s) URL`);

  requireFields(where, authType, auth, override, misspelt);
  return {
    name,
    auth_type: authType,
    auth,
    region_name: region,
    interface: iface,
    cacert: cacertRaw === undefined ? undefined : expandHome(cacertRaw),
    cert: certRaw === undefined ? undefined : expandHome(certRaw),
    key: keyRaw === undefined ? undefined : expandHome(keyRaw),
    api_timeout_ms: apiTimeoutMs,
    regions: known.map((r) => r.name),
    verify: !insecure,
    insecure,
    compute_api_version: mv,
    compute_endpoint_override: override?.replace(/\/+$/, ''),
    source,
    warnings,
  };
}

/** One known region: its name and the settings it overrides. */
interface KnownRegion {
  name: string;
  values: Record<string, unknown>;
}

/**
 * The cloud's regions, as openstacksdk `_get_known_regions` lists them: `regions:` (names, or
 * `{name, values}` mappings with no other key), else `region_name` split at commas (a list of
 * several draws openstacksdk's deprecation warning, repeated here).
 * @throws {@link ConfigError} for a `regions` that is not a list or an entry that is not valid.
 */
function knownRegions(where: Where, raw: Record<string, unknown>, warnings: string[]): KnownRegion[] {
  const regionsRaw = raw['regions'];
  if (regionsRaw !== undefined && regionsRaw !== null) {
    if (!Array.isArray(regionsRaw)) throw where.error('regions', 'must be a list');
    return regionsRaw.map((r, i) => {
      if (!isPlainObject(r)) return { name: str(where, `regions[${i}]`, r) ?? '', values: {} };
      const extra = Object.keys(r).filter((k) => k !== 'name' && k !== 'values');
      if (r['name'] === undefined || extra.length > 0) throw where.error(`regions[${i}]`, `must have a name and nothing but name and values${extra.length ? ` (found ${extra.join(', ')})` : ''}`);
      const values = r['values'] ?? {};
      if (!isPlainObject(values)) throw where.error(`regions[${i}].values`, 'must be a mapping');
      return { name: str(where, `regions[${i}].name`, r['name']) ?? '', values };
    });
  }
  const rn = raw['region_name'];
  if (rn === undefined || rn === null || rn === '') return [];
  const names = Array.isArray(rn) ? rn.map((r, i) => str(where, `region_name[${i}]`, r) ?? '') : (str(where, 'region_name', rn) ?? '').split(',').map((r) => r.trim());
  if (names.length > 1) warnings.push(`${where.text}: a comma-separated region_name is deprecated (openstacksdk); use a list in regions`);
  return names.map((name) => ({ name, values: {} }));
}

/** `over` on `base`, the `auth` mappings merged key by key (openstacksdk `_auth_update`). */
function mergeAuthAware(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base, ...over };
  if (isPlainObject(base['auth']) && isPlainObject(over['auth'])) out['auth'] = { ...underscoreKeys(base['auth']), ...underscoreKeys(over['auth']) };
  return out;
}

/** `api_timeout` (seconds, a number or numeric string) in ms; undefined when unset. */
function apiTimeout(where: Where, v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  // Decimal seconds only (`Number('0x10')` would be 16): as openstacksdk's float().
  const seconds = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds <= 0) throw where.error('api_timeout', 'must be a positive number of seconds');
  const ms = Math.round(seconds * 1000);
  // A request time limit is a timer: at least 1 ms, at most about 24.8 days (2^31 - 1 ms).
  if (ms < 1 || ms > MAX_TIMER_MS) throw where.error('api_timeout', `must be between 0.001 and ${Math.floor(MAX_TIMER_MS / 1000)} seconds`);
  return ms;
}

/** Top-level keys nova-guard reads (after dashes become underscores); auth options given here are read too. */
const TOP_KEYS: ReadonlySet<string> = new Set([
  'auth', 'auth_type', 'auth_plugin', 'region_name', 'regions', 'interface', 'endpoint_type', 'verify', 'insecure',
  'cacert', 'cert', 'key', 'api_timeout', 'compute_api_version', 'compute_endpoint_override', 'compute_endpoint',
  'identity_api_version', 'endpoint', 'tenant_name', 'tenant_id', 'auth_token', 'profile', 'cloud',
]);

/** The top-level keys a misspelled one is compared with: {@link TOP_KEYS} without the refused `profile` and `cloud`. */
const READ_TOP_KEYS: readonly string[] = [...TOP_KEYS].filter((k) => k !== 'profile' && k !== 'cloud');

/** The keys of other services (`image_api_version`, `volume_endpoint_override`, ...), which a Nova worker has no use for. */
const OTHER_SERVICE_KEY = /^(?!compute_|identity_)[a-z0-9]+(_[a-z0-9]+)*_(api_version|endpoint_override|endpoint|service_type|service_name|interface)$/;

/**
 * One warning per setting nova-guard does not support (names only, never values): an unknown
 * top-level or `auth:` key, settings of other services, an `identity_api_version` other than 3.
 * A misspelled key (`usernme`, `auth_ulr`) gets the closest key nova-guard reads, as an unknown
 * option name does (`closestOption`: ` (did you mean auth.username?)`; for the environment cloud the
 * variable, `OS_USERNAME`); a key openstacksdk knows but nova-guard does not read gets none unless it
 * happens to be that close to one.
 * @returns The known auth keys a misspelled key stands for, each with the key as written
 * (`username` → `auth.usernme`), for the "missing" error of a required one.
 */
function warnUnsupported(where: Where, raw: Record<string, unknown>, rawAuth: Record<string, unknown>, warnings: string[]): Map<string, string> {
  const authKeys: ReadonlySet<string> = new Set([...AUTH_KEYS, 'endpoint', 'tenant_name', 'tenant_id', 'auth_token']);
  const other: string[] = [];
  const unknown: string[] = [];
  for (const k of Object.keys(raw)) {
    if (TOP_KEYS.has(k) || authKeys.has(k)) continue;
    (OTHER_SERVICE_KEY.test(k) ? other : unknown).push(k);
  }
  const meant = new Map<string, string>();
  const written = (k: string, inAuth: boolean): string => (where.source.env ? envVarFor(k) : inAuth ? `auth.${k}` : k);
  const suggestion = (k: string, known: readonly string[], inAuth: boolean): string => {
    const closest = closestOption(k, known);
    if (closest === undefined) return '';
    if ((AUTH_KEYS as readonly string[]).includes(closest) && !meant.has(closest)) meant.set(closest, written(k, inAuth));
    return ` (did you mean ${where.source.env ? envVarFor(closest) : inAuth ? `auth.${closest}` : closest}?)`;
  };
  // `auth` (the block) only when no setting is close: `auth_ulr` is `auth_url`, not the block it starts like.
  const topKnown = [...READ_TOP_KEYS.filter((k) => k !== 'auth'), ...AUTH_KEYS];
  for (const k of unknown) warnings.push(`${where.text}: ${k} is not supported by nova-guard and is ignored${suggestion(k, topKnown, false) || suggestion(k, ['auth'], false)}`);
  if (other.length > 0) warnings.push(`${where.text}: settings of other services are ignored (${other.join(', ')})`);
  for (const k of Object.keys(rawAuth)) {
    if (!authKeys.has(k)) warnings.push(`${where.text}: auth.${k} is not supported by nova-guard and is ignored${suggestion(k, AUTH_KEYS, true)}`);
  }
  const idv = raw['identity_api_version'];
  if (idv !== undefined && idv !== null && idv !== '' && String(idv) !== '3' && String(idv) !== '3.0') {
    warnings.push(`${where.text}: identity_api_version ${String(idv)} is not supported and is ignored: nova-guard speaks Keystone v3`);
  }
  return meant;
}

function requireFields(where: Where, authType: CloudAuthType, auth: CloudAuth, override: string | undefined, misspelt: ReadonlyMap<string, string>): void {
  const missing = (key: string, extra = ''): ConfigError => {
    // A required key given misspelled (`usernme`): say which key was found, as the warning does.
    const found = misspelt.get(key.replace(/^auth\./, ''));
    return where.error(key, `is missing${extra}${found !== undefined ? `; ${found} is ${where.source.env ? 'set' : 'given'}, a misspelling?` : ''}`);
  };
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
