/**
 * How a delete engine uses shared listings over time: a back-off after listings fail (the servers get
 * their own GETs meanwhile), a wider `changes-since` window after servers were missing from one, the
 * microversion of the brief listing (2.69 or later, unless Nova answers 406 to it: then every
 * absence is proved by a GET), and the ids of the latest plausible brief listing (a listing that
 * shows none of them nor any pending server is not this project's, or dropped everything at once:
 * its absences are proved by GETs, see `plausiblyOurs` in `evidence.ts`).
 *
 * @module
 */
import { presenceMicroversion } from './observe.js';

/** Longest pause of shared listings after listings failed in a row, in ms. */
const MAX_LISTING_BACKOFF_MS = 60_000;

/** How much older than the newest brief listing's `Date` a listing's may be before it is stale, in ms (the header counts whole seconds). */
const STALE_DATE_SLACK_MS = 1000;

/** Widest extra window taken off `changes-since` after servers were missing from listings, in ms. */
const MAX_WIDEN_MS = 600_000;

/** The listing state of one engine. */
export class ListingPolicy {
  /** Extra window taken off `changes-since`, in ms. */
  widenMs = 0;
  /** The brief listing's microversion, or undefined for the client's own. */
  presenceMicroversion: string | undefined;
  /** A server missing from a brief listing that had it is gone (false once Nova refused 2.69). */
  trustAbsence = true;
  /**
   * The ids of the latest brief listing that was plausibly this project's (it showed a server known
   * to exist): a later listing that shows none of these nor any pending server proves no absence.
   */
  knownListed: ReadonlySet<string> = new Set();
  /** Nova's `Date` (epoch ms) of the newest plausible brief listing, when one carried it. */
  #newestListingDateMs = Number.NEGATIVE_INFINITY;
  #offUntil = Number.NEGATIVE_INFINITY;
  #backoffMs = 0;

  constructor(clientMicroversion: string) {
    const mv = presenceMicroversion(clientMicroversion);
    this.presenceMicroversion = mv === clientMicroversion ? undefined : mv;
  }

  /** Shared listings may be tried at clock time `now`. */
  usable(now: number): boolean {
    return now >= this.#offUntil;
  }

  /** A listing answered (`ok`) or failed at clock time `now`; `intervalMs` is the smallest pending interval. */
  listed(ok: boolean, now: number, intervalMs: number): void {
    if (ok) {
      this.#backoffMs = 0;
      return;
    }
    this.#backoffMs = Math.min(MAX_LISTING_BACKOFF_MS, Math.max(intervalMs, this.#backoffMs * 2));
    this.#offUntil = now + this.#backoffMs;
  }

  /** A server whose DELETE date was known was missing from a `changes-since` listing. */
  missing(): void {
    this.widenMs = Math.min(MAX_WIDEN_MS, Math.max(2000, this.widenMs * 2));
  }

  /**
   * A brief listing dated `serverDateMs` (its `Date` header) is older than one already taken, by more
   * than the header's one-second resolution: a stale answer (a cache, a proxy that replays), which
   * may not show servers created since: its absences prove nothing. Undefined (no `Date`): not known.
   */
  stale(serverDateMs: number | undefined): boolean {
    return serverDateMs !== undefined && Number.isFinite(serverDateMs) && serverDateMs < this.#newestListingDateMs - STALE_DATE_SLACK_MS;
  }

  /** A brief listing dated `serverDateMs` was plausibly this project's: its ids are the known ones from now on. */
  plausibleListing(ids: ReadonlySet<string>, serverDateMs: number | undefined): void {
    this.knownListed = ids;
    if (serverDateMs !== undefined && Number.isFinite(serverDateMs)) this.#newestListingDateMs = Math.max(this.#newestListingDateMs, serverDateMs);
  }

  /** Nova answered 406 to the brief listing at 2.69: older than that, so list at the client's microversion and prove absences by GET. */
  presenceUnsupported(): void {
    this.presenceMicroversion = undefined;
    this.trustAbsence = false;
  }
}
