/**
 * Microversion negotiation as Nova does it (`nova/api/openstack/wsgi.py` `Request.set_api_version_request`,
 * `nova/api/openstack/api_version_request.py`; api-guide "Microversions").
 *
 * `OpenStack-API-Version: compute 2.x` wins over the legacy `X-OpenStack-Nova-API-Version: 2.x`; no
 * header means 2.1; `latest` means the maximum; a malformed version is 400 and one out of range 406.
 *
 * @module
 */
import type { IncomingHttpHeaders } from 'node:http';

/** A microversion `major.minor`. */
export interface Microversion {
  major: number;
  minor: number;
}

const FORMAT = /^([1-9]\d*)\.([1-9]\d*|0)$/;

/** Parse `'2.37'`; undefined when malformed. */
export function parseMicroversion(text: string): Microversion | undefined {
  const m = FORMAT.exec(text.trim());
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** `a - b` ordering of two microversions. */
export function compareMicroversion(a: Microversion, b: Microversion): number {
  return a.major !== b.major ? a.major - b.major : a.minor - b.minor;
}

/** `'2.37'`. */
export function formatMicroversion(v: Microversion): string {
  return `${v.major}.${v.minor}`;
}

/** Result of {@link negotiateMicroversion}. */
export type Negotiated = { ok: true; version: Microversion } | { ok: false; status: 400 | 406; message: string };

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

/** Pick the request's microversion from its headers, within `[min, max]`. */
export function negotiateMicroversion(headers: IncomingHttpHeaders, min: Microversion, max: Microversion): Negotiated {
  let requested: string | undefined;
  const modern = header(headers, 'openstack-api-version');
  if (modern !== undefined) {
    for (const item of modern.split(',')) {
      const [service, version] = item.trim().split(/\s+/, 2);
      if (service?.toLowerCase() === 'compute' && version !== undefined) requested = version;
    }
  }
  if (requested === undefined) requested = header(headers, 'x-openstack-nova-api-version');
  if (requested === undefined) return { ok: true, version: min };
  if (requested.trim().toLowerCase() === 'latest') return { ok: true, version: max };
  const v = parseMicroversion(requested);
  if (!v) {
    return {
      ok: false,
      status: 400,
      message: `API Version String ${requested.trim()} is of invalid format. Must be of format MajorNum.MinorNum.`,
    };
  }
  if (compareMicroversion(v, min) < 0 || compareMicroversion(v, max) > 0) {
    return {
      ok: false,
      status: 406,
      message: `Version ${formatMicroversion(v)} is not supported by the API. Minimum is ${formatMicroversion(min)} and maximum is ${formatMicroversion(max)}.`,
    };
  }
  return { ok: true, version: v };
}
