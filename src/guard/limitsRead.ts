/**
 * The guard's reading of `GET /limits` (Nova API reference, "Limits"): the request itself, with
 * bodies of another shape read as "unknown" ({@link readLimits}); the guard's `headroom()`
 * ({@link readHeadroom}); and, before every reading, the end of the claims nobody watches
 * ({@link refreshUnwatched}). The admission of a guarded call reads through the same functions
 * (`admission.ts`).
 *
 * **Time limit.** The time limit of the Nova reads a guarded call's admission makes (`GET /limits`, and the listing
 * of the servers Nova does not count yet that a ledger never vetted asks for): what is left of the
 * call's `maxWaitMs`, and at least `finalReadMs` (the read at the end of the wait, and every read with
 * `maxWaitMs: 0`). Without it a read that hangs held the call for the client's `requestTimeoutMs`
 * (30 s) per attempt, past `maxWaitMs`. The transport's time limit (`withTimeLimit`, p-timeout on the
 * client's clock): the read's AbortSignal (axios `signal`) is aborted when the limit passes, so no
 * request of the call is left running, and the call rejects with a {@link NovaNetworkError}
 * (`timedOut`, code `ETIMEDOUT`) naming the deadline. A
 * guarded call's wait for headroom thus ends by `maxWaitMs + finalReadMs` (plus the ledger's own
 * budget for a step at the end: `callLedger.ts`).
 *
 * **The servers Nova does not count yet.** The project's servers that Nova lists but does not count yet, for a ledger that must learn them
 * (`QuotaLedger.acquire`'s `uncounted`: a Redis ledger whose store may have been emptied lists once
 * before its first admission, `docs/fleet-ledger.md`).
 *
 * One `GET /servers/detail` at microversion 2.69 or later (flavors embedded from 2.47; Nova API
 * reference, "List Servers Detailed"), bounded by the client's request time limit. A server is
 * "not counted yet" when Nova's legacy counting counts it at all (`countsTowardUsage`) and it is
 * not surely past scheduling (`isPastScheduling`: BUILD with `task_state` `scheduling` or null and
 * no host is only a build request, which `nova/quota.py`'s legacy counting leaves out). Its needs
 * are its flavor's `vcpus` and `ram` (embedded, else `GET /flavors/{id}`, cached by the client) and
 * 1 instance; a flavor that cannot be read counts 0 cores and 0 MiB (as `needsFromFlavor` takes an
 * unknown need).
 *
 * @module
 */
import { InvalidResponseError, NotFoundError, throwIfAborted } from '../errors/index.js';
import { untilSettledOrAborted } from '../core/clock.js';
import type { AbsoluteLimits } from '../core/types.js';
import { LIMIT_KEYS, computeHeadroom, type Headroom } from '../ledger/index.js';
import { releaseClaim } from './ledgerUse.js';
import { CallLedger } from './callLedger.js';
import { renewQuietly } from './leases.js';
import { isPastScheduling } from './waitForActive.js';
import { warnOnce, type Claim, type GuardState } from './state.js';
import { NovaNetworkError } from '../errors/index.js';
import { withTimeLimit } from '../transport/timeLimit.js';
import type { GuardedCall } from './guardedCall.js';
import { countsTowardUsage, embeddedFlavor, flavorSize, statusOf, type FlavorSize } from '../core/counting.js';
import type { Server } from '../core/types.js';
import { AuthError, isAbortError } from '../errors/index.js';
import { presenceMicroversion } from '../delete/index.js';
import type { NovaClient } from '../nova/index.js';
import type { UncountedServer } from '../ledger/index.js';
import { CLAIM_ID_KEY } from './ledgerUse.js';
/**
 * `GET /limits`, or "unknown" when Nova answered 2xx with a body of another shape: without the
 * `limits` envelope (`{"absolute": {...}}`), `{}`, an HTML page. Unknown headroom never blocks and
 * never throws: the guard warns once and lets Nova's own check decide (the POST, then the quota 403
 * path). Other errors (5xx, network, abort) are thrown as the client throws them.
 */
