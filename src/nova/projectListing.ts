/**
 * The newest listing of a client's project (`GET /servers/detail`) that its callers may share: one
 * object per `NovaClient` (`client.projectListing`), so that every guard of the client shares it
 * without state kept beside the client. Who may take it, and when to send the next, is the
 * caller's rule (the quota guard's shortfall checks: `src/guard/explain.ts`).
 *
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Server } from '../core/types.js';

/** One listing: when it was sent, its answer, and whether it has settled. */
export interface SharedListing {
  /** When it was sent, on the client's clock (monotonic ms). */
  readonly sentAtMs: number;
  /** The project's servers (rejects as the listing failed). */
  readonly servers: Promise<readonly Server[]>;
  /** True once `servers` has settled (answered or failed). */
  readonly settled: boolean;
}

/** The newest shared listing of one client's project (see the module). */
export class ProjectListing {
  readonly #list: () => Promise<readonly Server[]>;
  readonly #clock: Clock;
  #newest: { sentAtMs: number; servers: Promise<readonly Server[]>; settled: boolean } | undefined;

  /**
   * @param list - Sends one listing of the project (the client's `listServers` with the caller's bounds).
   * @param clock - The client's clock.
   */
  constructor(list: () => Promise<readonly Server[]>, clock: Clock) {
    this.#list = list;
    this.#clock = clock;
  }

  /** The newest listing sent, if any (in flight or settled). */
  newest(): SharedListing | undefined {
    return this.#newest;
  }

  /** Send a listing now; it becomes the newest. */
  send(): SharedListing {
    const servers = this.#list();
    const listing = { sentAtMs: this.#clock.now(), servers, settled: false };
    void servers.then(
      () => (listing.settled = true),
      () => (listing.settled = true),
    );
    this.#newest = listing;
    return listing;
  }
}
