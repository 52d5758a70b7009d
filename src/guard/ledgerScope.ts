/**
 * The guard's side of a ledger's scope (`QuotaLedger.scope`, `bindScope`): one ledger serves one
 * endpoint and project, so a guard whose client is of another is refused before any request.
 *
 * Why: a `RedisQuotaLedger` made for project A, given to a guard of project B, subtracts A's claims
 * from B's headroom and shares A's `/limits` readings with B: B's creates then fail with quota 403s
 * although B has room (field case: 16 quota 403s, 2 of 4 creates failed).
 *
 * - At construction: a ledger whose scope is known and a client whose `projectId` is known must
 *   name the same project.
 * - Before the guard's first request (its first call of `createServer`, `withQuotaGuard` or
 *   `headroom`): `ledger.bindScope({ endpoint: await client.endpoint(), projectId })`; the endpoint
 *   comes from the options or the catalog (a Keystone request at most, no Nova request). A client
 *   without a project id is checked on the endpoint alone.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import { ledgerScope, normaliseEndpoint, sameScope, type LedgerScope } from '../core/endpoint.js';
import { redactUrlSecrets } from '../core/redact.js';
import type { NovaClient } from '../nova/client.js';
import type { QuotaLedger } from './ledger.js';

/** `scope` in words, for errors. */
export function describeScope(scope: { endpoint?: string | undefined; projectId?: string | undefined }): string {
  const endpoint = scope.endpoint === undefined ? '(endpoint unknown)' : redactUrlSecrets(normaliseEndpoint(scope.endpoint, scope.projectId));
  return `project ${scope.projectId === undefined ? '(unknown)' : JSON.stringify(scope.projectId)} on ${endpoint}`;
}

/** The error of a ledger of `ledgerScope` used by a guard of `guardScope`. */
export function scopeMismatch(kind: string, ledger: LedgerScope, guard: { endpoint?: string | undefined; projectId?: string | undefined }): ValidationError {
  return new ValidationError(
    `this ${kind} quota ledger serves ${describeScope(ledger)}, but the guard's client is for ${describeScope(guard)}: ` +
      'one ledger serves one endpoint and project (make one per project and endpoint)',
  );
}

/**
 * At construction: refuse a ledger whose project is not the client's, when both are known.
 * @throws ValidationError (see {@link scopeMismatch}).
 */
export function checkScopeNow(ledger: QuotaLedger, client: NovaClient): void {
  const scope = ledger.scope;
  if (scope !== undefined && client.projectId !== undefined && scope.projectId !== client.projectId) {
    throw scopeMismatch(ledger.kind, scope, { projectId: client.projectId });
  }
}

/**
 * Before the first request: bind the ledger to the client's endpoint and project, or refuse it
 * (nothing to do without a `ledger` option: the guard's own ledger is always of its client).
 * @throws ValidationError when the ledger serves another endpoint or project; the client's error
 * when its endpoint cannot be found (the catalog).
 */
export async function bindLedgerScope(ledger: QuotaLedger | undefined, client: NovaClient, signal?: AbortSignal): Promise<void> {
  if (ledger === undefined || (typeof ledger.bindScope !== 'function' && ledger.scope === undefined)) return;
  const endpoint = await client.endpoint(signal);
  const projectId = client.projectId;
  if (projectId === undefined) {
    // Only the endpoint can be checked.
    const scope = ledger.scope;
    if (scope !== undefined && normaliseEndpoint(scope.endpoint, scope.projectId) !== normaliseEndpoint(endpoint, scope.projectId)) {
      throw scopeMismatch(ledger.kind, scope, { endpoint });
    }
    return;
  }
  if (typeof ledger.bindScope === 'function') {
    ledger.bindScope(ledgerScope(endpoint, projectId));
    return;
  }
  const mine = ledgerScope(endpoint, projectId);
  if (!sameScope(ledger.scope!, mine)) throw scopeMismatch(ledger.kind, ledger.scope!, mine);
}

/**
 * The endpoint and project a ledger's `forClient` keys itself by: `options.endpoint` and
 * `options.projectId` when given, else the client's (`await client.endpoint()`, `client.projectId`).
 * `options.endpoint` may name the client's Nova by another URL (hosts reaching one Nova through
 * different addresses key one ledger); `options.projectId` may not name another project than the
 * client's own (its creates, and a fleet watcher's looks, are that project's).
 * @throws `ValidationError` naming `what` when the client has no project id and none is given, or
 * when `options.projectId` is not the client's project id.
 */
export async function clientScope(what: string, client: NovaClient, options: { endpoint?: string | undefined; projectId?: string | undefined }): Promise<{ endpoint: string; projectId: string }> {
  const projectId = options.projectId ?? client.projectId;
  if (projectId === undefined) throw new ValidationError(`${what}: the client has no projectId; pass projectId`);
  if (client.projectId !== undefined && projectId !== client.projectId) {
    throw new ValidationError(`${what}: projectId ${projectId} is not the client's project (${client.projectId}); a ledger and its client serve one project`);
  }
  return { endpoint: options.endpoint ?? (await client.endpoint()), projectId };
}
