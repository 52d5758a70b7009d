/**
 * Removing secrets (passwords, application credential secrets, tokens) from text that may reach an
 * error message or a log: the secret as it is, and as a server may echo it back inside a JSON body
 * (escaped by `JSON.stringify`, or by Python's `json.dumps`, which also escapes every non-ASCII
 * character as `\uXXXX`) or inside a URL (percent-encoded).
 *
 * @module
 */

/** What a secret is shown as. */
export const REDACTED = '[REDACTED]';

/** `s` escaped as inside a JSON string, by JavaScript (`ascii` false) or by Python's `json.dumps` (`ascii` true). */
function jsonEscaped(s: string, ascii: boolean): string {
  const js = JSON.stringify(s).slice(1, -1);
  return ascii ? js.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : js;
}

/** The forms in which `secret` may appear in an echoed body or URL, longest first. */
export function secretForms(secret: string): string[] {
  const forms = new Set([secret, jsonEscaped(secret, false), jsonEscaped(secret, true), encodeURIComponent(secret)]);
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Replace every occurrence of each secret in `text` (in any of its {@link secretForms}) by
 * `[REDACTED]`, and every run of at least 10 characters that is the start of one (a secret of 16
 * characters or more echoed cut short). Secrets shorter than 4 characters are left alone (redacting every `a` of a message
 * would make it unreadable; such secrets are not in use).
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    if (typeof s !== 'string' || s.length < 4) continue;
    for (const form of secretForms(s)) out = out.split(form).join(REDACTED);
    if (s.length >= PREFIX_RUN_MIN_SECRET) out = redactPrefixRuns(out, s);
  }
  return out;
}

/** The shortest start of a secret taken for a piece of it when echoed cut short (a proxy's `token gAAAAABk…`), in characters. */
const PREFIX_RUN = 10;

/** Secrets shorter than this are redacted whole only (a start of {@link PREFIX_RUN} of them would be most of them anyway). */
const PREFIX_RUN_MIN_SECRET = 16;

/**
 * `text` with every run that starts as `secret` does, for at least {@link PREFIX_RUN} characters, replaced
 * by `[REDACTED]` as far as it matches the secret: a server or proxy that echoes a token cut short
 * (`X-Auth-Token gAAAAABk4x…`, a body excerpt cut by the server) shows part of it.
 */
function redactPrefixRuns(text: string, secret: string): string {
  const start = secret.slice(0, PREFIX_RUN);
  let out = '';
  let from = 0;
  for (let at = text.indexOf(start); at !== -1; at = text.indexOf(start, from)) {
    let end = at + PREFIX_RUN;
    while (end < text.length && end - at < secret.length && text[end] === secret[end - at]) end++;
    // A run that ends at a tag may go on after it (`S3cr3t-XY<b>ZZY`): left for the error excerpt,
    // which redacts the text with its tags taken out (`textSnippet`), so the secret goes whole.
    if (text[end] === '<') {
      out += text.slice(from, end);
      from = end;
      continue;
    }
    out += text.slice(from, at) + REDACTED;
    from = end;
  }
  return out + text.slice(from);
}

/**
 * Query and fragment parameters whose value is taken for a secret: any name containing token,
 * pass(word), pwd, secret, key, auth, credential, sig(nature) or session (`?token=`, `&password=`,
 * `#access_token=`, `?X-Amz-Signature=`, `?api_key=`).
 */
const SECRET_PARAM = /([?&#;])([\w.~%[\]-]*?(?:token|pass|pwd|secret|key|auth|credential|sig|session)[\w.~%[\]-]*)=([^&#;\s"'<>]*)/gi;

/**
 * User info of a URL written with one slash or none after the scheme (`http:/user:pw@host`,
 * `redis:user:pw@host`): up to the `@` (up to a space or a quote). `scheme://` URLs are handled by
 * {@link redactAuthorities}, which takes any character for user info.
 */
const USER_INFO = /\b([a-z][a-z0-9+.-]*:\/{0,1})(?!\/)([^\s"'<>]+)@/gi;

/** Where a `scheme://` starts in a text. */
const SCHEME_SLASHES = /\b[a-z][a-z0-9+.-]*:\/\//gi;

/**
 * `text` with, after each `scheme://`, everything up to the last `@` before the next `scheme://`
 * (or the end of the text) replaced by `[REDACTED]`: a password may hold any character (a space, a
 * quote, `<`, `>`, a newline, `/`, `?`, `#`, `@`), so no character can be taken for the end of user
 * info; the `@` that ends it is the last one. A later `@` in the same text (an address in the words
 * after the URL) makes more be redacted, never less.
 */
function redactAuthorities(text: string): string {
  const starts: Array<{ at: number; end: number }> = [];
  for (const m of text.matchAll(SCHEME_SLASHES)) starts.push({ at: m.index, end: m.index + m[0].length });
  if (starts.length === 0) return text;
  let out = text.slice(0, starts[0]!.at);
  for (const [i, s] of starts.entries()) {
    const next = i + 1 < starts.length ? starts[i + 1]!.at : text.length;
    const at = text.lastIndexOf('@', next - 1);
    out += text.slice(s.at, s.end);
    out += at >= s.end ? `${REDACTED}${text.slice(at, next)}` : text.slice(s.end, next);
  }
  return out;
}

/**
 * `url` without anything that may be user info: everything between `scheme://` and the last `@` is
 * removed (user info may hold any character, spaces included), for a URL echoed by a validation
 * error; other forms (`http:/user:pw@host`) are left to {@link redactUrlSecrets}.
 */
export function withoutUserInfo(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[\s\S]*@/i, '$1');
}

/**
 * `text` with what a URL may carry of a secret replaced by `[REDACTED]`: its user info
 * (`http://[REDACTED]@host`; after `scheme://`, everything up to the last `@` before the next URL,
 * whatever characters it holds) and the values of query or fragment parameters named like a secret
 * (`?token=[REDACTED]`, `&password=[REDACTED]`; see the list above). For URLs that an error echoes
 * (an endpoint refused by validation, a redirect's `Location`, a next link): the caller's own
 * secrets are removed by {@link redactSecrets}, these need no list.
 */
export function redactUrlSecrets(text: string): string {
  return redactAuthorities(text).replace(USER_INFO, (all: string, scheme: string, info: string) => (info === REDACTED ? all : `${scheme}${REDACTED}@`)).replace(SECRET_PARAM, `$1$2=${REDACTED}`);
}

/**
 * A ledger or connection string as it may be shown in a message: everything that may be user info
 * replaced by `[REDACTED]`: after the scheme (`redis://`, `redis:/`, `sqlite:`), or from the start
 * when there is none, everything up to the LAST `@` of the string (a password may hold any
 * character, `/` and `@` included, so the last `@` is the only sure end), then
 * {@link redactUrlSecrets} for secret-named query parameters. Leading and trailing spaces are kept
 * out of the scheme test (`' redis://:pw@h'` is redacted too).
 */
export function shownConnectionString(text: string): string {
  const t = String(text);
  const at = t.lastIndexOf('@');
  if (at < 0) return redactUrlSecrets(t);
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/{0,2}/i.exec(t)?.[0] ?? '';
  const start = at >= scheme.length ? scheme.length : 0;
  return redactUrlSecrets(`${t.slice(0, start)}${REDACTED}${t.slice(at)}`);
}
