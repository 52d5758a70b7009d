/**
 * How a delete engine uses shared listings over time: a back-off after listings fail (the servers get
 * their own GETs meanwhile), a wider `changes-since` window after servers were missing from one, and
 * the microversion of the brief listing (2.69 or later, unless Nova answers 406 to it). No listing
 * proves an absence (`evidence.ts`): a server missing from one gets its own GET, whose 404 decides.
 *
 * @module
 */
import { presenceMicroversion } from './observe.js';

/** Longest pause of shared listings after listings failed in a row, in ms. */
const MAX_LISTING_BACKOFF_MS = 60_000;

/** Widest extra window taken off `changes-since` after servers were missing from listings, in ms. */
const MAX_WIDEN_MS = 600_000;

/** The listing state of one engine. */
export class ListingPolicy {
  /** Extra window taken off `changes-since`, in ms. */
  widenMs = 0;
  /** The brief listing's microversion, or undefined for the client's own. */
  presenceMicroversion: string | undefined;
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

  /** Nova answered 406 to the brief listing at 2.69: older than that, so list at the client's microversion. */
  presenceUnsupported(): void {
    this.presenceMicroversion = undefined;
  }
}
