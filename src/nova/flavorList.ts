/**
 * `GET /flavors/detail` read whole (Nova API reference, "List Flavors With Details"), for
 * `NovaClient.listFlavors`: asked with `is_public=None` (an admin's listing is public flavors only
 * without it, Nova's `_get_flavors`; a member's listing ignores it and shows the public flavors and
 * those shared with its project), as openstacksdk's flavor listing asks, so a private flavor an admin
 * uses is found by name as `openstack` finds it. Its `flavors_links` next pages are followed (Nova
 * pages at its `max_limit`, 1,000 by default), at most {@link FLAVOR_LIST_MAX_PAGES}.
 *
 * Which of the flavors listed may stand for `GET /flavors/{id}` (`trustedFlavors`): those listed
 * once, or always with one size, with a usable `vcpus` and `ram`. One listed without them (a proxy's
 * or hand-made answer) would give the guard a need of 0 cores.
 *
 * @module
 */
import { flavorSize } from '../core/counting.js';
import type { Flavor } from '../core/types.js';
import { idObjectListMember, invalidResponse, type ShapeContext } from '../transport/responseShape.js';
import type { RawRequest, RawResponse } from './options.js';
import { nextPageQuery } from './parse.js';

/**
 * Most pages a flavor listing follows (at Nova's usual 1,000 flavors a page): a listing whose every
 * page links to another is an error, not a request loop.
 * @default 100
 */
export const FLAVOR_LIST_MAX_PAGES = 100;

/** What a flavor listing needs of the client. */
export interface FlavorListDeps {
  /** `NovaClient.request`. */
  request(req: RawRequest): Promise<RawResponse>;
  /** The context of a shape error for a page (secrets redacted). */
  shape(res: RawResponse): ShapeContext;
}

/**
 * Every flavor of `GET /flavors/detail?is_public=None`, every page of it; `options` go with each request.
 * @throws {@link InvalidResponseError} when a page has no `flavors` list of objects with ids, or its
 * `flavors_links` next link cannot be followed (no marker, a marker already followed, more than
 * {@link FLAVOR_LIST_MAX_PAGES} pages).
 */
export async function listFlavorPages(deps: FlavorListDeps, options: Partial<RawRequest>): Promise<Flavor[]> {
  const flavors: Flavor[] = [];
  const seenMarkers = new Set<string>();
  let query: Record<string, string> = { is_public: 'None' };
  for (let pages = 1; ; pages++) {
    const res = await deps.request({ method: 'GET', path: '/flavors/detail', query, ...options });
    const page = idObjectListMember<Flavor>(res.data, 'flavors', deps.shape(res));
    flavors.push(...page);
    const next = nextPageQuery(res.data, deps.shape(res), seenMarkers, page.length === 0, 'flavors_links');
    if (next === undefined) return flavors;
    if (pages >= FLAVOR_LIST_MAX_PAGES) {
      throw invalidResponse(deps.shape(res), `page ${pages} of GET /flavors/detail still has a flavors_links next link: a flavor listing is not followed past ${FLAVOR_LIST_MAX_PAGES} pages`);
    }
    query = { ...query, ...next };
  }
}

/** The flavors of a listing that may be kept for `getFlavor`: listed with a usable `vcpus` and `ram`, and with one size wherever listed. */
export function trustedFlavors(flavors: readonly Flavor[]): Flavor[] {
  const sizes = new Map<string, string | undefined>();
  for (const f of flavors) {
    const size = flavorSize(f as { vcpus?: unknown; ram?: unknown });
    const said = size === undefined ? undefined : `${size.vcpus}/${size.ram}`;
    sizes.set(f.id, sizes.has(f.id) && sizes.get(f.id) !== said ? undefined : said);
  }
  return flavors.filter((f) => sizes.get(f.id) !== undefined);
}
