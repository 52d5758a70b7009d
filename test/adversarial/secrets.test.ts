/**
 * Secrets in places the no-secrets sweep did not look: an error body that echoes the request's
 * token, a Keystone error that echoes the password JSON-escaped (by Python, non-ASCII as \uXXXX),
 * an endpoint URL with a password in it.
 */
import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BadRequestError, InvalidResponseError, KeystoneAuth, NovaClient, ServerError, ValidationError } from '../../src/index.js';
import { scriptedAdapter } from '../transport/scriptedAdapter.js';
import { redactSecrets } from '../../src/auth/keystone.js';
import { redactUrlSecrets } from '../../src/core/redact.js';
import { errorFromResponse } from '../../src/transport/http.js';
import { reply, scripted } from './scripted.js';
import { rejection } from '../helpers.js';

const TOKEN = 'gAAAAA-super-secret-token-123456';

describe('NovaClient error messages', () => {
  it('a 400 page that echoes the X-Auth-Token never puts the token in the error', async () => {
    const s = await scripted((q, res) => reply(res, 400, `<html>bad request; x-auth-token=${String(q.headers['x-auth-token'])}</html>`, { 'Content-Type': 'text/html' }));
    const e = await rejection(new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: TOKEN }).getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.message).toBe(`HTTP 400 Bad Request from GET ${s.endpoint}/servers/abcabcab-0000-4000-8000-000000000abc (body: "bad request; x-auth-token=[REDACTED]")`);
    expect(inspect(e)).not.toContain(TOKEN);
    expect(JSON.stringify(e)).not.toContain(TOKEN);
  });

  it("a Nova-style fault message that echoes the token (JSON-escaped) is redacted too", async () => {
    const token = 'tok/with"quote-and-é';
    const s = await scripted((q, res) =>
      reply(res, 500, `{"computeFault": {"code": 500, "message": "bad token ${JSON.stringify(String(q.headers['x-auth-token'])).slice(1, -1)}"}}`),
    );
    const e = await rejection(new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token, retry: { retries: 0 } }).getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(e).toBeInstanceOf(ServerError);
    expect(e.message).toBe('bad token [REDACTED]');
  });

  it('an endpoint with user:password@ is refused, without repeating the password', () => {
    let err: unknown;
    try {
      new NovaClient({ microversion: '2.1', endpoint: 'http://user:hunter2secret@127.0.0.1:8774/v2.1', token: TOKEN });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toBe('endpoint must not contain user info (user:password@): give the token as token or auth');
  });

  it.each(['http://127.0.0.1:8774/v2.1?x=1', 'http://127.0.0.1:8774/v2.1#frag', 'http://[::1/v2.1'])('endpoint %s is refused', (endpoint) => {
    expect(() => new NovaClient({ microversion: '2.1', endpoint, token: TOKEN })).toThrow(ValidationError);
  });
});

