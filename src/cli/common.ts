/**
 * Shared pieces of the `nova-guard` command line: global connection options and how a client is
 * built from them, the environment, or clouds.yaml.
 *
 * @module
 */
import { Option, type Command } from 'commander';
import { createRequire } from 'node:module';
import { pino } from 'pino';
import { NovaClient, type NovaClientOptions } from '../nova/client.js';
import { loadCloudConfig, resolveClientOptions, type CloudConfig } from '../config/load.js';
import { ConfigError, NovaApiError, NovaNetworkError, ValidationError } from '../errors/index.js';
import { loadCaCert, loadPem } from '../transport/tls.js';
import type { Logger } from '../core/logger.js';
import { parseDuration } from '../core/duration.js';
import { redactUrlSecrets, withoutUserInfo } from '../core/redact.js';
import { LEDGER_ENV, parseLedgerSpec } from '../ledgers/index.js';
import { noteGivenToken, tokenHint } from './tokenHint.js';
import { withSlowNotice } from './waitNotice.js';

/** Global options every subcommand accepts (like the `openstack` command's `--os-*` options). */
export interface GlobalOptions {
  endpoint?: string;
  token?: string;
  osCloud?: string;
  osAuthUrl?: string;
  osUsername?: string;
  osPassword?: string;
  osProjectName?: string;
  osProjectId?: string;
  osUserDomainName?: string;
  osUserDomainId?: string;
  osProjectDomainName?: string;
  osProjectDomainId?: string;
  osUserId?: string;
  osAuthType?: string;
  osApplicationCredentialId?: string;
  osApplicationCredentialName?: string;
  osApplicationCredentialSecret?: string;
  osRegionName?: string;
  osInterface?: string;
  osCert?: string;
  osKey?: string;
  osToken?: string;
  osEndpoint?: string;
  osComputeApiVersion?: string;
  microversion?: string;
  /** `--request-timeout` (or its old spelling `--request-timeout-ms`), in ms. */
  requestTimeout?: number;
  insecure?: boolean;
  osCacert?: string;
  debug?: boolean;
}

/** Add the global connection options to the root program. */
export function addGlobalOptions(program: Command): Command {
  program
    .option('--os-cloud <name>', 'cloud from clouds.yaml (env OS_CLOUD)')
    .option('--os-auth-url <url>', 'Keystone URL (env OS_AUTH_URL)')
    .option('--os-username <name>', 'user name (env OS_USERNAME)')
    .option('--os-password <password>', 'password (env OS_PASSWORD)')
    .option('--os-project-name <name>', 'project name (env OS_PROJECT_NAME)')
    .option('--os-project-id <id>', 'project id (env OS_PROJECT_ID)')
    .option('--os-user-id <id>', 'user id (env OS_USER_ID)')
    .option('--os-user-domain-name <name>', 'domain of the user, by name (env OS_USER_DOMAIN_NAME)')
    .option('--os-user-domain-id <id>', 'domain of the user, by id (env OS_USER_DOMAIN_ID)')
    .option('--os-project-domain-name <name>', 'domain of the project, by name (env OS_PROJECT_DOMAIN_NAME)')
    .option('--os-project-domain-id <id>', 'domain of the project, by id (env OS_PROJECT_DOMAIN_ID)')
    .option('--os-auth-type <type>', 'password, v3password, v3applicationcredential, token or v3token (env OS_AUTH_TYPE)')
    .option('--os-application-credential-id <id>', 'application credential id (env OS_APPLICATION_CREDENTIAL_ID)')
    .option('--os-application-credential-name <name>', 'application credential name, with --os-username or --os-user-id (env OS_APPLICATION_CREDENTIAL_NAME)')
    .option('--os-application-credential-secret <secret>', 'application credential secret (env OS_APPLICATION_CREDENTIAL_SECRET)')
    .option('--os-region-name <name>', 'region (env OS_REGION_NAME)')
    .option('--os-interface <interface>', 'endpoint interface: public, internal or admin (env OS_INTERFACE)')
    .option('--os-cert <file>', 'client certificate, PEM (env OS_CERT)')
    .option('--os-key <file>', 'client certificate key, PEM (env OS_KEY; default: the --os-cert file)')
    .option('--os-token <token>', 'with --os-endpoint: a token sent as it is, no Keystone (env OS_TOKEN)')
    .option('--os-endpoint <url>', 'with --os-token: the compute endpoint, e.g. http://127.0.0.1:8774/v2.1 (env OS_ENDPOINT)')
    .option('--endpoint <url>', 'old spelling of --os-endpoint (env NOVA_ENDPOINT)')
    .option('--token <token>', 'old spelling of --os-token (env NOVA_TOKEN)')
    .option('--os-compute-api-version <version>', 'compute API microversion, e.g. 2.79 (env OS_COMPUTE_API_VERSION)')
    .option('--microversion <version>', 'old spelling of --os-compute-api-version', undefined)
    .option('--insecure', 'turn TLS verification off (env OS_INSECURE)')
    .option('--os-cacert <file>', 'CA bundle to verify TLS with (env OS_CACERT)')
    .option('--debug', 'log requests (never tokens) to stderr');
  return addDurationOption(program, { flag: '--request-timeout', old: ['--request-timeout-ms'], description: 'time limit of each HTTP request', shownDefault: '30s' });
}

