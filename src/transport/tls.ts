/**
 * TLS options shared by the Keystone provider and the configuration loader: the CA bundle
 * (`OS_CACERT` / `cacert`), a client certificate (`OS_CERT`/`OS_KEY`, `cert`/`key`) and turning
 * verification off (`OS_INSECURE` / `verify: false`).
 *
 * Source: openstacksdk `CloudRegion.get_requests_verify_args` (verify off beats cacert; `verify`
 * becomes the cacert path, which requests uses as the only bundle; `cert` is `(cert, key)`),
 * keystoneauth's `Session(verify=..., cert=...)`. For a private CA that is already in the system
 * store, run Node.js with `--use-system-ca` (Node 22.15+/24) instead of giving `cacert`.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { homedir } from 'node:os';
import { ConfigError } from '../errors/index.js';
import type { Logger } from '../core/logger.js';

/** TLS options. */
export interface TlsOptions {
  /**
   * The CA bundle: the ONLY certificates trusted (Node's built-in CAs are not, as with requests'
   * `verify=<path>`): PEM text (anything containing `-----BEGIN`), a Buffer, or the path of a PEM
   * file (`~/` is expanded).
   */
  caCert?: string | Buffer | undefined;
  /** Client certificate (PEM text, Buffer or path), presented to the server (`OS_CERT`). */
  clientCert?: string | Buffer | undefined;
  /** Private key of `clientCert` (PEM text, Buffer or path; `OS_KEY`). Default: read from `clientCert`. */
  clientKey?: string | Buffer | undefined;
  /** Turn certificate verification off. Default false. Logs a warning. Beats `caCert`. */
  insecure?: boolean | undefined;
}

/**
 * `caCert` as PEM content: PEM text and Buffers are returned as they are, a path is read.
 * @throws {@link ConfigError} (key `cacert`, naming the file) when the file cannot be read.
 */
export function loadCaCert(caCert: string | Buffer): string | Buffer {
  return loadPem(caCert, 'cacert');
}

/** What {@link loadPem} reads: the configuration key it is named by in errors. */
export type PemKey = 'cacert' | 'cert' | 'key';

const PEM_WHAT: Record<PemKey, string> = { cacert: 'CA certificate', cert: 'client certificate', key: 'client key' };

/**
 * `pem` as PEM content: PEM text and Buffers are returned as they are, a path (`~/` expanded) is read.
 * @throws {@link ConfigError} (key `key`, naming the file, never its content) when the file cannot be read.
 */
export function loadPem(pem: string | Buffer, key: PemKey): string | Buffer {
  if (Buffer.isBuffer(pem) || pem.includes('-----BEGIN')) return pem;
  const file = pem.startsWith('~/') ? homedir() + pem.slice(1) : pem;
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown error';
    throw new ConfigError(`cannot read the ${PEM_WHAT[key]} file ${file} (${key}): ${code}`, { file, key });
  }
}

/**
 * The https.Agent options of `options` (CA bundle, client certificate and key, verification off),
 * or undefined when the defaults apply (verification on, Node's CAs): what the transport builds its
 * shared agent and its agent for fresh connections with (`transport.ts`), so that both trust and
 * present exactly the same certificates. `insecure` logs the warning on `logger`, naming `what`
 * when given (`... (insecure) for Keystone: ...`).
 * @throws {@link ConfigError} when a CA, certificate or key file cannot be read, or a key is given without its certificate.
 */
export function tlsAgentOptions(options: TlsOptions, logger?: Logger, what?: string): https.AgentOptions | undefined {
  const given = (v: string | Buffer | undefined): v is string | Buffer => v !== undefined && v !== '';
  const client: https.AgentOptions = {};
  if (given(options.clientCert)) {
    client.cert = loadPem(options.clientCert, 'cert');
    client.key = loadPem(given(options.clientKey) ? options.clientKey : options.clientCert, given(options.clientKey) ? 'key' : 'cert');
  } else if (given(options.clientKey)) {
    throw new ConfigError('a client key (key) is given without its certificate (cert)', { key: 'cert' });
  }
  if (options.insecure) {
    logger?.warn(`TLS verification is turned off (insecure)${what ? ` for ${what}` : ''}: the server certificate is not checked`);
    return { rejectUnauthorized: false, ...client };
  }
  if (given(options.caCert)) {
    const pem = loadCaCert(options.caCert);
    return { ca: [typeof pem === 'string' ? pem : pem.toString('utf8')], ...client };
  }
  return client.cert !== undefined ? client : undefined;
}
