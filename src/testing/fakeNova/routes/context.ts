/**
 * What a route handler of the fake gets: the shared engine (state, quota, compute side) and the
 * parsed request.
 *
 * @module
 */
import type { Compute } from '../compute.js';
import type { Microversion } from '../microversion.js';
import type { QuotaBook } from '../quota.js';
import type { ServerStore } from '../state.js';
import type { FakeFlavor, UsageCounts } from '../types.js';
import type { ViewContext } from '../views.js';

/** Shared state of one fake. */
export interface Engine {
  store: ServerStore;
  compute: Compute;
  quota: QuotaBook;
  flavors: Map<string, FakeFlavor>;
  projectId: string;
  /** Nova's `[api] max_limit`. */
  pageSize: number;
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  /** What Nova counts at check time (truth + drift). */
  countedUsage(): UsageCounts;
  /** What `/limits` and the quota detail report (truth + drift + lag). */
  reportedUsage(): UsageCounts;
}

/** One parsed request. */
export interface Ctx {
  method: string;
  /** Path without `/v2.1` and without a project id segment. */
  path: string;
  query: Record<string, string>;
  /** The URL's query string in order, for `servers_links`. */
  search: URLSearchParams;
  /** Parsed JSON body, undefined when there was none. */
  body: unknown;
  /** The body was not valid JSON. */
  bodyMalformed: boolean;
  version: Microversion;
  admin: boolean;
  userId: string;
  /** The request URL carried the project id (`/v2.1/{project_id}/servers`). */
  projectInPath: boolean;
  view: ViewContext;
}
