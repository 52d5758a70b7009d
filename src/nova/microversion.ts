/**
 * Microversions as the client picks them, the way openstacksdk does (`openstack/utils.py`
 * `maximum_supported_microversion`, `openstack/resource.py` `Resource._get_microversion`):
 *
 * 1. a microversion the user pinned (option `microversion`, or a request's own) is sent as it is;
 * 2. otherwise the highest microversion both sides know: the lower of {@link CLIENT_MAX_MICROVERSION}
 *    (the highest this client is written and tested for) and the `version` of Nova's version
 *    document (`GET /v2.1/`: `{"version": {"id": "v2.1", "version": "2.93", "min_version": "2.1"}}`,
 *    Nova api-guide "Microversions", "Version discovery");
 * 3. when the document cannot be read (or is not one: {@link classifyVersionDocument}), or names no
 *    microversions, or Nova's minimum is above this client's maximum: {@link BASE_MICROVERSION}, the
 *    version Nova uses for a request without a header.
 *
 * Features of a request that need a minimum microversion ({@link createServerNeeds},
 * {@link listQueryNeeds}) are checked before the request: below it the call fails with a
 * {@link ValidationError} naming the feature and the microversion, never with Nova's bare 400.
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';

/** The microversion of a request without a microversion header (Nova api-guide "Microversions"). */
export const BASE_MICROVERSION = '2.1';

/**
 * The highest compute microversion this client is written for: 2.93, the maximum of Nova 26 (Zed),
 * which FakeNova serves by default and the real-Nova suite runs against. A newer Nova is spoken to
 * at this version.
 */
export const CLIENT_MAX_MICROVERSION = '2.93';

/** `"2.<minor>"` to its minor number; `latest` to `Infinity`; undefined when neither. */
export function microversionMinor(version: string): number | undefined {
  if (version === 'latest') return Number.POSITIVE_INFINITY;
  const m = /^2\.(0|[1-9]\d*)$/.exec(version.trim());
  return m ? Number(m[1]) : undefined;
}

/** `a` is at least `b` (both `"2.<minor>"` or `latest`); false when `a` cannot be read. */
export function atLeastMicroversion(a: string, b: string): boolean {
  const x = microversionMinor(a);
  const y = microversionMinor(b);
  return x !== undefined && y !== undefined && x >= y;
}

/** The microversions a Nova serves, from its version document. */
export interface MicroversionRange {
  /** `min_version`, e.g. `'2.1'`. */
  min: string;
  /** `version` (the maximum), e.g. `'2.93'`. */
  max: string;
}

/** `"2.<minor>"` (surrounding white space allowed) in its canonical form `"2.<minor>"`; undefined when it is not one (`latest` neither). */
export function canonicalMicroversion(version: unknown): string | undefined {
  if (typeof version !== 'string') return undefined;
  const m = /^2\.(0|[1-9]\d*)$/.exec(version.trim());
  return m ? `2.${m[1]}` : undefined;
}

/**
 * What a body answered to a read of the version document is:
 * - `range`: the `v2.1` entry's microversions, both in canonical form (`"2.60\n"` → `"2.60"`);
 * - `none`: a version document whose entry names no microversions (`"version": ""`: a Nova before
 *   microversions; nothing but the base is spoken);
 * - `invalid` (`why` says what): anything else: an HTML page of a proxy, `{}`, a `version` that is
 *   not `"2.<minor>"`, or a maximum below the minimum that `clientMax` cannot meet. A maximum below
 *   the minimum that `clientMax` meets is taken as Nova serving its minimum only (2.1 would be below
 *   what Nova says it takes).
 */
export type VersionDocument =
  | { kind: 'range'; range: MicroversionRange }
  | { kind: 'none' }
  | { kind: 'invalid'; why: string };

/** See {@link VersionDocument}: `{"version": {...}}` (`GET /v2.1/`) or `{"versions": [...]}` (`GET /`). */
export function classifyVersionDocument(data: unknown, clientMax: string = CLIENT_MAX_MICROVERSION): VersionDocument {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { kind: 'invalid', why: 'the body is not a JSON object' };
  const body = data as { version?: unknown; versions?: unknown };
  const entries = body.version !== undefined ? [body.version] : Array.isArray(body.versions) ? body.versions : undefined;
  if (entries === undefined) return { kind: 'invalid', why: 'the body has neither "version" nor "versions"' };
  let none = false;
  for (const entry of entries) {
    if (!entry || typeof entry !== 'object') continue;
    const { id, version, min_version: min } = entry as { id?: unknown; version?: unknown; min_version?: unknown };
    if (id !== undefined && id !== 'v2.1') {
      if (typeof version === 'string' && version.trim() === '') none = true; // e.g. the v2.0 entry
      continue;
    }
    if (typeof version === 'string' && version.trim() === '') {
      none = true;
      continue;
    }
    const max = canonicalMicroversion(version);
    if (max === undefined) return { kind: 'invalid', why: `the v2.1 entry's version ${JSON.stringify(String(version)).slice(0, 40)} is not 2.<minor>` };
    const lowest = canonicalMicroversion(min) ?? BASE_MICROVERSION;
    if (!atLeastMicroversion(max, lowest)) {
      if (!atLeastMicroversion(clientMax, lowest)) return { kind: 'invalid', why: `its maximum ${max} is below its minimum ${lowest}` };
      return { kind: 'range', range: { min: lowest, max: lowest } };
    }
    return { kind: 'range', range: { min: lowest, max } };
  }
  return none ? { kind: 'none' } : { kind: 'invalid', why: 'no v2.1 entry names its microversions' };
}

