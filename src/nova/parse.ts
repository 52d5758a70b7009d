/**
 * Reading the numbers of Nova's `GET /limits` and `GET /os-quota-sets/{project_id}/detail` bodies
 * (Nova API reference, "Limits" and "Quota Sets": -1 means unlimited), and the next-page link of a
 * listing (api-guide "Paginated collections").
 *
 * @module
 */
import type { AbsoluteLimits, QuotaDetailItem, QuotaSetDetail } from '../core/types.js';
import { invalidResponse, optionalObjectListMember, type ShapeContext } from '../transport/responseShape.js';

/** A decimal number written as a string, as some deployments send limits (`"514"`, `"-1"`). */
const NUMERIC_STRING = /^\s*-?\d+(\.\d+)?\s*$/;

/**
 * A limit value: -1 → `Infinity`, a finite number as it is, a numeric string (`"514"`, `"-1"`, as
 * some proxies and older deployments send the Nova API reference's integers) as its number, anything else
 * (`null`, `""`, `"abc"`, an object, `NaN`) → undefined (unknown).
 */
export function parseLimitValue(v: unknown): number | undefined {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && NUMERIC_STRING.test(v)) n = Number(v);
  else return undefined;
  if (!Number.isFinite(n)) return undefined;
  return n === -1 ? Number.POSITIVE_INFINITY : n;
}

/**
 * Parse the `absolute` block of `GET /limits`: -1 → Infinity, numeric strings → numbers, missing or
 * non-numeric → left out (undefined: unknown). Anything but an object → `{}` (everything unknown).
 */
export function parseAbsoluteLimits(absolute: unknown): AbsoluteLimits {
  const out: AbsoluteLimits = {};
  if (!absolute || typeof absolute !== 'object' || Array.isArray(absolute)) return out;
  for (const [k, v] of Object.entries(absolute as Record<string, unknown>)) {
    const parsed = parseLimitValue(v);
    if (parsed !== undefined) out[k] = parsed;
  }
  return out;
}

/** Parse the `quota_set` object of `GET /os-quota-sets/{project_id}/detail`: each `limit` -1 → `Infinity`. */
export function parseQuotaSetDetail(quotaSet: Record<string, unknown>): QuotaSetDetail {
  const out: QuotaSetDetail = {};
  for (const [k, v] of Object.entries(quotaSet)) {
    if (v && typeof v === 'object') {
      const item = v as Record<string, unknown>;
      const d: QuotaDetailItem = {};
      const inUse = parseLimitValue(item['in_use']);
      const limit = parseLimitValue(item['limit']);
      const reserved = typeof item['reserved'] === 'number' ? item['reserved'] : undefined;
      if (inUse !== undefined) d.in_use = inUse;
      if (limit !== undefined) d.limit = limit;
      if (reserved !== undefined) d.reserved = reserved;
      out[k] = d;
    } else if (typeof v === 'string') {
      out[k] = v;
    }
  }
  return out;
}

/**
 * The query of the next page of a `GET /servers/detail` listing (or of `GET /flavors/detail`, with
 * `linksKey` `flavors_links`): the `servers_links` "next" link's
 * query (only its query: the next page is read from the client's endpoint, never another host), or
 * undefined on the last page (no next link, or `pageEmpty`). Records the marker in `seenMarkers`.
 * @throws {@link InvalidResponseError} when the link has no href, is not a URL, has no `marker` (Nova's next link
 * always names the last server of the page; one without it, such as a proxy's `?page=2`, cannot be
 * followed, and taking the page for the last would truncate the listing: the delete engine would take
 * the servers of the later pages for gone), or asks for a marker already followed (a proxy that drops
 * the query, a pagination bug: a silently truncated listing would make an audit drift and a reaper
 * miss servers).
 */
export function nextPageQuery(
  body: unknown,
  ctx: ShapeContext,
  seenMarkers: Set<string>,
  pageEmpty: boolean,
  linksKey: 'servers_links' | 'flavors_links' = 'servers_links',
): Record<string, string> | undefined {
  const links = optionalObjectListMember<{ rel?: unknown; href?: unknown }>(body, linksKey, ctx);
  const next = links.find((l) => l.rel === 'next');
  if (next === undefined || pageEmpty) return undefined;
  const href = next.href;
  if (typeof href !== 'string' || href === '') throw invalidResponse(ctx, `the ${linksKey} next link has no href: the next page cannot be read, and the listing would be truncated`);
  let query: Record<string, string>;
  try {
    query = Object.fromEntries(new URL(href, 'http://x').searchParams.entries());
  } catch {
    throw invalidResponse(ctx, `the ${linksKey} next link ${JSON.stringify(href.slice(0, 200))} is not a URL`);
  }
  const marker = query['marker'];
  if (!marker) throw invalidResponse(ctx, `the ${linksKey} next link ${JSON.stringify(href.slice(0, 200))} names no marker: the next page cannot be read, and the listing would be truncated`);
  if (seenMarkers.has(marker)) throw invalidResponse(ctx, `the ${linksKey} next link asks again for marker ${JSON.stringify(marker)}: the pagination loops`);
  seenMarkers.add(marker);
  return query;
}
