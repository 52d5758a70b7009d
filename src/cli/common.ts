/**
 * Shared pieces of the `nova-guard` command line: global connection options and how a client is
 * built from them, the environment, or clouds.yaml.
 *
 * @module
 */
import type { Command } from 'commander';
import { pino } from 'pino';
import { NovaClient, type NovaClientOptions } from '../nova/client.js';
import { loadCloudConfig, resolveClientOptions, type CloudConfig } from '../config/load.js';
import { ConfigError, NovaApiError, ValidationError } from '../errors/index.js';
import { loadCaCert } from '../transport/tls.js';
import type { Logger } from '../core/logger.js';

/** Global options every subcommand accepts (like the `openstack` command's `--os-*` options). */
export interface GlobalOptions {
  endpoint?: string;
  token?: string;
  osCloud?: string;
  microversion?: string;
  requestTimeoutMs?: string;
  insecure?: boolean;
  osCacert?: string;
  debug?: boolean;
}

/** Add the global connection options to the root program. */
export function addGlobalOptions(program: Command): Command {
  return program
    .option('--endpoint <url>', 'compute endpoint, e.g. http://127.0.0.1:8774/v2.1 (env NOVA_ENDPOINT)')
    .option('--token <token>', 'token sent as X-Auth-Token (env NOVA_TOKEN)')
    .option('--os-cloud <name>', 'cloud from clouds.yaml (env OS_CLOUD)')
    .option('--microversion <version>', 'compute API microversion (env OS_COMPUTE_API_VERSION)', undefined)
    .option('--request-timeout-ms <ms>', 'time limit of each HTTP request in ms', undefined)
    .option('--insecure', 'turn TLS verification off (env OS_INSECURE)')
    .option('--os-cacert <file>', 'CA bundle to verify TLS with (env OS_CACERT)')
    .option('--debug', 'log requests (never tokens) to stderr');
}

/**
 * Parse a whole, positive number of milliseconds from a CLI flag, written in decimal digits only:
 * `0x10`, `1e3`, `0b1`, `1.5`, ` 5` and `Infinity` are refused (`Number()` would take them).
 * @throws {@link ValidationError} naming the flag.
 */
export function parseMs(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw new ValidationError(`${flag} must be a positive number of milliseconds, got ${JSON.stringify(value)}`);
  return n;
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

/** The logger of the CLI: silent unless --debug (then pino to stderr). */
export function cliLogger(opts: GlobalOptions): Logger {
  return pino({ level: opts.debug ? 'debug' : 'silent' }, pino.destination(2));
}

/**
 * Build a client the way the `openstack` command finds its cloud: `--endpoint`/`--token` (or
 * `NOVA_ENDPOINT`/`NOVA_TOKEN`) when given; else `--os-cloud`/`OS_CLOUD`/`OS_*`/the only cloud of
 * clouds.yaml through Keystone (`loadCloudConfig`).
 * @throws {@link ValidationError} when no cloud is configured at all or a flag is bad;
 * {@link ConfigError} for a broken clouds.yaml, an unknown cloud or an unreadable CA file;
 * {@link AuthError} when Keystone rejects the credentials.
 */
export async function clientFromOptions(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Promise<NovaClient> {
  const logger = cliLogger(opts);
  const common: Partial<NovaClientOptions> = { logger };
  const microversion = opts.microversion ?? env['OS_COMPUTE_API_VERSION'];
  if (microversion) common.microversion = microversion;
  const rt = parseMs(opts.requestTimeoutMs, '--request-timeout-ms');
  if (rt) common.requestTimeoutMs = rt;
  if (opts.insecure || /^true$/i.test(env['OS_INSECURE'] ?? '')) common.insecure = true;
  const cacert = opts.osCacert ?? env['OS_CACERT'];
  // A missing or unreadable file is a ConfigError naming it (key cacert), not a raw ENOENT.
  if (cacert) common.caCert = loadCaCert(cacert);
  const endpoint = opts.endpoint ?? env['NOVA_ENDPOINT'];
  const token = opts.token ?? env['NOVA_TOKEN'];
  if (endpoint && token && !opts.osCloud) {
    return new NovaClient({ ...common, endpoint, token });
  }
  const overrides: Partial<NovaClientOptions> = { ...common, ...(endpoint ? { endpoint } : {}) };
  let config: CloudConfig;
  try {
    config = loadCloudConfig({ cloud: opts.osCloud, env });
  } catch (e) {
    // Only "nothing configured at all" becomes the usage message; a broken clouds.yaml, a missing
    // cloud or field is reported as it is (it used to be hidden behind "no cloud given").
    if (e instanceof ConfigError && e.file === undefined && e.key === undefined) {
      throw new ValidationError(
        endpoint && !token
          ? 'an endpoint without a token: pass --token (or NOVA_TOKEN) with --endpoint, or use --os-cloud / OS_CLOUD'
          : token && !endpoint
            ? 'a token without an endpoint: pass --endpoint (or NOVA_ENDPOINT), e.g. http://127.0.0.1:8774/v2.1'
            : 'no cloud given: pass --endpoint and --token (or NOVA_ENDPOINT and NOVA_TOKEN), or --os-cloud / OS_CLOUD, or OS_AUTH_URL and the other OS_* variables',
      );
    }
    throw e;
  }
  return new NovaClient(await resolveClientOptions(config, overrides));
}

/** An error as one line: for HTTP errors also the request, the request id and, on a 404, a hint. */
export function describeFailure(e: unknown): string {
  if (!(e instanceof NovaApiError)) return (e as Error).message;
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
  return `${e.message}${where}${hint}`;
}
