/**
 * `redactUrlSecrets` and `shownConnectionString` (src/core/redact.ts): the user info of a URL never
 * shows, whatever characters its password holds (a space, quotes, `<`, `>`, a newline, `/`, `@`).
 */
import { describe, expect, it } from 'vitest';
import { REDACTED, redactUrlSecrets, shownConnectionString } from '../../src/core/redact.js';

/** The password and each piece of it of 4 characters or more. */
function pieces(secret: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) out.push(secret.slice(i, i + 4));
  return out;
}

const PASSWORDS = ['my secret pw', 'quo"te"pass', "single'quote", 'angle<br>acket', 'new\nline\npass', 'tab\there', 'sl/ash@at?q#f'];

describe('redactUrlSecrets: the user info of a scheme:// URL, whatever it holds', () => {
  for (const pw of PASSWORDS) {
    it(`hides ${JSON.stringify(pw)} in a URL inside words`, () => {
      for (const scheme of ['redis', 'rediss', 'http', 'https']) {
        const text = `cannot reach ${scheme}://user:${pw}@host.example:6379/0 (refused); retrying`;
        const out = redactUrlSecrets(text);
        for (const p of pieces(pw)) expect(out, `${scheme} ${p}`).not.toContain(p);
        expect(out).toContain(`${scheme}://${REDACTED}@host.example:6379/0 (refused); retrying`);
        expect(out.startsWith('cannot reach ')).toBe(true);
      }
    });
  }
  it('keeps URLs without user info as they are, and each URL of a text apart', () => {
    expect(redactUrlSecrets('GET http://nova.example/v2.1/servers failed')).toBe('GET http://nova.example/v2.1/servers failed');
    expect(redactUrlSecrets('a http://u:p w@h/x then https://v:q"z@k/y')).toBe(`a http://${REDACTED}@h/x then https://${REDACTED}@k/y`);
    expect(redactUrlSecrets('http:/u:pw@h and redis:u:pw@h')).toBe(`http:/${REDACTED}@h and redis:${REDACTED}@h`);
    expect(redactUrlSecrets(`http://${REDACTED}@h`)).toBe(`http://${REDACTED}@h`);
    expect(redactUrlSecrets('https://h/?token=abc123&x=1')).toBe(`https://h/?token=${REDACTED}&x=1`);
  });
});

describe('shownConnectionString: everything up to the last @', () => {
  it('hides a password with any character, with or without a scheme, with spaces around', () => {
    for (const pw of [...PASSWORDS, 's3cr3t@Pr0dPassw0rdTail/2024']) {
      for (const text of [`redis://:${pw}@`, `redis://:${pw}@127.0.0.1:6379/1`, ` redis://:${pw}@h `, `redis:/:${pw}@h`, `:${pw}@h`, `x redis://:${pw}@h`]) {
        const out = shownConnectionString(text);
        for (const p of pieces(pw)) expect(out, `${JSON.stringify(text)} ${p}`).not.toContain(p);
        expect(out).toContain(REDACTED);
      }
    }
    expect(shownConnectionString('redis://:pw@127.0.0.1:6379/1')).toBe(`redis://${REDACTED}@127.0.0.1:6379/1`);
    expect(shownConnectionString('redis://127.0.0.1:6379/1')).toBe('redis://127.0.0.1:6379/1');
  });
});
