/**
 * The one request/reply shape every fake of `nova-guard/testing` answers, whichever front the
 * request came through: a real socket ({@link HttpBinding}) or the in-process axios adapter
 * ({@link AdapterBinding}). A fake writes one {@link WireHandler}; both fronts run it, so routing,
 * recording and injected faults cannot drift apart.
 *
 * @module
 */

/** One request as a fake sees it. */
export interface WireRequest {
  /** HTTP method, upper case. */
  method: string;
  /** Path and query as sent, e.g. `/v2.1/servers/detail?changes-since=...`. */
  url: string;
  /** Request headers, names in lower case (as `node:http` gives them). */
  headers: Record<string, string | string[] | undefined>;
  /** The body as UTF-8 text (`''` when there is none). */
  body: Promise<string>;
}

/** How a fake answers one request; the first call of `send` or `reset` wins, later ones are ignored. */
export interface WireReply {
  /**
   * Send the whole response. Header names as the fake spells them; a `Date` header is added when the
   * fake sets none (as `node:http` does).
   */
  send(status: number, headers: Record<string, string>, body: Buffer | undefined): void;
  /** Drop the connection without an answer: the client sees `ECONNRESET` ("socket hang up"). */
  reset(): void;
  /**
   * True once the exchange is over: answered, reset, or the client went away (aborted, timed out,
   * socket closed). A fake skips a delayed request's side effects when its client is gone.
   */
  readonly gone: boolean;
}

/** A fake's request handler. Not answering at all is a hang: the request waits for the client or `close()`. */
export type WireHandler = (req: WireRequest, reply: WireReply) => void;