/** `500ms`, `30s`, `1.5h`: a decimal number and a unit (`ms`, `s`, `m`, `h`, `d`, `w`), nothing around. */
const WITH_UNIT = /^\d+(\.\d+)?(ms|s|m|h|d|w)$/i;

/** The units every duration flag takes, as its messages show them. */
const UNITS_HINT = '500ms, 5s, 2m, 1h';

/**
 * Parse a duration from a CLI flag, the one syntax of every duration flag of the CLI: a decimal
 * number and a unit, `500ms`, `30s`, `5m`, `2h`, `1d`, `1w` (decimals allowed, `1.5h`; see
 * `parseDuration`). A bare number (`5`, `30000`) is refused whatever the flag, with one message
 * that names the flag and shows it with a unit: `--timeout 5` used to mean 5 ms on some flags and
 * was refused on others. `0x10`, `1e3`, ` 5s`, `-5s` and `Infinity` are refused too.
 *
 * @param flag - The flag as the user typed it (an old spelling too), for the message.
 * @param options.allowZero - accept 0 (`0s`, `0ms`); @default false (the value must be positive)
 * @param options.newFlag - the flag's current spelling when `flag` is an old one (`--timeout` for
 *   `--timeout-ms`): a bare number is shown in it. @default `flag`
 * @returns the duration in ms.
 * @throws {@link ValidationError} naming the flag (bad usage, exit 2).
 */
export function parseDurationFlag(value: string, flag: string, options: { allowZero?: boolean; newFlag?: string } = {}): number {
  if (/^\d+(\.\d+)?$/.test(value)) throw new ValidationError(`${flag} ${value}: a duration needs a unit: ${bareNumberHint(value, flag, options.newFlag ?? flag)} (units: ${UNITS_HINT})`);
  const ms = WITH_UNIT.test(value) ? parseDuration(value, flag) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0 || (ms === 0 && !options.allowZero)) {
    throw new ValidationError(`${flag} must be a ${options.allowZero ? '' : 'positive '}duration with a unit (${UNITS_HINT}), got ${JSON.stringify(value)}`);
  }
  return ms;
}

/**
 * What a bare number given to a duration flag means in the current spelling `newFlag`: for an old
 * `-ms` flag (`--timeout-ms 30000`), the milliseconds it always meant (`30000 ms is --timeout 30s`);
 * for any other, seconds or milliseconds (`--timeout 30s (seconds) or --timeout 30ms`).
 */
function bareNumberHint(value: string, flag: string, newFlag: string): string {
  if (/-ms$/.test(flag)) return `${value} ms is ${newFlag} ${msWithUnit(Number(value))}`;
  return `${newFlag} ${value}s (seconds) or ${newFlag} ${value}ms`;
}

