/**
 * Reading every page of a server listing (`GET /servers/detail` or `GET /servers`), bounded: the
 * `servers_links` "next" links are followed (api-guide "Paginated collections") at most
 * `maxPages` times, within `timeoutMs` in all, a marker never twice, a server never listed twice.
 * A marker server deleted between two pages (Nova answers 400 `marker [<id>] not found`) does not
 * fail the listing: the last good page is read again (without that server) and the listing goes on
 * from there, every re-read counted against `maxPages`.
 *
 * Sources (marker): Nova `api/openstack/compute/servers.py` `_get_servers` (`MarkerNotFound` becomes
 * `HTTPBadRequest` with `marker [%s] not found`).
 *
 * Sources: Nova API reference, "List Servers" and "List Servers Detailed"; api-guide "Paginated
 * collections".
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Server } from '../core/types.js';
import { BadRequestError, NovaNetworkError, throwIfAborted } from '../errors/index.js';
import { idObjectListMember, invalidResponse, type ShapeContext } from '../transport/responseShape.js';
import { LIST_SERVERS_DEFAULTS, checkListServersOptions, type ListServersOptions, type ListServersQuery, type RawRequest, type RawResponse } from './options.js';
import { nextPageQuery } from './parse.js';

/** What a listing needs of the client. */
export interface ListingDeps {
  /** `NovaClient.request`. */
  request(req: RawRequest): Promise<RawResponse>;
  /** The client's clock (the listing's time limit). */
  clock: Clock;
  /** The context of a shape error for a page (secrets redacted). */
  shape(res: RawResponse): ShapeContext;
}

/** A listing and what is known about it. */
export interface Listing {
  servers: Server[];
  /** Nova's `Date` header of the first page, epoch ms. */
  serverDateMs: number | undefined;
  /** Pages read. */
  pages: number;
}

/**
 * Read every page of a listing: see the module and `NovaClient.listServersWithMeta`.
 * @throws {@link ValidationError} for a bad `maxPages` or `timeoutMs` (before any request);
 * {@link InvalidResponseError} for a page of the wrong shape, a next link that is not a URL or
 * repeats a marker, or a next link on page `maxPages`; {@link NovaNetworkError} (`timedOut`) at
 * `timeoutMs`; {@link AbortError} when the caller's `signal` aborts.
 */
export async function listServerPages(deps: ListingDeps, query: ListServersQuery, options: ListServersOptions): Promise<Listing> {
  checkListServersOptions(options);
  const { brief, maxPages = LIST_SERVERS_DEFAULTS.maxPages, timeoutMs = LIST_SERVERS_DEFAULTS.timeoutMs, ...requestOptions } = options;
  const path = brief ? '/servers' : '/servers/detail';
  const caller = requestOptions.signal;
  throwIfAborted(caller);
  // One signal for every page: the caller's, and the listing's own time limit on the client's clock.
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(caller?.reason);
  caller?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = Number.isFinite(timeoutMs)
    ? deps.clock.setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs)
    : undefined;
  const servers: Server[] = [];
  let q: Record<string, string | number | boolean | undefined> = { ...query };
  let serverDateMs: number | undefined;
  let pages = 0;
  let url = path; // the endpoint's URL once a page came
  const seenMarkers = new Set<string>();
  const seenIds = new Set<unknown>();
  // The query of every page read so far, in order: a vanished marker goes back to the last of them.
  const goodQueries: Array<typeof q> = [];
  let requests = 0;
  try {
    for (;;) {
      let res: RawResponse;
      try {
        requests++;
        res = await deps.request({ method: 'GET', path, query: q, ...requestOptions, signal: controller.signal });
      } catch (e) {
        if (timedOut && !caller?.aborted) throw listingTimeout(url, timeoutMs, pages);
        const previous = goodQueries.at(-1);
        if (previous !== undefined && isVanishedMarker(e, q['marker']) && requests < maxPages) {
          // The server the marker named was deleted (and its row archived) since its page was read:
          // read that page again; the servers already listed are not listed twice.
          goodQueries.pop();
          q = previous;
          continue;
        }
        throw e;
      }
      goodQueries.push(q);
      pages++;
      url = res.url ?? url;
      serverDateMs ??= res.serverDateMs;
      const page = idObjectListMember<Server>(res.data, 'servers', deps.shape(res));
      for (const server of page) {
        if (server.id !== undefined && seenIds.has(server.id)) continue; // never the same server twice
        seenIds.add(server.id);
        servers.push(server);
      }
      const nextQuery = nextPageQuery(res.data, deps.shape(res), seenMarkers, page.length === 0);
      if (!nextQuery) break;
      if (pages >= maxPages || requests >= maxPages) {
        throw invalidResponse(
          deps.shape(res),
          `page ${pages} of the listing still has a servers_links next link, and maxPages is ${maxPages}: a listing whose every page ` +
            'links to another is not followed for ever (raise maxPages if the project really has more servers)',
        );
      }
      q = { ...q, ...nextQuery };
    }
  } finally {
    deps.clock.clearTimeout(timer);
    caller?.removeEventListener('abort', onAbort);
  }
  return { servers, serverDateMs, pages };
}

/**
 * True when `error` is Nova's 400 for a marker it cannot find (`marker [<id>] not found`) and names
 * the marker of this very page (a marker the caller gave is not the listing's to replace).
 */
export function isVanishedMarker(error: unknown, marker: unknown): boolean {
  if (!(error instanceof BadRequestError) || typeof marker !== 'string') return false;
  const named = /^marker \[(.*)\] not found\.?$/.exec(error.message.trim())?.[1];
  return named === marker;
}

/** The error of a listing that ran out of its `timeoutMs`. */
function listingTimeout(url: string, timeoutMs: number, pages: number): NovaNetworkError {
  return new NovaNetworkError({
    status: 0,
    message: `GET ${url} timed out: the listing did not end within ${timeoutMs} ms (timeoutMs; ${pages} page${pages === 1 ? '' : 's'} read)`,
    method: 'GET',
    url,
    code: 'ETIMEDOUT',
    timedOut: true,
  });
}
