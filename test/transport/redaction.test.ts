/**
 * Redaction in one place (the transport): secrets leave a body before it is cut to an excerpt,
 * before HTML tags are stripped, before Nova's message and fault key are read, and before a 2xx
 * body of the wrong shape is quoted.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KeystoneAuth, NovaApiError, NovaClient } from '../../src/index.js';
import { scriptedAdapter, type ScriptedReply } from './scriptedAdapter.js';

const TOKEN = 'gAAAAA-0123456789-secret-token-value';

function client(reply: ScriptedReply): NovaClient {
  const { adapter } = scriptedAdapter(() => reply);
  return new NovaClient({ endpoint: 'http://nova.test/v2.1', token: TOKEN, adapter, retry: { retries: 0 } });
}

async function messageOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(NovaApiError);
  return (e as Error).message;
}

/** No 8-character piece of `secret` in `text`. */
function expectNoPieceOf(text: string, secret: string): void {
  for (let i = 0; i + 8 <= secret.length; i++) expect(text, `piece ${secret.slice(i, i + 8)}`).not.toContain(secret.slice(i, i + 8));
}

describe('redaction before an excerpt is cut', () => {
  it('a secret across the 200-character cut of an excerpt does not show in part', async () => {
    const body = `${'x'.repeat(180)} token=${TOKEN} and more`;
    const m = await messageOf(client({ status: 400, body, headers: { 'content-type': 'text/plain' } }).getLimits());
    expect(m).toContain('token=[REDACTED]');
    expectNoPieceOf(m, TOKEN);
  });

  it('a secret with an HTML-like part is removed before tags are stripped', async () => {
    const password = 'pw<b>secret-4242';
    const { adapter } = scriptedAdapter(() => ({ status: 400, body: `<html><body>bad password ${password}</body></html>`, headers: { 'content-type': 'text/html' } }));
    const auth = new KeystoneAuth({ authUrl: 'http://keystone.test', username: 'u', password, projectName: 'p', adapter });
    const e = (await auth.getToken().catch((x: unknown) => x)) as Error;
    expect(e.message).toContain('bad password [REDACTED]');
    expect(e.message).not.toContain('secret-4242');
  });

  it('Nova\'s message and fault key are read from the redacted body', async () => {
    const m = await messageOf(client({ status: 409, body: { conflictingRequest: { code: 409, message: `echo: X-Auth-Token: ${TOKEN}` } } }).getLimits());
    expect(m).toBe('echo: X-Auth-Token: [REDACTED]');
  });

  it('a 2xx body of the wrong shape that echoes the token is quoted without it', async () => {
    const m = await messageOf(client({ status: 200, body: { headers: { 'X-Auth-Token': TOKEN } } }).getLimits());
    expect(m).toContain('with an unexpected body: expected a JSON object with a "limits" object');
    expect(m).toContain('[REDACTED]');
    expectNoPieceOf(m, TOKEN);
  });
});

/** Every way an error may be shown: message, stack, util.inspect, JSON, and each own field. */
function shown(e: unknown): string {
  const err = e as Error & Record<string, unknown>;
  return [err.message, err.stack, inspect(err), JSON.stringify(err), ...Object.values(err).map((v) => String(v))].join('\n');
}

async function errorOf(p: Promise<unknown>): Promise<NovaApiError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(NovaApiError);
  return e as NovaApiError;
}

describe('redaction in every field of an error', () => {
  it("a fault key that echoes the token: the error's fault field is redacted, as its message", async () => {
    const e = await errorOf(client({ status: 409, body: { [`conflict-${TOKEN}`]: { code: 409, message: 'locked' } } }).getLimits());
    expect(e.fault).toBe('conflict-[REDACTED]');
    expect(e.message).toBe('locked');
    expect(shown(e)).not.toContain(TOKEN);
  });

  it("the request URL (an endpoint holding the token in its path) is redacted in the error's url, message, stack, inspect and JSON", async () => {
    const { adapter } = scriptedAdapter(() => ({ status: 500, body: '' }));
    const c = new NovaClient({ endpoint: `http://nova.test/${TOKEN}/v2.1`, token: TOKEN, adapter, retry: false });
    const e = await errorOf(c.getLimits());
    expect(e.url).toBe('http://nova.test/[REDACTED]/v2.1/limits');
    expect(e.message).toBe('HTTP 500 Internal Server Error from GET http://nova.test/[REDACTED]/v2.1/limits (empty body)');
    expect(shown(e)).not.toContain(TOKEN);
  });

  it("a redirect's Location: the token is removed before the Location is cut, and ?token= of any value is hidden", async () => {
    const location = `https://elsewhere.test/${'x'.repeat(260)}?q=${TOKEN}`; // the token across the 300-character cut
    const e = await errorOf(client({ status: 302, headers: { location } }).getLimits());
    expect(e.message).toContain('redirected to https://elsewhere.test/');
    expect(e.message).toContain('?q=[REDACTED]');
    expectNoPieceOf(shown(e), TOKEN);
    const other = 'other-session-token-0042';
    const e2 = await errorOf(client({ status: 301, headers: { location: `https://elsewhere.test/v2.1?state=1&token=${other}` } }).getLimits());
    expect(e2.message).toContain('redirected to https://elsewhere.test/v2.1?state=1&token=[REDACTED];');
    expect(shown(e2)).not.toContain(other);
  });

  it('a next link that is not a URL is quoted without a ?token= value', async () => {
    const other = 'other-session-token-0043';
    const e = await errorOf(client({ status: 200, body: { servers: [{ id: 'a' }], servers_links: [{ rel: 'next', href: `http://[/servers/detail?marker=a&token=${other}` }] } }).listServers());
    expect(e.message).toContain('the servers_links next link "http://[/servers/detail?marker=a&token=[REDACTED]" is not a URL');
    expect(shown(e)).not.toContain(other);
  });

  it('an HTML 502 page that quotes a password-bearing URL: user info and ?password= hidden', async () => {
    const pw = 'pa55-word-in-url-99';
    const e = await errorOf(client({ status: 502, body: `<html><a href="http://admin:${pw}@backend:8774/?password=${pw}x">backend</a> down</html>`, headers: { 'content-type': 'text/html' } }).getLimits());
    expect(e).toMatchObject({ status: 502 });
    expect(shown(e)).not.toContain(pw);
  });
});