/**
 * The `v2.1` microversion range of a version document (see {@link classifyVersionDocument}), or
 * undefined when it names none or is not a version document.
 */
export function parseVersionDocument(data: unknown, clientMax: string = CLIENT_MAX_MICROVERSION): MicroversionRange | undefined {
  const d = classifyVersionDocument(data, clientMax);
  return d.kind === 'range' ? d.range : undefined;
}

/**
 * Nova's range as its 406 to a microversion it does not take states it (`Version 2.93 is not
 * supported by the API. Minimum is 2.1 and maximum is 2.79.`), or undefined when the message names none.
 */
export function rangeOf406(message: string): MicroversionRange | undefined {
  const m = /Minimum is (\S+?) and maximum is (\S+?)\.?(?:\s|$)/.exec(message);
  if (!m) return undefined;
  const min = canonicalMicroversion(m[1]);
  const max = canonicalMicroversion(m[2]);
  return min !== undefined && max !== undefined && atLeastMicroversion(max, min) ? { min, max } : undefined;
}

/**
 * The microversion to speak with a Nova of `range`: the lower of `clientMax` and Nova's maximum, or
 * undefined when there is none both know (Nova's minimum above `clientMax`) or no range.
 */
export function pickMicroversion(range: MicroversionRange | undefined, clientMax: string = CLIENT_MAX_MICROVERSION): string | undefined {
  if (range === undefined) return undefined;
  if (!atLeastMicroversion(clientMax, range.min)) return undefined;
  return atLeastMicroversion(range.max, clientMax) ? clientMax : range.max;
}

/**
 * Where a compute endpoint's version document is: the `/v2.1/` (or `/v2/`) root of its path, the
 * project id segment after it left out (`http://nova:8774/v2.1/<project>` → `http://nova:8774/v2.1/`).
 * An endpoint without such a segment is asked at its own path, with a trailing slash.
 */
export function versionDocumentUrl(endpoint: string): string {
  const url = new URL(endpoint);
  const m = /^(.*\/v2(?:\.1)?)(?:\/[^/]+)?\/?$/.exec(url.pathname);
  url.pathname = m ? `${m[1]}/` : url.pathname.replace(/\/*$/, '/');
  return url.toString();
}

/** A feature of a request and the microversion it needs. */
export interface MicroversionNeed {
  /** What the request uses, for the message: `networks: 'none'`, `tags`, ... */
  feature: string;
  /** The lowest microversion that has it (Nova API reference). */
  minimum: string;
}

/** Fields of the create body and the microversion each arrived in (Nova API reference, "Create Server"). */
const CREATE_FIELDS: ReadonlyArray<[string, string]> = [
  ['description', '2.19'],
  ['tags', '2.52'],
  ['trusted_image_certificates', '2.63'],
  ['host', '2.74'],
  ['hypervisor_hostname', '2.74'],
  ['hostname', '2.90'],
];

/**
 * What a `createServer` body needs: `networks` `'none'`/`'auto'` 2.37, `description` 2.19, `tags`
 * 2.52, `trusted_image_certificates` 2.63, `host`/`hypervisor_hostname` 2.74, `hostname` 2.90.
 */
export function createServerNeeds(body: Record<string, unknown>): MicroversionNeed[] {
  const needs: MicroversionNeed[] = [];
  if (body['networks'] === 'none' || body['networks'] === 'auto') needs.push({ feature: `networks: '${String(body['networks'])}'`, minimum: '2.37' });
  for (const [field, minimum] of CREATE_FIELDS) if (body[field] !== undefined) needs.push({ feature: field, minimum });
  return needs;
}

/** Filters of `GET /servers` and the microversion each arrived in (Nova API reference, "List Servers"). */
const LIST_FILTERS: ReadonlyArray<[string, string]> = [
  ['tags', '2.26'],
  ['tags-any', '2.26'],
  ['not-tags', '2.26'],
  ['not-tags-any', '2.26'],
  ['changes-before', '2.66'],
  ['locked', '2.73'],
];

/** What a listing's query needs: `tags`, `tags-any`, `not-tags`, `not-tags-any` 2.26, `changes-before` 2.66, `locked` 2.73 (`changes-since` is 2.1). */
export function listQueryNeeds(query: Record<string, unknown>): MicroversionNeed[] {
  const needs: MicroversionNeed[] = [];
  for (const [filter, minimum] of LIST_FILTERS) if (query[filter] !== undefined) needs.push({ feature: `the ${filter} filter`, minimum });
  return needs;
}

/**
 * Refuse a request whose features need more than `version`.
 * @param why - Why the request goes at `version`: `this client is pinned to 2.1`, `Nova ... supports up to 2.25`.
 * @throws {@link ValidationError} naming the first feature that needs more, its microversion and `why`.
 */
export function checkNeeds(needs: readonly MicroversionNeed[], version: string, why: string): void {
  for (const need of needs) {
    if (!atLeastMicroversion(version, need.minimum)) {
      throw new ValidationError(`${need.feature} needs compute microversion ${need.minimum} or later; ${why}`);
    }
  }
}

/** The highest minimum of `needs`, or undefined when there are none. */
export function highestNeed(needs: readonly MicroversionNeed[]): string | undefined {
  let best: string | undefined;
  for (const n of needs) if (best === undefined || !atLeastMicroversion(best, n.minimum)) best = n.minimum;
  return best;
}
