/**
 * Removing secrets (passwords, application credential secrets, tokens) from text that may reach an
 * error message or a log: the secret as it is, and as a server may echo it back inside a JSON body
 * (escaped by `JSON.stringify`, or by Python's `json.dumps`, which also escapes every non-ASCII
 * character as `\uXXXX`) or inside a URL (percent-encoded).
 *
 * @module
 */

const REDACTED = '[REDACTED]';

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
 * `[REDACTED]`. Secrets shorter than 4 characters are left alone (redacting every `a` of a message
 * would make it unreadable; such secrets are not in use).
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    if (typeof s !== 'string' || s.length < 4) continue;
    for (const form of secretForms(s)) out = out.split(form).join(REDACTED);
  }
  return out;
}
