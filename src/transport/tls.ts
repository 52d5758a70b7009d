/**
 * TLS options shared by the Keystone provider and the configuration loader: extra CA certificates
 * (`OS_CACERT` / `cacert`) and turning verification off (`OS_INSECURE` / `verify: false`).
 *
 * Source: openstacksdk `CloudRegion.get_requests_verify_args` (verify off beats cacert; cacert adds
 * trust), keystoneauth's `Session(verify=...)`.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { homedir } from 'node:os';
import { rootCertificates } from 'node:tls';
import { ConfigError } from '../errors/index.js';
import type { Logger } from '../core/logger.js';

/** TLS options. */
export interface TlsOptions {
  /**
   * Extra CA certificates, trusted in addition to Node's defaults: PEM text (anything containing
   * `-----BEGIN`), a Buffer, or the path of a PEM file (`~/` is expanded).
   */
  caCert?: string | Buffer | undefined;
  /** Turn certificate verification off. Default false. Logs a warning. Beats `caCert`. */
  insecure?: boolean | undefined;
}

/**
 * `caCert` as PEM content: PEM text and Buffers are returned as they are, a path is read.
 * @throws {@link ConfigError} (key `cacert`, naming the file) when the file cannot be read.
 */
export function loadCaCert(caCert: string | Buffer): string | Buffer {
  if (Buffer.isBuffer(caCert) || caCert.includes('-----BEGIN')) return caCert;
  const file = caCert.startsWith('~/') ? homedir() + caCert.slice(1) : caCert;
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown error';
    throw new ConfigError(`cannot read the CA certificate file ${file} (cacert): ${code}`, { file, key: 'cacert' });
  }
}

/**
 * An https.Agent for `options`, or undefined when the defaults apply (verification on, Node's CAs).
 * `insecure` gives `rejectUnauthorized: false` and logs a warning on `logger`.
 * @throws {@link ConfigError} when the CA file cannot be read.
 */
export function httpsAgentFor(options: TlsOptions, logger?: Logger, what = 'Keystone'): https.Agent | undefined {
  return tlsAgent(options, logger, what);
}

/**
 * Like {@link httpsAgentFor}; the warning names `what` when given (`... (insecure) for Keystone: ...`),
 * else no service.
 */
export function tlsAgent(options: TlsOptions, logger?: Logger, what?: string): https.Agent | undefined {
  if (options.insecure) {
    logger?.warn(`TLS verification is turned off (insecure)${what ? ` for ${what}` : ''}: the server certificate is not checked`);
    return new https.Agent({ rejectUnauthorized: false });
  }
  if (options.caCert !== undefined && options.caCert !== '') {
    const pem = loadCaCert(options.caCert);
    return new https.Agent({ ca: [...rootCertificates, typeof pem === 'string' ? pem : pem.toString('utf8')] });
  }
  return undefined;
}
