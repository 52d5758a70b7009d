/**
 * The project of a token used as it is against a Nova behind the `noauth2` middleware (a test cloud,
 * FakeNova): such a token is `user:project`.
 *
 * @module
 */

/**
 * The project id a noauth2 token names (`user:project`: `'project'`); `undefined` for any other
 * token (a Keystone token has no colon).
 */
export function projectFromNoauthToken(token: string | undefined): string | undefined {
  if (!token) return undefined;
  const m = /^[^:\s]+:([^:\s]+)$/.exec(token);
  return m ? m[1] : undefined;
}
