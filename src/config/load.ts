/**
 * Finding a cloud the way `openstack` and openstacksdk do: `clouds.yaml` merged with `secure.yaml`,
 * `OS_CLOUD`, and the `OS_*` variables; then building {@link NovaClientOptions} with a
 * {@link KeystoneAuth} from it.
 *
 * Precedence (openstacksdk `OpenStackConfig.__init__`/`get_one`, plus python-openstackclient's
 * overrides):
 * 1. the cloud named by the `cloud` option, else `OS_CLOUD`;
 * 2. else the environment cloud (`envvars`, or `OS_CLOUD_NAME`), when any `OS_*` variable other than
 *    the selectors `OS_CLOUD`, `OS_REGION_NAME`, `OS_CLIENT_CONFIG_FILE`, `OS_CLIENT_SECURE_FILE`,
 *    `OS_CLOUD_NAME` is set;
 * 3. else the only cloud of the file.
 *
 * The environment is not merged into a file cloud (openstacksdk), except `OS_REGION_NAME`,
 * `OS_INTERFACE` and `OS_COMPUTE_API_VERSION`, which override the file's values like the
 * `openstack` command's `--os-region-name`, `--os-interface` and `--os-compute-api-version`
 * defaults do.
 *
 * Variables (each `OS_FOO` is key `foo`; auth keys go into `auth:`): `OS_AUTH_URL`, `OS_AUTH_TYPE`
 * (`password`, `v3password`, `v3applicationcredential`, `token`, `v3token`), `OS_USERNAME`,
 * `OS_USER_ID`, `OS_PASSWORD`, `OS_PROJECT_NAME`, `OS_PROJECT_ID`, `OS_USER_DOMAIN_NAME`/`_ID`,
 * `OS_PROJECT_DOMAIN_NAME`/`_ID`, `OS_DOMAIN_NAME`/`_ID`, `OS_APPLICATION_CREDENTIAL_ID`/`_NAME`/`_SECRET`,
 * `OS_TOKEN` (or `OS_AUTH_TOKEN`), `OS_REGION_NAME`, `OS_INTERFACE`, `OS_CACERT` (the only CA bundle),
 * `OS_CERT` and `OS_KEY` (client certificate), `OS_API_TIMEOUT` (seconds), `OS_INSECURE`, `OS_COMPUTE_API_VERSION`,
 * and `OS_COMPUTE_ENDPOINT_OVERRIDE` (key `compute_endpoint_override`: the compute endpoint to use
 * instead of the catalog's, openstacksdk's `<service>_endpoint_override`; `OS_ENDPOINT` /
 * `auth.endpoint` is accepted as an alias).
 *
 * @module
 */
import { homedir } from 'node:os';
import type { LoggerOption } from '../core/logger.js';
import { ConfigError } from '../errors/index.js';
import { checkOptions, type OptionsSpec } from '../core/options.js';
import { is } from '../core/validate.js';
import { KeystoneAuth, loadCaCert, type KeystoneAuthOptions } from '../auth/keystone.js';
import { loadPem } from '../transport/tls.js';
import { envCloud } from './env.js';
import { candidateFiles, cloudsOf, loadFirstFile, mergeDeep, searchDirs, type SearchOptions } from './files.js';
import { resolveCloud } from './normalise.js';
import type { CloudConfig } from './types.js';

export type { CloudConfig } from './types.js';
export { searchDirs } from './files.js';

/** Options of {@link loadCloudConfig}. */
export interface LoadCloudConfigOptions {
  /** Cloud name; default `OS_CLOUD`, then the environment cloud, then the file's only cloud. */
  cloud?: string | undefined;
  /** Environment to read. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Current directory (first search directory). Default `process.cwd()`. */
  cwd?: string;
  /** Home directory (for `~/.config/openstack`). Default `os.homedir()`. */
  homeDir?: string;
  /**
   * System directories searched after the user's. Default: the XDG site directory
   * (`$XDG_CONFIG_DIRS`'s first entry or `/etc/xdg`, + `/openstack`), then `/etc/openstack`.
   */
  systemDirs?: string[];
  /** Region, overriding `OS_REGION_NAME` and the cloud's. */
  regionName?: string;
  /** Interface, overriding `OS_INTERFACE` and the cloud's. */
  interface?: string;
  /** Platform whose config folders are searched (macOS, Windows: see the module). Default `process.platform`. */
  platform?: NodeJS.Platform;
  /**
   * Called once per setting of the cloud that nova-guard does not support (the message names the
   * cloud and the key, never a value). Default: `process.emitWarning(message, 'NovaGuardConfigWarning')`.
   */
  onWarning?: (message: string) => void;
}

