/**
 * The check of a Redis ledger URL before any connection: a URL that can never work (a password
 * with an unencoded `/`, `@`, `#` or `%`, a path that is not a database number, a query ioredis
 * would take for options) is a `ValidationError` at once, never an outage with the password's tail
 * taken for a host name in the logs. Its message shows the URL without its user info.
 *
 * @module
 */
import { shownConnectionString } from '../core/redact.js';
import { ValidationError } from '../errors/index.js';

/** What the message of a malformed user info tells the user to do. */
export const REDIS_PASSWORD_RULE =
  "a password with '/', '@', '%', '#', '?' or ':' must be percent-encoded, e.g. encodeURIComponent(password): redis://:ENCODED@HOST:PORT/DB";

/**
 * Query parameters of a Redis URL that are taken: `family` (`4` or `6`: the IP version of the host
 * name's address). ioredis would take any other name for one of its options (over what the ledger
 * sets itself), so any other is refused.
 */
const QUERY_NAMES: ReadonlySet<string> = new Set(['family']);

/**
 * Check a `redis://` / `rediss://` URL as written in a ledger string or a `RedisQuotaLedger`'s
 * `url`, without connecting: `redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?family=4|6]`, where
 * the user info percent-decodes cleanly and holds no unencoded `/ ? # @` (it ends at the first of
 * them) nor control character, the host is not empty, the port is 1 to 65535, the path is empty,
 * `/` or `/` and a database number, and there is no fragment.
 * @param url - The URL (already trimmed).
 * @param what - Its name in the message, e.g. `the Redis ledger URL`.
 * @throws `ValidationError` naming the rule broken; the URL is shown without its user info.
 */
export function checkRedisUrl(url: string, what: string): void {
  const shown = JSON.stringify(shownConnectionString(url));
  const bad = (rule: string): ValidationError => new ValidationError(`${what} ${shown} ${rule}`);
  const m = /^(rediss?):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#[\s\S]*)?$/i.exec(url);
  if (m === null) throw bad('is not a redis:// or rediss:// URL (expected redis://HOST[:PORT][/DB])');
  const [, , authority = '', path = '', query, fragment] = m;
  const at = authority.lastIndexOf('@');
  const userInfo = at < 0 ? undefined : authority.slice(0, at);
  const hostPort = at < 0 ? authority : authority.slice(at + 1);
  // An '@' after the authority, or two in it: a password with an unencoded '/', '?', '#' or '@'.
  if (/@/.test(`${path}${query ?? ''}${fragment ?? ''}`) || (userInfo !== undefined && userInfo.includes('@'))) {
    throw bad(`has an '@' where none can be: ${REDIS_PASSWORD_RULE}`);
  }
  if (userInfo !== undefined) {
    let ok = ![...userInfo].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
    try {
      decodeURIComponent(userInfo);
    } catch {
      ok = false;
    }
    if (!ok) throw bad(`has user info that does not percent-decode: ${REDIS_PASSWORD_RULE}`);
  }
  let host: string;
  try {
    host = new URL(`redis://${hostPort}`).hostname;
  } catch {
    host = '';
  }
  if (host === '') {
    // No '@': what is there may be a password without its host (redis://:PASSWORD): not shown.
    if (hostPort !== '' && at < 0) throw new ValidationError(`${what} "${url.slice(0, url.indexOf('//') + 2)}[REDACTED]${path === '' ? '' : '/…'}" has no valid HOST[:PORT] (expected redis://HOST[:PORT][/DB], a port from 1 to 65535; ${REDIS_PASSWORD_RULE})`);
    throw bad(hostPort === '' ? 'has no host (expected redis://HOST[:PORT][/DB])' : 'has no valid HOST[:PORT] (expected redis://HOST[:PORT][/DB], a port from 1 to 65535)');
  }
  const port = /:(\d*)$/.exec(hostPort.replace(/^\[[^\]]*\]/, ''))?.[1];
  if (port !== undefined && port !== '' && (Number(port) < 1 || Number(port) > 65535)) throw bad('has a port out of 1 to 65535');
  if (path !== '' && path !== '/' && !/^\/\d{1,5}$/.test(path)) {
    throw bad(`has a path that is not /DB: it must be empty, / or /DB, a database number (and ${REDIS_PASSWORD_RULE})`);
  }
  if (fragment !== undefined) throw bad(`has a fragment ('#…'): a Redis URL has none (${REDIS_PASSWORD_RULE})`);
  if (query !== undefined && query !== '?') {
    for (const [name, value] of new URLSearchParams(query.slice(1))) {
      if (!QUERY_NAMES.has(name)) throw bad(`has the query parameter ${JSON.stringify(name.slice(0, 20))}: only ?family=4 or ?family=6 is taken (ioredis would take any other for one of its options)`);
      if (name === 'family' && value !== '4' && value !== '6') throw bad('has ?family= other than 4 or 6');
    }
  }
}
