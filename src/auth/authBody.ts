/**
 * The credentials of {@link KeystoneAuth} and the `POST /v3/auth/tokens` request body built from them.
 *
 * Sources: Keystone API reference "Password authentication with scoped authorization",
 * "Authenticating with an Application Credential", "Token authentication with scoped authorization"
 * (`api-ref/source/v3/authenticate-v3.inc`, `application-credentials.inc`); keystoneauth1
 * `identity/v3/password.py`, `application_credential.py`, `token.py` (which parts go into the body).
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import { checkHeaderToken } from '../core/validate.js';
import { revealSecret, type Secret } from '../core/secret.js';

/** The three ways nova-guard authenticates against Keystone v3. */
export type KeystoneMethod = 'password' | 'application_credential' | 'token';

/** Credentials of {@link KeystoneAuth}: every field is optional, `validateCredentials` checks the combination. */
export interface KeystoneCredentials {
  /**
   * `password` (user + password, project-scoped), `application_credential` (pre-scoped, no scope sent)
   * or `token` (an existing token). Inferred when absent: `token` if `token` is set, else
   * `application_credential` if `applicationCredentialSecret` is set, else `password`.
   */
  method?: KeystoneMethod;
  /** User name (with `userDomainName` or `userDomainId`); or give `userId`. */
  username?: string;
  /** User id: needs no domain. */
  userId?: string;
  /** Domain of the user, by name. */
  userDomainName?: string;
  /** Domain of the user, by id. */
  userDomainId?: string;
  /** Password (secret): a string, or a {@link Secret} (as `loadCloudConfig` gives it). */
  password?: string | Secret;
  /** Project to scope to, by name (with `projectDomainName` or `projectDomainId`); or give `projectId`. */
  projectName?: string;
  /** Project to scope to, by id. */
  projectId?: string;
  /** Domain of the project, by name. */
  projectDomainName?: string;
  /** Domain of the project, by id. */
  projectDomainId?: string;
  /** Default for both `userDomainName` and `projectDomainName` (`OS_DOMAIN_NAME`). */
  domainName?: string;
  /** Default for both `userDomainId` and `projectDomainId` (`OS_DOMAIN_ID`). */
  domainId?: string;
  /** Application credential id; or give `applicationCredentialName` plus the owning user. */
  applicationCredentialId?: string;
  /** Application credential name (with `userId`, or `username` + user domain). */
  applicationCredentialName?: string;
  /** Application credential secret (secret): a string or a {@link Secret}. */
  applicationCredentialSecret?: string | Secret;
  /** An existing token (secret), for the `token` method: a string or a {@link Secret}. */
  token?: string | Secret;
}

/** The secret fields of {@link KeystoneCredentials}. */
export const SECRET_CREDENTIAL_KEYS = ['password', 'applicationCredentialSecret', 'token'] as const;

/**
 * {@link KeystoneCredentials} with their secrets as strings: what `KeystoneAuth` keeps, in a private
 * field, and sends (`revealCredentials`).
 */
export type RevealedCredentials = Omit<KeystoneCredentials, (typeof SECRET_CREDENTIAL_KEYS)[number]> & { password?: string; applicationCredentialSecret?: string; token?: string };

/**
 * `creds` with each secret's value ({@link revealSecret}).
 * @throws {@link ValidationError} for a secret that is neither a string nor a {@link Secret} (a
 * `structuredClone` copy of a `Secret` is an empty object: the message says so).
 */
export function revealCredentials(creds: KeystoneCredentials): RevealedCredentials {
  const out: Record<string, unknown> = { ...creds };
  for (const k of SECRET_CREDENTIAL_KEYS) if (creds[k] !== undefined) out[k] = revealSecret(creds[k], k);
  return out as RevealedCredentials;
}

/** Keystone's default domain id, used when a name is given without a domain (osc-lib `--os-default-domain`). */
export const DEFAULT_DOMAIN_ID = 'default';

/** Which method `creds` use: `creds.method`, or inferred (see {@link KeystoneCredentials.method}). */
export function methodOf(creds: RevealedCredentials): KeystoneMethod {
  if (creds.method) return creds.method;
  if (creds.token !== undefined) return 'token';
  if (creds.applicationCredentialSecret !== undefined) return 'application_credential';
  return 'password';
}

function nonEmpty(name: string, value: unknown): void {
  if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
    throw new ValidationError(`${name} must be a non-empty string`);
  }
}

