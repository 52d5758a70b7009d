/**
 * Python-compatible serialisation, so the fake's bodies match real Nova byte for byte.
 *
 * Nova serialises with `oslo_serialization.jsonutils.dumps`, i.e. Python's `json.dumps` with its
 * default separators (`', '` and `': '`) and `ensure_ascii=True`. Validation messages embed Python
 * `repr()` of the request body (`nova/api/validation/validators.py`).
 *
 * @module
 */

/** A number Python would print as a float (`1.0`), e.g. a flavor's `rxtx_factor`. */
export class PyFloat {
  constructor(readonly value: number) {}
}

function asciiString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function floatText(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN';
  return Number.isInteger(n) ? n.toFixed(1) : String(n);
}

/** `json.dumps(value)` as Python prints it. `undefined` members are left out, as `JSON.stringify` does. */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value instanceof PyFloat) return floatText(value.value);
  switch (typeof value) {
    case 'string':
      return asciiString(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map((v) => pyJson(v)).join(', ') + ']';
      const parts: string[] = [];
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (v === undefined) continue;
        parts.push(asciiString(k) + ': ' + pyJson(v));
      }
      return '{' + parts.join(', ') + '}';
    }
    default:
      return 'null';
  }
}

function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const c of s) {
    if (c === '\\') out += '\\\\';
    else if (c === quote) out += '\\' + c;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c < ' ') out += '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0');
    else out += c;
  }
  return quote + out + quote;
}

/** Python `repr()` of a value decoded from JSON (dict, list, str, int, float, bool, None). */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  switch (typeof value) {
    case 'string':
      return pyStr(value);
    case 'number':
      return String(value);
    case 'boolean':
      return value ? 'True' : 'False';
    case 'object':
      if (Array.isArray(value)) return '[' + value.map((v) => pyRepr(v)).join(', ') + ']';
      return (
        '{' +
        Object.entries(value as Record<string, unknown>)
          .map(([k, v]) => pyStr(k) + ': ' + pyRepr(v))
          .join(', ') +
        '}'
      );
    default:
      return 'None';
  }
}