/** What {@link loadCloudConfig} takes (see {@link LoadCloudConfigOptions}). */
const LOAD_CLOUD_CONFIG_SPEC: OptionsSpec<LoadCloudConfigOptions> = {
  cloud: is.string(),
  env: is.object,
  cwd: is.string({ nonEmpty: true }),
  homeDir: is.string({ nonEmpty: true }),
  systemDirs: is.arrayOf(is.string({ nonEmpty: true })),
  regionName: is.string(),
  interface: is.string(),
  platform: is.string({ nonEmpty: true }),
  onWarning: is.function,
};

/**
 * Find and resolve one cloud.
 *
 * @returns plain data; `util.inspect` and `JSON.stringify` of it show `[REDACTED]` for secrets.
 * @throws {@link ConfigError} naming the file and key: a file that does not parse, a cloud that is
 * not there, several clouds and none chosen, no configuration at all, a missing required field
 * (`auth.auth_url`, `auth.password`, ...), an unknown `auth_type`, `interface` or region. Never a secret.
 * {@link ValidationError} (before any file is read) for an unknown option name or a bad option value.
 */
export function loadCloudConfig(options: LoadCloudConfigOptions = {}): CloudConfig {
  checkOptions('loadCloudConfig options', options, LOAD_CLOUD_CONFIG_SPEC);
  const env = options.env ?? process.env;
  const search: SearchOptions = { env, cwd: options.cwd ?? process.cwd(), homeDir: options.homeDir ?? homedir(), systemDirs: options.systemDirs, platform: options.platform };
  const config = findCloud(options, env, search);
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'NovaGuardConfigWarning'));
  for (const w of config.warnings) warn(w);
  return config;
}

function findCloud(options: LoadCloudConfigOptions, env: Record<string, string | undefined>, search: SearchOptions): CloudConfig {
  const cloudsFile = loadFirstFile(candidateFiles('clouds', search));
  const secureFile = loadFirstFile(candidateFiles('secure', search));
  const fileClouds = cloudsOf(cloudsFile);
  const secureClouds = cloudsOf(secureFile);
  const merged = mergeDeep(fileClouds, secureClouds);

  const envName = env['OS_CLOUD_NAME'] || 'envvars';
  const fromEnv = envCloud(env);
  if (fromEnv && Object.hasOwn(merged, envName)) {
    throw new ConfigError(
      `${cloudsFile?.path ?? secureFile?.path} defines a cloud named "${envName}", which is also the name of the cloud built from the OS_* variables: ` +
        'rename one of them (OS_CLOUD_NAME names the environment cloud)',
      { file: cloudsFile?.path ?? secureFile?.path, key: `clouds.${envName}` },
    );
  }
  const requested = options.cloud || env['OS_CLOUD'] || undefined;
  const fileNames = Object.keys(merged);
  let name: string;
  if (requested !== undefined) name = requested;
  else if (fromEnv) name = envName;
  else if (fileNames.length === 1) name = fileNames[0]!;
  else if (fileNames.length > 1) {
    throw new ConfigError(`${cloudsFile?.path ?? secureFile?.path} has several clouds (${fileNames.join(', ')}): choose one with OS_CLOUD or --os-cloud`, {
      file: cloudsFile?.path ?? secureFile?.path,
      key: 'clouds',
    });
  } else {
    throw new ConfigError(
      'no cloud configured: set OS_CLOUD and write a clouds.yaml, or set OS_AUTH_URL and credentials ' +
        `(searched: ${searchDirs(search).join(', ')}${env['OS_CLIENT_CONFIG_FILE'] ? `, ${env['OS_CLIENT_CONFIG_FILE']}` : ''})`,
    );
  }

  const overrides = { region_name: options.regionName || env['OS_REGION_NAME'], interface: options.interface || env['OS_INTERFACE'], compute_api_version: env['OS_COMPUTE_API_VERSION'] };
  if (name === envName && fromEnv) {
    return resolveCloud(name, fromEnv, { file: undefined, secureFile: undefined, env: true }, overrides);
  }
  if (!Object.hasOwn(merged, name)) {
    const file = cloudsFile?.path ?? secureFile?.path;
    throw new ConfigError(
      file
        ? `cloud "${name}" not found in ${file}${secureFile && cloudsFile ? ` or ${secureFile.path}` : ''} (clouds: ${fileNames.join(', ') || 'none'})`
        : `cloud "${name}" requested but no clouds.yaml found (searched: ${searchDirs(search).join(', ')})`,
      { ...(file ? { file } : {}), key: `clouds.${name}` },
    );
  }
  const source = {
    file: Object.hasOwn(fileClouds, name) ? cloudsFile?.path : undefined,
    secureFile: Object.hasOwn(secureClouds, name) ? secureFile?.path : undefined,
    env: false,
  };
  return resolveCloud(name, merged[name], source, overrides);
}