export async function readLimits(g: GuardState, signal: AbortSignal | undefined): Promise<{ absolute: AbsoluteLimits; requestId: string | undefined }> {
  let absolute: AbsoluteLimits;
  let requestId: string | undefined;
  try {
    ({ absolute, requestId } = await g.client.getLimits({ signal }));
  } catch (e) {
    if (!(e instanceof InvalidResponseError)) throw e;
    warnOnce(g, 'limits-shape', { requestId: e.requestId, err: e.message }, 'GET /limits answered a body without limits.absolute: headroom unknown, Nova decides');
    return { absolute: {}, requestId: e.requestId };
  }
  const known = Object.values(LIMIT_KEYS).some((k) => absolute[k.max] !== undefined && absolute[k.used] !== undefined);
  if (!known) warnOnce(g, 'limits-empty', { requestId }, 'GET /limits gave no usable limit of cores, RAM or instances: headroom unknown, Nova decides');
  return { absolute, requestId };
}

/**
 * `/limits` through the ledger (`peek`) → headroom minus the ledger's claims. The guard's
 * `headroom()`.
 *
 * @throws the client's errors of `GET /limits`; {@link AbortError}.
 */
export async function readHeadroom(g: GuardState, signal: AbortSignal | undefined): Promise<Headroom> {
  await refreshUnwatched(g, signal);
  const { reading, inFlight } = await new CallLedger(g).peek((s) => readLimits(g, s), signal);
  return computeHeadroom(reading.absolute, inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
}

/**
 * With `waitForActive: false`: end the claims of servers that are past scheduling (Nova counts them:
 * `isPastScheduling`) or gone, and renew the leases of the others (nobody renews them on a timer: a
 * claim not seen by a read within `leaseTtlMs` expires).
 *
 * Every admission of every waiting call comes here, so one claim's server is looked at (a
 * `GET /servers/{id}` and a renewal) at most once per `activeIntervalMs` (at most a third of
 * `leaseTtlMs`), the rate of a watched server's polls, and a look in flight is shared by the
 * callers that arrive meanwhile (each waits under its own `signal`; the look itself is bounded by
 * the client's request time limit and by the guard's `close()`). Without it, N waiting calls sent
 * N looks per claim per backoff step: a busy Nova got more requests the more it was waited on.
 * @throws {@link AbortError} when `signal` aborts.
 */
export async function refreshUnwatched(g: GuardState, signal: AbortSignal | undefined): Promise<void> {
  const claims = [...g.claims].filter((c) => c.unwatched && c.serverId !== undefined);
  if (claims.length === 0) return;
  const everyMs = Math.min(g.opts.activeIntervalMs, g.opts.leaseTtlMs / 3);
  const looks: Array<Promise<void>> = [];
  for (const c of claims) {
    const look = c.look;
    if (look.running === undefined && (look.endedAtMs === undefined || g.clock.now() - look.endedAtMs >= everyMs)) {
      const l = look;
      l.running = lookAt(g, c).finally(() => {
        l.running = undefined;
        l.endedAtMs = g.clock.now();
      });
    }
    if (look.running) looks.push(look.running);
  }
  if (looks.length === 0) return;
  const all = Promise.all(looks);
  if (signal) {
    try {
      await untilSettledOrAborted(all, signal);
    } catch {
      throwIfAborted(signal);
    }
  }
  await all;
}

/** One look at an unwatched claim's server (see {@link refreshUnwatched}); never rejects. */
async function lookAt(g: GuardState, c: Claim): Promise<void> {
  if (g.clock.now() - c.claimedAtMs > g.opts.activeTimeoutMs) {
    await releaseClaim(g, c, 'counted');
    return;
  }
  if (!(await renewQuietly(g, c))) {
    // The ledger dropped it: nothing left to release there.
    await releaseClaim(g, c, 'counted');
    return;
  }
  try {
    // No caller's signal (the look is shared); the guard's close() ends it.
    const s = await g.client.getServer(c.serverId!, { signal: g.closing.signal });
    // Nova counts it once it is past scheduling (as the watched claims end: `guardedCreate.ts`);
    // ending it only when it leaves BUILD subtracted a building server twice (usage and claim).
    // A server in ERROR (NoValidHost, a failed build) may hold no cores or RAM under placement
    // counting: its deletion is not credited to a kept reading (`freedCredits.ts`).
    if (isPastScheduling(s)) await releaseClaim(g, c, 'counted', statusOf(s) !== 'ERROR');
  } catch (e) {
    if (e instanceof NotFoundError) await releaseClaim(g, c, 'not-created');
    // otherwise keep the claim: it errs on the side of waiting
  }
}

/** The limit of a read the call starts now, in ms: what is left of `maxWaitMs`, at least `finalReadMs` (`Infinity`: no limit). */
export function readLimitMs(g: GuardState, call: GuardedCall): number {
  return Math.ceil(Math.max(call.remainingMs(), g.opts.finalReadMs));
}

/**
 * `read` (one Nova read of the call's admission, `what` naming it: `'GET /limits'`), bounded by
 * {@link readLimitMs} and `signal`: past the limit, or when `signal` aborts, its signal aborts (the
 * request ends) and this rejects at once.
 * @throws {@link NovaNetworkError} (`timedOut`) when the limit passes; `AbortError` when `signal`
 * aborts; what `read` throws otherwise.
 */
export function withinCallDeadline<T>(g: GuardState, call: GuardedCall, what: string, read: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  const limitMs = readLimitMs(g, call);
  const [method, path] = what.split(' ');
  return withTimeLimit(g.clock, limitMs, signal, read, () =>
    new NovaNetworkError({
      status: 0,
      code: 'ETIMEDOUT',
      timedOut: true,
      method,
      url: path,
      message: `${what} timed out at the guarded call's deadline (no answer within ${limitMs} ms; maxWaitMs ${g.opts.maxWaitMs} ms, finalReadMs ${g.opts.finalReadMs} ms)`,
    }),
  );
}

/** Most pages one listing reads (at Nova's usual 1000 servers a page). */
const MAX_PAGES = 100;

/** The size of `server`'s flavor: embedded, else read (client-cached); undefined when it cannot be read. */
async function sizeOf(client: NovaClient, server: Server, signal: AbortSignal | undefined): Promise<FlavorSize | undefined> {
  const embedded = embeddedFlavor(server);
  if (embedded) return embedded;
  const flavorId = server.flavor?.id;
  if (flavorId === undefined || String(flavorId) === '') return undefined;
  try {
    return flavorSize(await client.getFlavor(String(flavorId), { signal }));
  } catch (e) {
    if (isAbortError(e) || e instanceof AuthError) throw e;
    return undefined;
  }
}

/**
 * The servers of `servers` (a listing of the project) that Nova does not count yet, with what each
 * will hold (see the module description).
 * @throws {@link AbortError} when `signal` aborts; {@link AuthError} when a flavor read is refused for the token.
 */
export async function uncountedOf(client: NovaClient, servers: readonly Server[], signal?: AbortSignal): Promise<UncountedServer[]> {
  const building = servers.filter((s) => countsTowardUsage(s) && !isPastScheduling(s));
  return Promise.all(
    building.map(async (s) => {
      const size = await sizeOf(client, s, signal);
      const claimId = s.metadata?.[CLAIM_ID_KEY];
      return {
        serverId: String(s.id),
        claimId: typeof claimId === 'string' && claimId !== '' ? claimId : undefined,
        needs: { cores: size?.vcpus ?? 0, ramMiB: size?.ram ?? 0, instances: 1 },
      };
    }),
  );
}

/**
 * One listing of the project (`GET /servers/detail`) and {@link uncountedOf} it.
 * @throws the client's errors of the listing; {@link AbortError} when `signal` aborts.
 */
export async function listUncounted(client: NovaClient, signal: AbortSignal | undefined): Promise<UncountedServer[]> {
  const servers = await client.listServers({}, { microversion: presenceMicroversion(client.microversion), timeoutMs: client.requestTimeoutMs, maxPages: MAX_PAGES, signal });
  return uncountedOf(client, servers, signal);
}
