/**
 * A quota ledger from a URL, one syntax for the library and the CLI (`--ledger URL`,
 * `NOVA_GUARD_LEDGER`): `redis://…` or `rediss://…` opens a `RedisQuotaLedger` (`nova-guard/redis`,
 * the optional peer dependency ioredis), a `QuotaLedger` object is used as it is, and undefined
 * means none (the guard's own in-process ledger).
 *
 * A Redis ledger serves one endpoint and project: the one opened here takes them from the first
 * guard that uses it (`QuotaLedger.bindScope`, called by the guard before its first request), so a
 * URL is all the caller gives.
 *
 * @module
 */
import { hostname } from 'node:os';
import { ConfigError, ValidationError } from '../errors/index.js';
import type { LoggerOption } from '../core/logger.js';
import type { LedgerScope } from '../core/endpoint.js';
import { redactUrlSecrets } from '../core/redact.js';
import type { QuotaLedger } from '../guard/index.js';

/** Options of {@link openLedger}. */
export interface OpenLedgerOptions {
  /** pino logger (or a compatible one) of the ledger; default silent. */
  logger?: LoggerOption | undefined;
}

/**
 * Open the quota ledger `spec` names.
 *
 * @param spec - `redis://[:password@]host:port[/db]` or `rediss://…`; a `QuotaLedger` (returned as
 *   it is); undefined or `''` for none.
 * @returns the ledger, or undefined when `spec` names none. The caller closes it (`close()`).
 * @throws {@link ValidationError} for any other URL ("unsupported ledger URL", the URL shown with
 *   its password redacted); {@link ConfigError} when ioredis is not installed.
 */
export async function openLedger(spec: string | QuotaLedger | undefined, options: OpenLedgerOptions = {}): Promise<QuotaLedger | undefined> {
  if (spec === undefined || spec === '') return undefined;
  if (typeof spec !== 'string') return spec;
  if (!/^rediss?:\/\//i.test(spec)) {
    throw new ValidationError(`unsupported ledger URL ${JSON.stringify(redactUrlSecrets(spec))}: give redis://host:port or rediss://host:port`);
  }
  let mod: typeof import('../redis/index.js');
  try {
    mod = await import('../redis/index.js');
  } catch (e) {
    throw new ConfigError('a redis:// ledger needs the optional peer dependency ioredis: npm install ioredis@^5', { cause: e });
  }
  return scopedOnBind((scope) => new mod.RedisQuotaLedger({ url: spec, endpoint: scope.endpoint, projectId: scope.projectId, holder, ...(options.logger ? { logger: options.logger } : {}) }), 'redis');
}

const holder = `${hostname()}:${process.pid}`;

/**
 * A ledger made at its first `bindScope` (a store keyed by endpoint and project needs them): until
 * then only `kind`, `holder` and `bindScope` answer, and `close()` does nothing; any other method
 * called before it throws.
 */
function scopedOnBind(make: (scope: LedgerScope) => QuotaLedger, kind: string): QuotaLedger {
  let inner: QuotaLedger | undefined;
  const target = { kind, holder } as Record<string | symbol, unknown>;
  const unbound = (name: string): never => {
    throw new ValidationError(`the ${kind} ledger was used (${name}) before a guard bound it to an endpoint and project`);
  };
  return new Proxy(target, {
    get(t, prop) {
      if (prop === 'bindScope') {
        return (scope: LedgerScope): void => {
          if (scope.projectId === undefined) throw new ValidationError(`a ${kind} ledger needs the client's project id (authenticate with a project, or a token that names one)`);
          if (inner === undefined) inner = make(scope);
          else inner.bindScope?.(scope);
        };
      }
      if (inner !== undefined) {
        const v = (inner as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(inner) : v;
      }
      if (prop === 'close') return () => Promise.resolve();
      if (prop === 'scope' || prop === 'then') return undefined;
      if (prop in t) return t[prop];
      return (): never => unbound(String(prop));
    },
    has(_t, prop) {
      return prop === 'bindScope' || prop === 'kind' || prop === 'holder' || (inner !== undefined && prop in inner);
    },
  }) as unknown as QuotaLedger;
}