/**
 * What configuration reads of the extra options of `clientOptionsFromCloud` (and of
 * `NovaClient.fromCloud` / `fromEnv`, whose `CloudClientOptions` add every `NovaClientOptions`
 * field). Every other field is passed through to the result as it is.
 */
export interface CloudClientExtras {
  /** Options of the {@link KeystoneAuth} built from the cloud (renewal margin, time limit). */
  keystone?: Pick<KeystoneAuthOptions, 'minTokenLifeMs' | 'requestTimeoutMs' | 'userAgent'> | undefined;
  /** pino logger, given to the {@link KeystoneAuth} too. */
  logger?: LoggerOption | undefined;
  /** Project id; wins over the cloud's and the token's. */
  projectId?: string | undefined;
}

/**
 * The option names of `NovaClient` (`NovaClientOptions`, in `src/nova/options.ts`, which checks at
 * compile time that this lists every one): what `extra` may carry besides {@link CloudClientExtras}.
 */
export const NOVA_CLIENT_OPTION_NAMES = [
  'endpoint',
  'token',
  'auth',
  'projectId',
  'microversion',
  'requestTimeoutMs',
  'retry',
  'refusedFirstContactMs',
  'logger',
  'caCert',
  'clientCert',
  'clientKey',
  'insecure',
  'userAgent',
  'maxResponseBytes',
  'adapter',
  'clock',
  'coalesce',
  'maxRequestsPerSecond',
  'watchIntervalMs',
] as const;

/** What `extra.keystone` takes. */
const KEYSTONE_EXTRAS_SPEC: OptionsSpec<NonNullable<CloudClientExtras['keystone']>> = { minTokenLifeMs: null, requestTimeoutMs: null, userAgent: null };

/**
 * What `extra` of {@link clientOptionsFromCloud} and {@link resolveClientOptions} takes: the
 * {@link CloudClientExtras} and the client's own options (checked by `NovaClient`). Refuses an
 * unknown name before the Keystone provider is built, so before any request.
 */
const CLOUD_EXTRAS_SPEC: OptionsSpec = {
  ...Object.fromEntries(NOVA_CLIENT_OPTION_NAMES.map((k) => [k, null])),
  keystone: is.options(KEYSTONE_EXTRAS_SPEC),
  logger: is.object,
  projectId: is.string({ nonEmpty: true }),
};

/**
 * Check the `extra` options of {@link clientOptionsFromCloud} (also `NovaClient.fromCloud`'s and
 * `fromEnv`'s options, before any file is read): an unknown name is refused with the closest known one.
 * @param where - The caller, for the message.
 * @throws {@link ValidationError}
 */
export function checkCloudClientExtras(where: string, extra: unknown): void {
  checkOptions(`${where} options`, extra, CLOUD_EXTRAS_SPEC);
}

/**
 * The client options a cloud gives (structurally part of `NovaClientOptions`): a
 * {@link KeystoneAuth}, the microversion (`compute_api_version`), TLS (`cacert` read from its
 * file, `insecure`) and the project id when known.
 */
export interface CloudClientSettings {
  /** The Keystone provider of the cloud's credentials. */
  auth: KeystoneAuth;
  /** `compute_api_version`, if set. */
  microversion?: string;
  /** `verify: false` / `OS_INSECURE`. */
  insecure?: boolean;
  /** The CA bundle's content (`cacert`): the only CAs trusted. */
  caCert?: string | Buffer;
  /** The client certificate's content (`cert`, `OS_CERT`). */
  clientCert?: string | Buffer;
  /** The client certificate's private key (`key`, `OS_KEY`; else the `cert` file's own). */
  clientKey?: string | Buffer;
  /** `api_timeout` in ms: the time limit of each Nova request (Keystone's too). */
  requestTimeoutMs?: number;
  /** The cloud's project id (by id), else the token's once authenticated. */
  projectId?: string;
}

/** The result of `clientOptionsFromCloud`: the cloud's settings, with the extra options (less `keystone`) over them. */
export type CloudClientResult<E extends CloudClientExtras> = CloudClientSettings & Omit<E, 'keystone'>;

/**
 * The {@link KeystoneAuthOptions} of a cloud. Options the auth type does not use are dropped, like
 * keystoneauth's loader does (e.g. `project_name` left over in the environment of an application
 * credential, which is pre-scoped).
 */