/** `ms` written with the largest unit that keeps it exact: 30000 → `30s`, 120000 → `2m`, 1500 → `1.5s`, 250 → `250ms`. */
export function msWithUnit(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms === 0) return `${ms}ms`;
  for (const [unit, size] of [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms >= 1000 ? `${ms / 1000}s` : `${ms}ms`;
}

/** The old spellings already warned about in this process (one line each). */
const warnedSpellings = new Set<string>();

/**
 * Say once per process, on stderr, that `old` is an old spelling of `flag`.
 * @param print - where the line goes; @default console.error
 */
export function warnOldSpelling(old: string, flag: string, print: (line: string) => void = (line) => console.error(line)): void {
  if (warnedSpellings.has(old)) return;
  warnedSpellings.add(old);
  print(`nova-guard: warning: ${old} is deprecated and will be removed: use ${flag} (the same duration with a unit, e.g. ${flag} 30s)`);
}

/** A duration flag of a command: see {@link addDurationOption}. */
export interface DurationOptionSpec {
  /** The flag, e.g. `--timeout`. */
  flag: `--${string}`;
  /** Its help text (the units and `shownDefault` are added). */
  description: string;
  /** The default the help shows, when the library's own applies (`5m`). @default none */
  shownDefault?: string;
  /** Old spellings kept as aliases (hidden from the help; each warns once per process). @default none */
  old?: ReadonlyArray<`--${string}`>;
  /** Accept 0 (`0s`). @default false */
  allowZero?: boolean;
  /** The value when the flag is absent, in ms, and how the help shows it (`5m`). @default none (undefined) */
  default?: { ms: number; text: string };
}

/**
 * Add a duration flag to `cmd`, as commander means options to be added: an {@link Option} whose
 * `argParser` reads the value with {@link parseDurationFlag} (so a bad value is refused while the
 * command line is parsed, before any connection), the value in ms under the flag's attribute
 * (`--max-wait` → `maxWait`). Each old spelling (`--max-wait-ms`) is a hidden option with the same
 * parser that `conflicts` with the flag; a `preAction` hook (once parsing succeeded) warns once per
 * process ({@link warnOldSpelling}) and hands its value to the flag, so the action reads one attribute.
 */
export function addDurationOption(cmd: Command, spec: DurationOptionSpec): Command {
  const parse = (typed: string) => (value: string): number => parseDurationFlag(value, typed, { allowZero: spec.allowZero ?? false, newFlag: spec.flag });
  const shown = spec.shownDefault === undefined ? '' : ` (default ${spec.shownDefault})`;
  const main = new Option(`${spec.flag} <duration>`, `${spec.description}: ${UNITS_HINT}${shown}`).argParser(parse(spec.flag));
  if (spec.default !== undefined) main.default(spec.default.ms, spec.default.text);
  cmd.addOption(main);
  const aliases = (spec.old ?? []).map((old) => {
    const alias = new Option(`${old} <duration>`, `deprecated: use ${spec.flag}`)
      .hideHelp()
      .conflicts(main.attributeName())
      .argParser(parse(old));
    cmd.addOption(alias);
    return { alias, old };
  });
  if (aliases.length > 0) {
    // After parsing (a refused value or a conflict is the only line said), before the action.
    cmd.hook('preAction', (self) => {
      for (const { alias, old } of aliases) {
        const value: unknown = self.getOptionValue(alias.attributeName());
        if (value === undefined) continue;
        warnOldSpelling(old, spec.flag);
        self.setOptionValueWithSource(main.attributeName(), value, 'cli');
      }
    });
  }
  return cmd;
}

/**
 * Parse a whole number of at least `min` from a CLI flag, written in decimal digits only (a leading
 * `-` when `min` is negative): `0x10`, `1e3`, `1.0` and `Infinity` are refused.
 * @throws {@link ValidationError} naming the flag.
 */
export function parseIntFlag(value: string, flag: string, min = 1): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new ValidationError(`${flag} must be ${min === 1 ? 'a positive integer' : `an integer >= ${min}`}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/**
 * The logger of the CLI: silent unless --debug; then pino to stderr, as pino-pretty's readable lines
 * when stderr is a terminal (and pino-pretty is installed: it is a development dependency, loaded
 * only here) and as JSON lines when stderr is piped or a file.
 */
export function cliLogger(opts: GlobalOptions, stderrIsTTY: boolean = Boolean(process.stderr.isTTY)): Logger {
  if (!opts.debug) return pino({ level: 'silent' });
  if (stderrIsTTY) {
    try {
      const pretty = createRequire(import.meta.url)('pino-pretty') as (o: Record<string, unknown>) => NodeJS.WritableStream;
      return pino({ level: 'debug' }, pretty({ destination: 2, colorize: true, sync: true }) as never);
    } catch {
      console.error('nova-guard: --debug prints JSON lines: install pino-pretty for readable ones');
    }
  }
  return pino({ level: 'debug' }, pino.destination(2));
}

/** A client getter that may be given defaults the user's flags and `OS_*` variables override (see {@link clientFromOptions}). */
export type ClientGetter = (defaults?: { microversion?: string }) => Promise<NovaClient>;

/**
 * Build a client the way the `openstack` command finds its cloud (python-openstackclient's
 * `--os-*` options, whose defaults are the `OS_*` variables):
 * - `--os-token` with `--os-endpoint` (or `OS_TOKEN` with `OS_ENDPOINT` and no `OS_AUTH_URL`; or
 *   the older `--token`/`--endpoint`, `NOVA_TOKEN`/`NOVA_ENDPOINT`): the token as it is, no Keystone;
 * - else `loadCloudConfig` with `--os-cloud`, `--os-region-name` and `--os-interface` as its options
 *   and `--os-auth-url`, `--os-username`, `--os-password`, `--os-project-name`, `--os-token` as the
 *   variables they stand for, then Keystone (`resolveClientOptions`), saying
 *   `waiting for keystone at URL ...` on stderr when that takes over a second.
 *
 * `--os-cert`/`--os-key` (`OS_CERT`/`OS_KEY`): the client certificate and its key (PEM files).
 * Settings of clouds.yaml that nova-guard ignores are printed as `Warning: ...` lines on stderr.
 * `defaults.microversion`: the microversion a command needs when neither the flags, `OS_COMPUTE_API_VERSION`
 * name one (`server create` asks for 2.37, for `networks: 'none'`); @default the client's own.
 * @throws {@link ValidationError} for a bad flag (exit 2); {@link ConfigError} when no cloud is
 * configured at all, for a broken clouds.yaml, an unknown cloud or an unreadable CA file (exit 1);
 * {@link AuthError} when Keystone rejects the credentials.
 */
export async function clientFromOptions(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env, defaults: { microversion?: string | undefined } = {}): Promise<NovaClient> {
  const logger = cliLogger(opts);
  // A refused connection before Nova ever answered (a wrong URL, a stopped Nova) fails in about a
  // second (with "is Nova running at URL?", `refusedHint`), not after the whole retry policy.
  const common: Partial<NovaClientOptions> = { logger, refusedFirstContactMs: REFUSED_FIRST_CONTACT_MS };
  const microversion = opts.osComputeApiVersion ?? opts.microversion ?? env['OS_COMPUTE_API_VERSION'] ?? defaults.microversion;
  if (microversion) common.microversion = microversion;
  if (opts.requestTimeout !== undefined) common.requestTimeoutMs = opts.requestTimeout;
  if (opts.insecure || /^(true|1|yes)$/i.test(env['OS_INSECURE'] ?? '')) common.insecure = true;
  const cacert = opts.osCacert ?? env['OS_CACERT'];
  // A missing or unreadable file is a ConfigError naming it (key cacert), not a raw ENOENT.
  if (cacert) common.caCert = loadCaCert(cacert);
  // Client certificate (python-openstackclient's --os-cert/--os-key): a PEM file, with the key in it
  // unless --os-key names another file. A missing file is a ConfigError naming the option.
  const cert = opts.osCert ?? env['OS_CERT'];
  const certKey = opts.osKey ?? env['OS_KEY'];
  if (certKey && !cert) throw new ConfigError('--os-key (OS_KEY) needs --os-cert (OS_CERT): the client certificate');
  if (cert) {
    common.clientCert = loadPem(cert, 'cert');
    common.clientKey = loadPem(certKey ?? cert, 'key');
  }
  const endpoint = opts.osEndpoint ?? opts.endpoint ?? env['NOVA_ENDPOINT'];
  const token = opts.osToken ?? opts.token ?? env['NOVA_TOKEN'];
  const envAuthUrl = opts.osAuthUrl ?? env['OS_AUTH_URL'];
  // python-openstackclient: --os-token with --os-endpoint (or OS_TOKEN and OS_ENDPOINT) and no
  // auth URL is the token as it is, without Keystone.
  const envToken = env['OS_TOKEN'];
  const envEndpoint = env['OS_ENDPOINT'];
  // Where the token came from, for the hint a 401 gets (`tokenHint`): never the token itself.
  const tokenWhere = opts.osToken !== undefined ? '--os-token' : opts.token !== undefined ? '--token' : 'NOVA_TOKEN';
  const direct =
    endpoint && token
      ? { endpoint, token, where: tokenWhere }
      : !envAuthUrl && envToken && (endpoint ?? envEndpoint)
        ? { endpoint: (endpoint ?? envEndpoint)!, token: envToken, where: 'OS_TOKEN' }
        : undefined;
  if (direct && !opts.osCloud && !opts.osAuthUrl) {
    // The project of a ledger and a quota read: --os-project-id (OS_PROJECT_ID), else the client's
    // own (a noauth token `user:project`), as NovaClient.fromEnv() does.
    const projectId = opts.osProjectId ?? env['OS_PROJECT_ID'];
    const client = new NovaClient({ ...common, endpoint: direct.endpoint, token: direct.token, ...(projectId ? { projectId } : {}) });
    noteGivenToken(client, direct.where);
    return client;
  }
  // Half of the token pair and no Keystone or cloud to complete it: say which half is missing (not
  // the "envvars" cloud's missing auth_url, which OS_ENDPOINT alone would otherwise lead to).
  const anyEndpoint = endpoint ?? envEndpoint;
  const anyToken = token ?? envToken;
  if (!envAuthUrl && !opts.osCloud && !env['OS_CLOUD'] && Boolean(anyEndpoint) !== Boolean(anyToken)) {
    throw new ConfigError(
      anyEndpoint
        ? `the compute endpoint is set (${redactUrlSecrets(anyEndpoint)}) but no token: pass --os-token (or OS_TOKEN) with it, or use --os-cloud / OS_CLOUD`
        : 'a token is set but no endpoint: pass --os-endpoint (or OS_ENDPOINT), e.g. http://127.0.0.1:8774/v2.1, or use --os-auth-url / OS_AUTH_URL for Keystone',
    );
  }
  const overrides: Partial<NovaClientOptions> = { ...common, ...(endpoint ? { endpoint } : {}) };
  // The --os-* flags are the OS_* variables (python-openstackclient's argparse defaults read them).
  const flagEnv: Record<string, string> = {};
  const put = (name: string, value: string | undefined): void => {
    if (value !== undefined) flagEnv[name] = value;
  };
  put('OS_AUTH_URL', opts.osAuthUrl);
  put('OS_USERNAME', opts.osUsername);
  put('OS_PASSWORD', opts.osPassword);
  put('OS_PROJECT_NAME', opts.osProjectName);
  put('OS_TOKEN', opts.osToken);
  for (const [flag, name] of FLAG_VARS) put(name, opts[flag] as string | undefined);
  const merged = { ...env, ...flagEnv };
  let config: CloudConfig;
  try {
    config = loadCloudConfig({
      cloud: opts.osCloud,
      env: merged,
      onWarning: (message) => console.error(`Warning: ${message}`),
      ...(opts.osRegionName !== undefined ? { regionName: opts.osRegionName } : {}),
      ...(opts.osInterface !== undefined ? { interface: opts.osInterface } : {}),
    });
  } catch (e) {
    // Only "nothing configured at all" becomes the usage message; a broken clouds.yaml, a missing
    // cloud or field is reported as it is (it used to be hidden behind "no cloud given").
    // A missing field of the flags' cloud: name the flag when the cloud came from flags, as openstack's
    // "Missing value auth-url required for auth plugin password" names the option.
    const flag = e instanceof ConfigError && e.file === undefined && e.key !== undefined ? FLAG_OF_KEY[e.key] : undefined;
    if (flag !== undefined && Object.keys(flagEnv).length > 0 && !opts.osCloud && !env['OS_CLOUD']) {
      throw new ConfigError(`${e instanceof Error ? e.message.replace(/ \(set OS_[A-Z_]+\)$/, '') : ''}: pass ${flag} (or set ${flagVarOf(flag)})`, { key: (e as ConfigError).key, cause: e });
    }
    if (e instanceof ConfigError && e.file === undefined && e.key === undefined) {
      throw new ConfigError(
        endpoint && !token
          ? 'an endpoint without a token: pass --os-token (or OS_TOKEN) with --os-endpoint, or use --os-cloud / OS_CLOUD'
          : token && !endpoint
            ? 'a token without an endpoint: pass --os-endpoint (or OS_ENDPOINT), e.g. http://127.0.0.1:8774/v2.1'
            : 'no cloud given: pass --os-cloud (or OS_CLOUD), or --os-auth-url and the other --os-* options (or OS_AUTH_URL and the other OS_* variables), or --os-endpoint and --os-token',
      );
    }
    throw e;
  }
  const authUrl = config.auth.auth_url;
  const given = config.auth_type === 'token' ? keystoneTokenWhere(config, opts, merged) : undefined;
  const resolved = authUrl === undefined ? resolveClientOptions(config, overrides) : withSlowNotice(`keystone at ${authUrl}`, () => resolveClientOptions(config, overrides));
  let clientOptions: NovaClientOptions;
  try {
    clientOptions = await resolved;
  } catch (e) {
    // Keystone refused the given token before there was a client: the error carries where it came from.
    if (given !== undefined && e instanceof Error) noteGivenToken(e, given);
    throw e;
  }
  const client = new NovaClient(clientOptions);
  if (given !== undefined) noteGivenToken(client, given);
  return client;
}

/**
 * Where the token of a cloud with `auth_type` token came from: `--os-token`, `OS_TOKEN` or
 * `OS_AUTH_TOKEN` for the environment cloud, else the cloud's `auth.token` in clouds.yaml.
 */
function keystoneTokenWhere(config: CloudConfig, opts: GlobalOptions, env: NodeJS.ProcessEnv): string {
  const fileCloud = Boolean(opts.osCloud || env['OS_CLOUD']);
  if (!fileCloud && opts.osToken !== undefined) return '--os-token';
  if (!fileCloud && env['OS_TOKEN']) return 'OS_TOKEN';
  if (!fileCloud && env['OS_AUTH_TOKEN']) return 'OS_AUTH_TOKEN';
  return `cloud '${config.name}' (auth.token)`;
}

/** The `--os-*` flags (beyond the five above) and the `OS_*` variables they stand for. */
const FLAG_VARS: ReadonlyArray<readonly [keyof GlobalOptions, string]> = [
  ['osProjectId', 'OS_PROJECT_ID'],
  ['osUserId', 'OS_USER_ID'],
  ['osUserDomainName', 'OS_USER_DOMAIN_NAME'],
  ['osUserDomainId', 'OS_USER_DOMAIN_ID'],
  ['osProjectDomainName', 'OS_PROJECT_DOMAIN_NAME'],
  ['osProjectDomainId', 'OS_PROJECT_DOMAIN_ID'],
  ['osAuthType', 'OS_AUTH_TYPE'],
  ['osApplicationCredentialId', 'OS_APPLICATION_CREDENTIAL_ID'],
  ['osApplicationCredentialName', 'OS_APPLICATION_CREDENTIAL_NAME'],
  ['osApplicationCredentialSecret', 'OS_APPLICATION_CREDENTIAL_SECRET'],
];

/** The flag of a cloud's auth key, for "missing" messages. */
const FLAG_OF_KEY: Readonly<Record<string, string>> = {
  'auth.auth_url': '--os-auth-url',
  'auth.username': '--os-username',
  'auth.password': '--os-password',
  'auth.token': '--os-token',
  'auth.application_credential_id': '--os-application-credential-id',
  'auth.application_credential_secret': '--os-application-credential-secret',
  'auth.user_id': '--os-user-id',
};

/** `--os-foo-bar` → `OS_FOO_BAR`. */
const flagVarOf = (flag: string): string => flag.slice(2).replace(/-/g, '_').toUpperCase();

/**
 * How long the CLI's requests retry a refused connection before Nova has answered once, in ms
 * (`NovaClientOptions.refusedFirstContactMs`): a wrong URL or a stopped Nova fails in about a second.
 */
export const REFUSED_FIRST_CONTACT_MS = 1000;

/**
 * For a refused connection to Nova (`ECONNREFUSED`; the error or its `cause`): `; is Nova running
 * at URL?`, the compute endpoint of the request (its URL without the resource path, query or any
 * secret); for Keystone's token request, `; is Keystone running at URL?` (the identity endpoint);
 * else `''`.
 */
export function refusedHint(error: unknown): string {
  // The refusal itself, or the error it caused (a deletion given up on).
  const e = error instanceof NovaNetworkError ? error : error instanceof Error ? error.cause : undefined;
  if (!(e instanceof NovaNetworkError) || e.code !== 'ECONNREFUSED' || e.url === undefined) return '';
  let base: string;
  let service = 'Nova';
  try {
    const u = new URL(e.url);
    // Keystone's token request (`.../v3/auth/tokens`): the refused service is Keystone, not Nova.
    const keystone = /\/auth\/tokens\/?$/.test(u.pathname);
    if (keystone) service = 'Keystone';
    base = `${u.origin}${u.pathname.replace(keystone ? /\/auth\/tokens\/?$/ : /\/(servers|flavors|images|limits|os-[a-z-]+|extensions)(\/.*)?$/, '')}`;
  } catch {
    return '';
  }
  return `; is ${service} running at ${redactUrlSecrets(withoutUserInfo(base))}?`;
}

/**
 * An error as one line: for HTTP errors also the request, the request id and, on a 404, a hint; a
 * refused connection asks whether Nova runs at the endpoint; a 401 to a token the user gave asks
 * whether that token (named by its variable or flag: `OS_TOKEN`) is expired or wrong (`tokenHint`).
 * @param client - The client the request went through, when the caller has it (for `tokenHint`).
 */
export function describeFailure(e: unknown, client?: object): string {
  if (!(e instanceof NovaApiError)) return `${(e as Error).message}${tokenHint(e, client)}`;
  if (refusedHint(e) !== '') return `${e.message}${refusedHint(e)}`;
  // Network errors already name the request in their message.
  const named = e.url !== undefined && e.message.includes(e.url);
  const where =
    e.method && e.url && !named
      ? ` (${e.method} ${e.url}${e.requestId ? `, request ${e.requestId}` : ''})`
      : e.requestId
        ? ` (request ${e.requestId})`
        : '';
  const hint =
    e.status === 404 && e.url && !/\/v2(\.1)?(\/|$)/.test(e.url) ? '; the compute endpoint usually ends in /v2.1' : '';
  return `${e.message}${where}${hint}${tokenHint(e, client)}`;
}

/**
 * The quota ledger a command shares: its `--ledger` flag, else `NOVA_GUARD_LEDGER` (blank: none),
 * checked before any connection.
 * @throws `ValidationError` (bad usage, exit 2) for a string that is not a ledger spec.
 */
export function ledgerFlag(flag: string | undefined): string | undefined {
  const spec = flag ?? (process.env[LEDGER_ENV]?.trim() || undefined);
  if (spec !== undefined) parseLedgerSpec(spec);
  return spec;
}
