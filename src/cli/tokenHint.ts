/**
 * The hint a refused token gets: when Nova or Keystone answers 401 to a token the user gave
 * (`OS_TOKEN`, `--os-token`, the older `NOVA_TOKEN`/`--token`, a cloud's `auth.token`), the failure
 * line asks `; is the token in OS_TOKEN expired or wrong?`, as a refused connection asks whether Nova
 * runs at the endpoint (`refusedHint`). Only the name of the variable, flag or cloud is shown, never
 * the token.
 *
 * `clientFromOptions` notes where the token of the client it built came from (and on the error when
 * Keystone refused it before a client existed); the failure lines look it up.
 *
 * @module
 */
import { NovaApiError } from '../errors/index.js';

/** Where the token of a client (or of a refused Keystone request) came from: `OS_TOKEN`, `--os-token`, ... */
const GIVEN_TOKENS = new WeakMap<object, string>();

/**
 * Note that `target` (a client built from a given token, or the error Keystone answered to it) uses the
 * token named by `where`: a variable (`OS_TOKEN`), a flag (`--os-token`) or `cloud 'ci' (auth.token)`.
 */
export function noteGivenToken(target: object, where: string): void {
  GIVEN_TOKENS.set(target, where);
}

/** A 401 (`AuthError`), itself or as the cause of the error (a deletion given up on). */
function unauthorized(error: unknown): NovaApiError | undefined {
  if (error instanceof NovaApiError && error.status === 401) return error;
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof NovaApiError && cause.status === 401 ? cause : undefined;
}

/**
 * For a 401 to a token the user gave: `; is the token in OS_TOKEN expired or wrong? ('openstack token
 * issue' gives a new one)`, naming where it came from; else `''` (no 401, or credentials that are not
 * a given token: a password's 401 is not the token's fault).
 * @param client - The client the failed request went through, when there was one.
 */
export function tokenHint(error: unknown, client?: object): string {
  const e = unauthorized(error);
  if (e === undefined) return '';
  const where = GIVEN_TOKENS.get(e) ?? (error instanceof Error ? GIVEN_TOKENS.get(error) : undefined) ?? (client ? GIVEN_TOKENS.get(client) : undefined);
  return where === undefined ? '' : `; is the token in ${where} expired or wrong? ('openstack token issue' gives a new one)`;
}
