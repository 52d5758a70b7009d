/**
 * The shape of one resolved cloud: plain data, keys as in `clouds.yaml`.
 *
 * @module
 */
import type { Secret } from '../core/secret.js';

/** Auth types nova-guard supports (keystoneauth plugin names; `v3password` → `password`, `v3token` → `token`). */
export type CloudAuthType = 'password' | 'v3applicationcredential' | 'token';

/**
 * The `auth:` block of a cloud (keystoneauth option names). Secrets: `password`,
 * `application_credential_secret`, `token`: `loadCloudConfig` gives them as {@link Secret}s, which
 * show `[REDACTED]` in every copy of the block (`{ ...config.auth }`) and give their value only to
 * `reveal()`; a hand-made block may hold plain strings. A `structuredClone` of the block holds empty
 * objects instead (private fields are not cloned): a client made from it is refused with a
 * `ValidationError` that says so.
 */
export interface CloudAuth {
  auth_url?: string;
  username?: string;
  user_id?: string;
  password?: string | Secret;
  project_name?: string;
  project_id?: string;
  user_domain_name?: string;
  user_domain_id?: string;
  project_domain_name?: string;
  project_domain_id?: string;
  domain_name?: string;
  domain_id?: string;
  application_credential_id?: string;
  application_credential_name?: string;
  application_credential_secret?: string | Secret;
  token?: string | Secret;
}

/** Where a cloud came from. */
export interface CloudSource {
  /** clouds.yaml (or .yml/.json) the cloud was read from; undefined for the environment cloud. */
  file: string | undefined;
  /** secure.yaml merged over it, if any. */
  secureFile: string | undefined;
  /** True for the cloud built from `OS_*` variables. */
  env: boolean;
}

/**
 * One cloud, resolved: defaults applied (`auth_type: password`, `interface: public`, `verify: true`),
 * region chosen, legacy names mapped. The secrets of `auth` are {@link Secret}s: `util.inspect`,
 * `JSON.stringify`, loggers and copies of the block show `[REDACTED]` for them.
 */
export interface CloudConfig {
  /** Cloud name (`envvars`, or `OS_CLOUD_NAME`, for the environment cloud). */
  name: string;
  auth_type: CloudAuthType;
  auth: CloudAuth;
  /** Region (`OS_REGION_NAME` > `region_name` > first of `regions`), if any. */
  region_name: string | undefined;
  /** Endpoint interface. */
  interface: 'public' | 'internal' | 'admin';
  /**
   * CA bundle path (`~` expanded), if any: the ONLY certificates trusted (Node's built-in CAs are
   * not), as openstacksdk's `verify=<path>` does through requests. Ignored when `verify` is false.
   */
  cacert: string | undefined;
  /**
   * Client certificate path (`cert`, `OS_CERT`; `~` expanded), if any: PEM, with the private key
   * in it unless `key` is given (openstacksdk `CloudRegion.get_requests_verify_args`).
   */
  cert: string | undefined;
  /** Private key of the client certificate (`key`, `OS_KEY`; `~` expanded), if any. */
  key: string | undefined;
  /** `api_timeout` (`OS_API_TIMEOUT`, seconds in clouds.yaml) in ms: the time limit of each request. */
  api_timeout_ms: number | undefined;
  /** The cloud's known regions (`regions:` names, or a comma list in `region_name`); empty when none. */
  regions: string[];
  /** TLS verification. False when `verify: false` or `insecure: true`. */
  verify: boolean;
  /** `!verify`, for convenience (`OS_INSECURE`). */
  insecure: boolean;
  /** Compute API microversion (`OS_COMPUTE_API_VERSION`), if set. */
  compute_api_version: string | undefined;
  /** Compute endpoint to use instead of the catalog's (`compute_endpoint_override`, `OS_COMPUTE_ENDPOINT_OVERRIDE`). */
  compute_endpoint_override: string | undefined;
  /** Where the cloud came from. */
  source: CloudSource;
  /**
   * One message per setting found that nova-guard does not support and ignores (key names only,
   * never a value); `loadCloudConfig` reports each through its `onWarning` option.
   */
  warnings: string[];
}