describe('Keystone errors that echo the request body', () => {
  it.each([
    ['a password with quotes and backslashes', 'p"a\\ss-word'],
    ['a password with non-ASCII characters', 'pässwörd-ü'],
  ])('%s is redacted whether echoed raw, JSON-escaped or \\u-escaped', async (_what, password) => {
    // Echo the body three ways: as received (JSON, JavaScript escaping), Python json.dumps (ASCII), and raw.
    const s = await scripted((_q, res, body) => {
      const ascii = body.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      reply(res, 400, `{"error": {"code": 400, "title": "Bad Request", "message": ${JSON.stringify(`Invalid input ${body} ${ascii} ${password}`)}}}`);
    });
    const auth = new KeystoneAuth({ authUrl: s.url, username: 'ci', password, userDomainName: 'Default', projectName: 'p', projectDomainName: 'Default' });
    const e = await rejection(auth.getToken());
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.message).toContain('"password":"[REDACTED]"');
    const js = JSON.stringify(password).slice(1, -1);
    const py = js.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    for (const form of [password, js, py]) expect(e.message).not.toContain(form);
    expect(e.message.split('[REDACTED]')).toHaveLength(4); // in the body, Python's copy of it, and the raw copy
  });

  it('redactSecrets handles every form and leaves short secrets alone', () => {
    expect(redactSecrets('a "x\\"y" b x%22y c', ['x"y!'])).toBe('a "x\\"y" b x%22y c');
    expect(redactSecrets('a x\\"y! b x%22y! c x"y!', ['x"y!'])).toBe('a [REDACTED] b [REDACTED] c [REDACTED]');
    expect(redactSecrets('caf\\u00e9-secret', ['café-secret'])).toBe('[REDACTED]');
    expect(redactSecrets('abc', ['abc'])).toBe('abc');
  });

  it('a server that echoes the start of a token cut short (a proxy\'s "token gAAAAA-super-s... rejected") shows none of it', async () => {
    for (const cut of [10, 16, 24, TOKEN.length - 1]) {
      const s = await scripted((_q, res) => reply(res, 401, `401 Unauthorized: X-Auth-Token ${TOKEN.slice(0, cut)}... rejected`, { 'Content-Type': 'text/plain' }));
      const e = await rejection(new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: TOKEN }).getLimits());
      expect(e.message).toContain('X-Auth-Token [REDACTED]... rejected');
      expect(inspect(e)).not.toContain(TOKEN.slice(0, 10));
    }
    // Cut short right before a tag of an error page: redacted too (with the page's tags taken out).
    const html = await scripted((_q, res) => reply(res, 502, `<html><p>upstream: token ${TOKEN.slice(0, 14)}</p><p>bye</p></html>`, { 'Content-Type': 'text/html' }));
    const e = await rejection(new NovaClient({ microversion: '2.1', endpoint: html.endpoint, token: TOKEN, retry: { retries: 0 } }).getLimits());
    expect(inspect(e)).not.toContain(TOKEN.slice(0, 10));
    expect(e.message).toContain('[REDACTED]');
    // A shorter run of its start is left (it says nothing of the token), and so is any other text.
    expect(redactSecrets('gAAAAA-su and gAAAAA-sup', [TOKEN])).toBe('gAAAAA-su and [REDACTED]');
    expect(redactSecrets('no secret here', [TOKEN])).toBe('no secret here');
  });
});

describe('an endpoint from the auth provider', () => {
  it('with user:password@ is refused before any request, without repeating the password', async () => {
    const s = await scripted((_q, res) => reply(res, 500, 'boom'));
    const auth = {
      getToken: () => Promise.resolve(TOKEN),
      getEndpoint: () => Promise.resolve(s.endpoint.replace('http://', 'http://user:hunter2secret@')),
    };
    const e = await rejection(new NovaClient({ microversion: '2.1', auth }).getLimits());
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).not.toContain('hunter2secret');
    expect(s.seen).toHaveLength(0);
  });
});

/** Every way an error may be shown: message, stack, util.inspect, JSON, and each own field. */
function shown(e: unknown): string {
  const err = e as Error & Record<string, unknown>;
  return [err.message, err.stack, inspect(err), JSON.stringify(err), ...Object.values(err).map((v) => String(v))].join('\n');
}

function refusal(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('not refused');
}

