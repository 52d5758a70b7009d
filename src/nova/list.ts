/**
 * Reading every page of a server listing (`GET /servers/detail` or `GET /servers`), bounded: the
 * `servers_links` "next" links are followed (api-guide "Paginated collections") at most
 * `maxPages` times, within `timeoutMs` in all, a marker never twice, a server never listed twice.
 *
 * Sources: Nova API reference, "List Servers" and "List Servers Detailed"; api-guide "Paginated
 * collections".
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Server } from '../core/types.js';
import { NovaNetworkError, throwIfAborted } from '../errors/index.js';
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
  try {
    for (;;) {
      let res: RawResponse;
      try {
        res = await deps.request({ method: 'GET', path, query: q, ...requestOptions, signal: controller.signal });
      } catch (e) {
        if (timedOut && !caller?.aborted) throw listingTimeout(url, timeoutMs, pages);
        throw e;
      }
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
      if (pages >= maxPages) {
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
