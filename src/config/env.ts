/**
 * The `OS_*` environment variables as a cloud entry.
 *
 * Ported from openstacksdk `openstack/config/loader.py` `_get_os_environ`: every `OS_FOO_BAR` becomes
 * key `foo_bar`; `OS_TEST*`, `OS_STD*` and `OS_LOG*` are skipped; when the only variables set are
 * selectors (`OS_CLOUD`, `OS_REGION_NAME`, `OS_CLIENT_CONFIG_FILE`, `OS_CLIENT_SECURE_FILE`,
 * `OS_CLOUD_NAME`), there is no environment cloud.
 *
 * @module
 */

/** Variables that choose or adjust a cloud but do not make one. */
export const SELECTOR_VARS: ReadonlySet<string> = new Set(['OS_CLOUD', 'OS_REGION_NAME', 'OS_CLIENT_CONFIG_FILE', 'OS_CLIENT_SECURE_FILE', 'OS_CLOUD_NAME']);

/** The environment cloud (`foo_bar` keys, unnormalised), or undefined when only selectors are set. */
export function envCloud(env: Record<string, string | undefined>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  let nonSelector = false;
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('OS_') || value === undefined || value === '') continue;
    if (name.startsWith('OS_TEST') || name.startsWith('OS_STD') || name.startsWith('OS_LOG')) continue;
    if (name === 'OS_CLOUD' || name === 'OS_CLOUD_NAME' || name === 'OS_CLIENT_CONFIG_FILE' || name === 'OS_CLIENT_SECURE_FILE') continue;
    if (!SELECTOR_VARS.has(name)) nonSelector = true;
    out[name.slice(3).toLowerCase()] = value;
  }
  return nonSelector ? out : undefined;
}

/** The environment variable behind a cloud key, for error messages (`auth.auth_url` → `OS_AUTH_URL`). */
export function envVarFor(key: string): string {
  return `OS_${key.replace(/^auth\./, '').toUpperCase()}`;
}
