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
import type { QuotaLedger } from './port.js';

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
  if (ledger === undefined) return;
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
  ledger.bindScope(ledgerScope(endpoint, projectId));
}

/** What a ledger's `forClient` may say of its scope (both only checked against the client's own). */
export interface ClientScopeOptions {
  /** Another spelling of the client's endpoint (refused when it names another). */
  readonly endpoint?: string | undefined;
  /** The client's project id (refused when it is not the client's, nor its token's). */
  readonly projectId?: string | undefined;
}

/**
 * The project ids `client` knows for itself: its `projectId` (given, or from a noauth token) and the
 * project its auth provider's tokens are scoped to (`AuthProvider.getProjectId`). With `learn`, a
 * provider that does not know it yet is asked for a token first (a Keystone request, no Nova
 * request): a credential naming its project by name, or an application credential, says its
 * project only with its first token.
 */
async function knownProjects(client: NovaClient, learn: boolean): Promise<{ client: string | undefined; token: string | undefined }> {
  const auth = client.auth;
  const tokenProject = (): string | undefined => {
    const id: unknown = auth.getProjectId?.();
    return typeof id === 'string' && id !== '' ? id : undefined;
  };
  let token = tokenProject();
  if (token === undefined && learn && auth.getProjectId !== undefined) {
    await auth.getToken();
    token = tokenProject();
  }
  return { client: client.projectId, token };
}

/**
 * Whether a ledger's `forClient` starts the fleet watcher (its `fleetWatcher` option): as given when
 * given; by default (`undefined`) on, unless the client cannot take part: it does not know its
 * project (asked of its auth provider as {@link clientScope} with `fleet` asks: a Keystone token
 * request at most, no Nova request), or another fleet link is attached to its delete engine (one
 * fleet per client: a second ledger on the same client, an `InProcessFleet`). A watcher looks with
 * the client's token, so a client whose project is unknown never joins; a ledger without the
 * watcher works as before (each process looks by itself). `why` is told why a default stays off.
 * A token request that fails (Keystone out of reach) leaves the default off too: the ledger is
 * still made, as it was before the watcher was its default.
 */
export async function fleetWatcherWanted(client: NovaClient, fleetWatcher: boolean | undefined, why: (reason: string) => void = () => undefined): Promise<boolean> {
  if (fleetWatcher !== undefined) return fleetWatcher;
  let known: Awaited<ReturnType<typeof knownProjects>>;
  try {
    known = await knownProjects(client, true);
  } catch (error) {
    why(`the client could not learn its project (its token request failed: ${error instanceof Error ? error.name : 'error'})`);
    return false;
  }
  if ((known.client ?? known.token) === undefined) {
    why('the client does not know its project (set projectId on the NovaClient)');
    return false;
  }
  if (client.deleteEngine.fleetAttached) {
    why('another fleet link is attached to this client (one fleet per client)');
    return false;
  }
  return true;
}

/**
 * The endpoint and project a ledger's `forClient` keys itself by: always the client's own, the Nova
 * its requests (and a fleet watcher's looks) go to.
 *
 * - Endpoint: `await client.endpoint()` (the options' or the catalog's). `options.endpoint` may only
 *   spell it another way (scheme and host case, default port, trailing slash, a trailing
 *   `/<projectId>`: compared with `ledgerScope`/`sameScope`, as `InProcessFleet.join` compares
 *   them); naming another Nova is refused. Why: a host keyed to the fleet's Nova but talking to
 *   another (another region, a staging Nova, a catalog override) and elected fleet watcher gets its
 *   own Nova's 404 for the other hosts' servers and would publish them as proofs of deletion.
 * - Project: `options.projectId`, else the client's. Refused when the client knows another: its
 *   `projectId`, or the project its token is scoped to (`AuthProvider.getProjectId`); and when the
 *   client's `projectId` and its token's project differ.
 * - `fleet` (the ledger's `fleetWatcher`): the client must know its project (as `InProcessFleet.join`
 *   requires): the provider is asked for a token when it does not know it yet; a client that cannot
 *   know it (a bare token with no `projectId`) is refused, `options.projectId` or not: the watcher
 *   looks with this client's token, and a token of another project gets Nova's 404 for the
 *   project's servers.
 *
 * Makes no Nova request (the catalog and the token: Keystone requests at most).
 * @throws `ValidationError` naming `what` and both sides: an `options.endpoint` of another Nova; a
 * project id that is not the client's or its token's; no project id at all (neither given nor the
 * client's); with `fleet`, a client that does not know its project.
 */
export async function clientScope(what: string, client: NovaClient, options: ClientScopeOptions, fleet = false): Promise<{ endpoint: string; projectId: string }> {
  const known = await knownProjects(client, fleet);
  if (known.client !== undefined && known.token !== undefined && known.client !== known.token) {
    throw new ValidationError(`${what}: the client's projectId ${JSON.stringify(known.client)} is not the project its token is scoped to (${JSON.stringify(known.token)}); a ledger and its client serve one project`);
  }
  const own = known.client ?? known.token;
  const projectId = options.projectId ?? own;
  if (own !== undefined && projectId !== own) {
    throw new ValidationError(`${what}: projectId ${projectId} is not the client's project (${own}); a ledger and its client serve one project`);
  }
  const endpoint = await client.endpoint();
  if (options.endpoint !== undefined) {
    const given = ledgerScope(String(options.endpoint), projectId ?? '');
    const mine = ledgerScope(endpoint, projectId ?? '');
    if (!sameScope(given, mine)) {
      throw new ValidationError(
        `${what}: endpoint ${JSON.stringify(redactUrlSecrets(given.endpoint))} is not the client's endpoint ${JSON.stringify(redactUrlSecrets(mine.endpoint))}: ` +
          "a ledger is keyed by the Nova its client talks to (a fleet watcher's 404s from another Nova would be taken for deletions); leave endpoint out",
      );
    }
  }
  if (fleet && own === undefined) {
    throw new ValidationError(
      `${what}: the client does not know its project (no projectId, and its token does not say); a fleet answers for one project and its watcher looks with this client's token: ` +
        'set projectId on the NovaClient (the project its token is scoped to)',
    );
  }
  if (projectId === undefined) throw new ValidationError(`${what}: the client has no projectId; pass projectId`);
  return { endpoint, projectId };
}