export function keystoneOptionsFromCloud(config: CloudConfig): KeystoneAuthOptions {
  const a = config.auth;
  const out: KeystoneAuthOptions = {
    interface: config.interface,
    ...(a.auth_url !== undefined ? { authUrl: a.auth_url } : {}),
    ...(config.region_name !== undefined ? { regionName: config.region_name } : {}),
    ...(config.compute_endpoint_override !== undefined ? { endpointOverride: config.compute_endpoint_override } : {}),
    ...(config.insecure ? { insecure: true } : config.cacert !== undefined ? { caCert: config.cacert } : {}),
    ...(config.cert !== undefined ? { clientCert: config.cert, clientKey: config.key ?? config.cert } : {}),
    ...(config.api_timeout_ms !== undefined ? { requestTimeoutMs: config.api_timeout_ms } : {}),
  };
  const user = {
    ...(a.user_id !== undefined ? { userId: a.user_id } : { username: a.username }),
    userDomainName: a.user_domain_name,
    userDomainId: a.user_domain_id,
    domainName: a.domain_name,
    domainId: a.domain_id,
  };
  const project = {
    ...(a.project_id !== undefined ? { projectId: a.project_id } : { projectName: a.project_name }),
    projectDomainName: a.project_domain_name,
    projectDomainId: a.project_domain_id,
  };
  let creds: Partial<KeystoneAuthOptions>;
  if (config.auth_type === 'password') creds = { method: 'password', ...user, ...project, password: a.password };
  else if (config.auth_type === 'token') creds = { method: 'token', ...project, domainName: a.domain_name, domainId: a.domain_id, token: a.token };
  else {
    creds = {
      method: 'application_credential',
      applicationCredentialSecret: a.application_credential_secret,
      ...(a.application_credential_id !== undefined ? { applicationCredentialId: a.application_credential_id } : { applicationCredentialName: a.application_credential_name, ...user }),
    };
  }
  for (const [k, v] of Object.entries(creds)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/**
 * Client options for a cloud ({@link CloudClientSettings}): a {@link KeystoneAuth}, the
 * microversion (`compute_api_version`), TLS options (`cacert` read from its file, `insecure`) and
 * the project id when the cloud names one by id (`auth.project_id`, `OS_PROJECT_ID`), or, for a token
 * used as it is (an endpoint and a token, no auth URL), the project of a noauth token `user:project`.
 * `extra` wins over all of these.
 * @throws {@link ConfigError} when the CA file cannot be read; ValidationError for an unknown name in
 * `extra` (naming the closest, before anything else) and from {@link KeystoneAuth}.
 */
export function clientOptionsFromCloud<E extends CloudClientExtras = CloudClientExtras>(config: CloudConfig, extra: E = {} as E): CloudClientResult<E> {
  checkCloudClientExtras('cloud client', extra);
  const { keystone, ...clientExtra } = extra;
  const auth = new KeystoneAuth({ ...keystoneOptionsFromCloud(config), ...(keystone ?? {}), ...(extra.logger ? { logger: extra.logger } : {}) });
  const out: CloudClientSettings = { auth };
  if (config.compute_api_version !== undefined) out.microversion = config.compute_api_version;
  if (config.insecure) out.insecure = true;
  else if (config.cacert !== undefined) out.caCert = loadCaCert(config.cacert);
  if (config.cert !== undefined) {
    out.clientCert = loadPem(config.cert, 'cert');
    out.clientKey = loadPem(config.key ?? config.cert, config.key !== undefined ? 'key' : 'cert');
  }
  if (config.api_timeout_ms !== undefined) out.requestTimeoutMs = config.api_timeout_ms;
  // `auth.project_id` (OS_PROJECT_ID); for a token used as it is, else its noauth project (KeystoneAuth).
  const projectId = auth.getProjectId();
  if (projectId !== undefined) out.projectId = projectId;
  return { ...out, ...clientExtra } as CloudClientResult<E>;
}

/**
 * Like `clientOptionsFromCloud`, but authenticates once first (unless the token is used as it
 * is), so that bad credentials fail here and the project id of the token (application credentials,
 * projects given by name) becomes the client's `projectId`.
 * @throws the errors of `clientOptionsFromCloud` and of {@link KeystoneAuth.getToken}.
 */
export async function resolveClientOptions<E extends CloudClientExtras = CloudClientExtras>(config: CloudConfig, extra: E = {} as E): Promise<CloudClientResult<E>> {
  checkCloudClientExtras('cloud client', extra);
  const options = clientOptionsFromCloud(config, extra);
  const auth = options.auth;
  if (auth.authUrl !== undefined) {
    await auth.getToken();
    if (extra.projectId === undefined) {
      const projectId = auth.getProjectId();
      if (projectId !== undefined) options.projectId = projectId;
    }
  }
  return options;
}