describe('URLs that validation errors echo', () => {
  const SECRET = 'hunter2-url-secret-778';

  it.each([
    [`http://127.0.0.1:8774/v2.1?token=${SECRET}`, '"http://127.0.0.1:8774/v2.1?token=[REDACTED]"'],
    [`http://127.0.0.1:8774/v2.1?marker=a&password=${SECRET}&x=1`, '"http://127.0.0.1:8774/v2.1?marker=a&password=[REDACTED]&x=1"'],
    [`http://127.0.0.1:8774/v2.1#access_token=${SECRET}`, '"http://127.0.0.1:8774/v2.1#access_token=[REDACTED]"'],
  ])('NovaClient endpoint %s: refused, the secret never echoed', (endpoint, echoed) => {
    const e = refusal(() => new NovaClient({ microversion: '2.1', endpoint, token: TOKEN }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(`endpoint must not have a query or fragment, got ${echoed}`);
    expect(shown(e)).not.toContain(SECRET);
  });

  it.each([`ftp://user:${SECRET}@host/v2.1`, `http:/user:${SECRET}@host/v2.1`, `user:${SECRET}@host`, `nova?token=${SECRET}`])(
    'a NovaClient endpoint that is not a URL (%s) is echoed without the secret',
    (endpoint) => {
      const e = refusal(() => new NovaClient({ microversion: '2.1', endpoint, token: TOKEN }));
      expect(e.message).toMatch(/^endpoint must be an http\(s\) URL, got "/);
      expect(shown(e)).not.toContain(SECRET);
    },
  );

  it.each([
    [`http://keystone:5000/v3?password=${SECRET}`, `authUrl must not have a query or fragment (/v3/auth/tokens is appended to it), got "http://keystone:5000/v3?password=[REDACTED]"`],
    [`keystone:5000?token=${SECRET}`, 'authUrl must be an http(s) URL, got "keystone:5000?token=[REDACTED]"'],
    [`htp://u:${SECRET}@keystone`, 'authUrl must be an http(s) URL, got "htp://keystone"'],
    [`http:/u:${SECRET}@keystone`, 'authUrl must be an http(s) URL, got "http:/[REDACTED]@keystone"'],
  ])('KeystoneAuth authUrl %s: refused without the secret', (authUrl, message) => {
    const e = refusal(() => new KeystoneAuth({ authUrl, username: 'u', password: 'pw-secret-1', projectName: 'p' }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(message);
    expect(shown(e)).not.toContain(SECRET);
  });

  it('KeystoneAuth endpointOverride that is not a URL: refused without the secret', () => {
    const e = refusal(() => new KeystoneAuth({ token: 't0ken-value', endpointOverride: `nova/v2.1?auth_token=${SECRET}` }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe('endpointOverride must be an http(s) URL, got "nova/v2.1?auth_token=[REDACTED]"');
  });

  it("an endpoint from the provider's catalog with ?token= is refused before any request, without the secret", async () => {
    const s = await scripted((_q, res) => reply(res, 500, 'boom'));
    const auth = { getToken: () => Promise.resolve(TOKEN), getEndpoint: () => Promise.resolve(`${s.endpoint}?token=${SECRET}`) };
    const e = await rejection(new NovaClient({ microversion: '2.1', auth }).getLimits());
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(`endpoint must not have a query or fragment, got ${JSON.stringify(`${s.endpoint}?token=[REDACTED]`)}`);
    expect(shown(e)).not.toContain(SECRET);
    expect(s.seen).toHaveLength(0);
  });
});

describe('secrets that markup, odd user info or odd characters used to let through', () => {
  const SECRET = 'S3cr3t-XYZZY-1234';
  const URL_SECRET = 'pa/ss-hunter2-778';

  it('a secret split by an HTML tag in an error page (S3cr3t-XY<b>ZZY-1234</b>) is redacted whole, not shown with a space', async () => {
    const s = await scripted((_q, res) => reply(res, 502, '<html><body><h1>Bad Gateway</h1><p>upstream said: S3cr3t-XY<b>ZZY-1234</b></p></body></html>', { 'content-type': 'text/html' }));
    const e = await rejection(new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token: SECRET, retry: { retries: 0 } }).getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(shown(e)).not.toContain('S3cr3t');
    expect(shown(e)).not.toContain('ZZY-1234');
    expect(e.message).toContain('[REDACTED]');
  });

  it('property: a secret cut anywhere by any tag in an error page never shows, whole or in its two parts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: SECRET.length - 1 }), fc.constantFrom('<b>', '</b>', '<br/>', '<span class="x">', '<!-- c -->', '</td><td>'), (cut, tag) => {
        const body = `<html><p>echo: ${SECRET.slice(0, cut)}${tag}${SECRET.slice(cut)}</p></html>`;
        const e = errorFromResponse(502, {}, body, { method: 'GET', url: 'http://nova/v2.1/servers', redact: (t) => redactSecrets(t, [SECRET]) });
        expect(e.message).not.toContain(SECRET.slice(0, Math.max(cut, 6)));
        expect(e.message).not.toContain(SECRET.slice(Math.min(cut, SECRET.length - 6)));
        expect(e.message).toContain('[REDACTED]');
      }),
    );
  });

  it.each([`http://user:${URL_SECRET}@host/v2.1`, `https://u:${URL_SECRET}@nova:8774/v2.1`, `http://u:${URL_SECRET}?#x@host/v2.1`])(
    'a NovaClient endpoint whose user info holds a / (%s) is refused without echoing it',
    (endpoint) => {
      const e = refusal(() => new NovaClient({ microversion: '2.1', endpoint, token: TOKEN }));
      expect(e).toBeInstanceOf(ValidationError);
      expect(shown(e)).not.toContain('hunter2');
    },
  );

  it('a KeystoneAuth authUrl whose user info holds a / is refused without echoing it', () => {
    const e = refusal(() => new KeystoneAuth({ authUrl: `http://u:${URL_SECRET}@keystone/v3`, username: 'u', password: 'pw-secret-1', projectName: 'p' }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(shown(e)).not.toContain('hunter2');
    expect(redactUrlSecrets(`see http://u:${URL_SECRET}@keystone/v3 now`)).toBe('see http://[REDACTED]@keystone/v3 now');
  });

  it.each([
    ['a snowman', '☃'],
    ['a CR LF (header injection)', `${TOKEN}\r\nX-Evil: 1`],
    ['a trailing LF', `${TOKEN}\n`],
    ['a NUL', `${TOKEN}\u0000`],
    ['a leading space', ` ${TOKEN}`],
  ])('a token with %s is refused before any request, not sent empty or stripped; the message does not show it', async (_what, token) => {
    let requests = 0;
    const s = await scripted((_q, res) => {
      requests++;
      reply(res, 200, { server: { id: 'abcabcab-0000-4000-8000-000000000abc' } });
    });
    const e = refusal(() => new NovaClient({ microversion: '2.1', endpoint: s.endpoint, token }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toMatch(/^token cannot be sent as an X-Auth-Token header: /);
    expect(shown(e)).not.toContain(TOKEN);
    // The same token from a provider of the caller's own: refused at the request, nothing sent.
    const client = new NovaClient({ microversion: '2.1', endpoint: s.endpoint, auth: { getToken: () => Promise.resolve(token) } });
    const r = await rejection(client.getServer('abcabcab-0000-4000-8000-000000000abc'));
    expect(r).toBeInstanceOf(ValidationError);
    expect(shown(r)).not.toContain(TOKEN);
    expect(requests).toBe(0);
    // A Keystone token credential the same.
    expect(refusal(() => new KeystoneAuth({ token, endpointOverride: s.endpoint }))).toBeInstanceOf(ValidationError);
  });
});

describe('a Keystone token that cannot be a header value', () => {
  it.each([['a snowman (through an adapter)', 'gAAAA☃-issued']])(
    'an X-Subject-Token with %s is an InvalidResponseError and is not kept (never sent empty or stripped)',
    async (_what, issued) => {
      const { adapter } = scriptedAdapter(() => ({
        status: 201,
        headers: { 'x-subject-token': issued },
        body: { token: { methods: ['password'], expires_at: '2099-01-01T00:00:00.000000Z', project: { id: 'p' }, catalog: [] } },
      }));
      const auth = new KeystoneAuth({ authUrl: 'http://keystone.test/v3', username: 'u', password: 'pw-secret-1', userDomainName: 'Default', projectName: 'p', projectDomainName: 'Default', adapter });
      const e = await rejection(auth.getToken());
      expect(e).toBeInstanceOf(InvalidResponseError);
      expect(e.message).toContain('X-Subject-Token that cannot be sent as a header');
      expect(shown(e)).not.toContain('issued');
    },
  );
});
