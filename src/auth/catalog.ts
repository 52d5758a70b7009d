/**
 * Choosing the compute endpoint from a Keystone v3 service catalog.
 *
 * Source: Keystone's catalog format (`keystone/catalog/backends/sql.py`, token responses in
 * `api-ref/source/v3/samples/auth/responses/project-scoped-password.json`): a list of services
 * `{id, type, name, endpoints: [{id, interface, region_id, region, url}]}`; keystoneauth's
 * `ServiceCatalogV3.endpoint_data_for` (filter by service type, interface, region).
 *
 * @module
 */
import { ConfigError, ValidationError } from '../errors/index.js';

/** One endpoint of a catalog entry. */
export interface CatalogEndpoint {
  id?: string;
  /** `public`, `internal` or `admin`. */
  interface: string;
  /** Region id (Keystone v3). */
  region_id?: string | null;
  /** Deprecated copy of `region_id`. */
  region?: string | null;
  url: string;
}

/** One service of the catalog. */
export interface CatalogEntry {
  id?: string;
  /** Service type, e.g. `compute`, `identity`, `image`. */
  type: string;
  name?: string;
  endpoints: CatalogEndpoint[];
}

/** The three endpoint interfaces Keystone knows. */
export type EndpointInterface = 'public' | 'internal' | 'admin';

/** What to look for in the catalog. */
export interface EndpointFilter {
  /** Service type. Default `compute`. */
  serviceType?: string;
  /** Interface. Default `public`. The legacy `publicURL`/`internalURL`/`adminURL` forms are accepted. */
  interface?: string;
  /** Region (matched against `region_id`, then `region`). Any region when undefined. */
  region?: string | undefined;
}

/**
 * Normalise an interface name: `public`, `internal`, `admin`; `publicURL` and friends (the legacy
 * v2 `endpoint_type` values, openstacksdk `_fix_backwards_interface`) are accepted.
 * @throws {@link ValidationError} for anything else.
 */
export function normaliseInterface(value: string | undefined): EndpointInterface {
  if (value === undefined || value === '') return 'public';
  const v = value.toLowerCase().replace(/url$/, '');
  if (v === 'public' || v === 'internal' || v === 'admin') return v;
  throw new ValidationError(`interface must be public, internal or admin, got ${JSON.stringify(value)}`);
}

/**
 * Thrown by `selectEndpoint` when nothing matches; names what was looked for and what exists.
 * A {@link ConfigError} (key `region_name` when a region was asked for, else `interface`): the cure is
 * a different interface, region or `compute_endpoint_override`.
 */
export class EndpointNotFoundError extends ConfigError {
  /** The service type looked for. */
  readonly serviceType: string;
  /** The interface looked for. */
  readonly interface: string;
  /** The region looked for, if any. */
  readonly region: string | undefined;
  constructor(serviceType: string, iface: string, region: string | undefined, available: string) {
    super(
      `No ${serviceType} endpoint with interface ${iface}${region ? ` in region ${region}` : ''} in the Keystone service catalog ` +
        `(catalog has: ${available || 'nothing'})`,
      { key: region ? 'region_name' : 'interface' },
    );
    this.serviceType = serviceType;
    this.interface = iface;
    this.region = region;
  }
}

function describe(catalog: readonly CatalogEntry[]): string {
  return catalog
    .map((s) => `${s.type}[${(s.endpoints ?? []).map((e) => `${e.interface}${e.region_id ?? e.region ? `@${e.region_id ?? e.region}` : ''}`).join(',')}]`)
    .join(' ');
}

/**
 * The URL of the first endpoint of the first `serviceType` service that has the interface and
 * (when given) the region. Trailing slashes are removed.
 *
 * @throws {@link EndpointNotFoundError} when nothing matches.
 */
export function selectEndpoint(catalog: readonly CatalogEntry[] | undefined, filter: EndpointFilter = {}): string {
  const serviceType = filter.serviceType ?? 'compute';
  const iface = normaliseInterface(filter.interface);
  const list = Array.isArray(catalog) ? catalog : [];
  for (const service of list) {
    if (service?.type !== serviceType) continue;
    for (const ep of service.endpoints ?? []) {
      if (ep?.interface !== iface || typeof ep.url !== 'string') continue;
      if (filter.region !== undefined && (ep.region_id ?? ep.region) !== filter.region) continue;
      return ep.url.replace(/\/+$/, '');
    }
  }
  throw new EndpointNotFoundError(serviceType, iface, filter.region, describe(list));
}