/**
 * Check that `creds` name exactly one way to authenticate. Error messages name options, never values.
 * @throws {@link ValidationError} for a missing secret, a missing user, a scope given with an
 * application credential, or an unknown method.
 */
export function validateCredentials(creds: RevealedCredentials): KeystoneMethod {
  for (const [k, v] of Object.entries(creds)) nonEmpty(k, v);
  const method = methodOf(creds);
  const hasUser = creds.userId !== undefined || creds.username !== undefined;
  if (method === 'password') {
    if (creds.password === undefined) throw new ValidationError('password auth needs password');
    if (!hasUser) throw new ValidationError('password auth needs username (with a user domain) or userId');
  } else if (method === 'application_credential') {
    if (creds.applicationCredentialSecret === undefined) throw new ValidationError('application credential auth needs applicationCredentialSecret');
    if (creds.applicationCredentialId === undefined) {
      if (creds.applicationCredentialName === undefined) {
        throw new ValidationError('application credential auth needs applicationCredentialId, or applicationCredentialName with userId or username');
      }
      if (!hasUser) throw new ValidationError('applicationCredentialName needs userId, or username with a user domain');
    }
    if (creds.projectId !== undefined || creds.projectName !== undefined) {
      throw new ValidationError('application credentials are scoped to their own project: do not give projectId or projectName');
    }
  } else if (method === 'token') {
    if (creds.token === undefined) throw new ValidationError('token auth needs token');
    checkHeaderToken('token', creds.token);
  } else {
    throw new ValidationError(`method must be password, application_credential or token, got ${JSON.stringify(method)}`);
  }
  return method;
}

type Domain = { id: string } | { name: string };

function domainOf(id: string | undefined, name: string | undefined, creds: RevealedCredentials): Domain {
  if (id !== undefined) return { id };
  if (name !== undefined) return { name };
  if (creds.domainId !== undefined) return { id: creds.domainId };
  if (creds.domainName !== undefined) return { name: creds.domainName };
  return { id: DEFAULT_DOMAIN_ID };
}

function userOf(creds: RevealedCredentials): Record<string, unknown> {
  if (creds.userId !== undefined) return { id: creds.userId };
  return { name: creds.username, domain: domainOf(creds.userDomainId, creds.userDomainName, creds) };
}

function scopeOf(creds: RevealedCredentials): Record<string, unknown> | undefined {
  if (creds.projectId !== undefined) return { project: { id: creds.projectId } };
  if (creds.projectName !== undefined) {
    return { project: { name: creds.projectName, domain: domainOf(creds.projectDomainId, creds.projectDomainName, creds) } };
  }
  return undefined;
}

/**
 * The JSON body of `POST /v3/auth/tokens` for `creds` (validated first). Application credentials
 * never carry a `scope` (Keystone answers 401 "Application credentials cannot request a scope.").
 * The result holds secrets: never log it.
 */
export function authRequestBody(creds: RevealedCredentials): { auth: Record<string, unknown> } {
  const method = validateCredentials(creds);
  if (method === 'application_credential') {
    const ac: Record<string, unknown> = { secret: creds.applicationCredentialSecret };
    if (creds.applicationCredentialId !== undefined) ac['id'] = creds.applicationCredentialId;
    else {
      ac['name'] = creds.applicationCredentialName;
      ac['user'] = userOf(creds);
    }
    return { auth: { identity: { methods: ['application_credential'], application_credential: ac } } };
  }
  const identity =
    method === 'password'
      ? { methods: ['password'], password: { user: { ...userOf(creds), password: creds.password } } }
      : { methods: ['token'], token: { id: creds.token } };
  const scope = scopeOf(creds);
  return { auth: scope ? { identity, scope } : { identity } };
}

/** The secrets among `creds` (password, application credential secret, token). */
export function credentialSecrets(creds: RevealedCredentials): string[] {
  return [creds.password, creds.applicationCredentialSecret, creds.token].filter((s): s is string => typeof s === 'string' && s.length > 0);
}

/** A description of who authenticates, for log lines and error messages (no secrets). */
export function describeCredentials(creds: RevealedCredentials): string {
  const method = methodOf(creds);
  if (method === 'application_credential') {
    return `application credential ${creds.applicationCredentialId ?? creds.applicationCredentialName ?? '?'}`;
  }
  const who = method === 'token' ? 'token' : `user ${creds.userId ?? creds.username ?? '?'}`;
  const project = creds.projectId ?? creds.projectName;
  return project ? `${who}, project ${project}` : who;
}
