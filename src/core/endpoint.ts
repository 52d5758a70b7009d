/**
 * One spelling of a Nova endpoint and project, so that two spellings of the same endpoint compare
 * equal: the scope of a quota ledger (one endpoint, one project).
 *
 * @module
 */

/** The endpoint and project a quota ledger serves. */
export interface LedgerScope {
  /** The Nova compute endpoint, as {@link normaliseEndpoint} spells it. */
  readonly endpoint: string;
  /** The project id. */
  readonly projectId: string;
}

/**
 * `endpoint` in one spelling: scheme and host in lower case (WHATWG URL parsing), no default port
 * (80 for http, 443 for https), no trailing slash, and without a last path segment equal to
 * `projectId` (the legacy `/v2.1/<project_id>` form names the same endpoint). Text that is not a URL
 * is only trimmed of trailing slashes.
 */
export function normaliseEndpoint(endpoint: string, projectId?: string): string {
  let out: string;
  try {
    const u = new URL(endpoint.trim());
    u.hash = '';
    out = `${u.protocol}//${u.host}${u.pathname}${u.search}`;
  } catch {
    out = endpoint.trim();
  }
  out = out.replace(/\/+$/, '');
  if (projectId !== undefined && projectId !== '') {
    const tail = `/${encodeURIComponent(projectId)}`;
    if (out.endsWith(tail)) out = out.slice(0, -tail.length).replace(/\/+$/, '');
  }
  return out;
}

/** `{ endpoint, projectId }` with the endpoint normalised ({@link normaliseEndpoint}). */
export function ledgerScope(endpoint: string, projectId: string): LedgerScope {
  return { endpoint: normaliseEndpoint(endpoint, projectId), projectId };
}

/** True when both name the same endpoint and project. */
export function sameScope(a: LedgerScope, b: LedgerScope): boolean {
  return a.projectId === b.projectId && normaliseEndpoint(a.endpoint, a.projectId) === normaliseEndpoint(b.endpoint, b.projectId);
}

/** True when `text` parses as an `http:` or `https:` URL (a Nova endpoint a ledger is keyed by). */
export function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text.trim());
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
