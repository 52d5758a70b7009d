/**
 * The guard's reading of `GET /limits` (Nova API reference, "Limits"): the request itself, with
 * bodies of another shape read as "unknown" ({@link readLimits}); the guard's `headroom()`
 * ({@link readHeadroom}); and, before every reading, the end of the claims nobody watches
 * ({@link refreshUnwatched}). The admission of a guarded call reads through the same functions
 * (`admission.ts`).
 *
 * @module
 */
import { InvalidResponseError, NotFoundError, throwIfAborted } from '../errors/index.js';
import { untilSettledOrAborted } from '../core/clock.js';
import type { AbsoluteLimits } from '../core/types.js';
import { LIMIT_KEYS, computeHeadroom, NO_NEEDS, type Headroom } from '../ledger/index.js';
import { releaseClaim } from './ledgerUse.js';
import { CallLedger } from './callLedger.js';
import { renewQuietly } from './leases.js';
import { isPastScheduling } from './waitForActive.js';
import { warnOnce, type Claim, type GuardState } from './state.js';

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
 * Fresh `/limits` (through the ledger) → headroom minus the ledger's claims. The guard's
 * `headroom()`.
 *
 * @throws the client's errors of `GET /limits`; {@link AbortError}.
 */
export async function readHeadroom(g: GuardState, signal: AbortSignal | undefined): Promise<Headroom> {
  await refreshUnwatched(g, signal);
  const { reading, ledger } = await new CallLedger(g).readLimits((s) => readLimits(g, s), signal);
  const inFlight = (await g.res.inFlightOf(ledger, reading.stamp, signal)) ?? NO_NEEDS;
  return computeHeadroom(reading.absolute, inFlight, { requestId: reading.requestId, readAtMs: g.clock.wallNow() });
}

/** The look at one unwatched claim's server: in flight (shared), or when the last one ended. */
interface Look {
  running: Promise<void> | undefined;
  endedAtMs: number | undefined;
}

const LOOKS = new WeakMap<Claim, Look>();

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
    let look = LOOKS.get(c);
    if (!look) LOOKS.set(c, (look = { running: undefined, endedAtMs: undefined }));
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
    if (isPastScheduling(s)) await releaseClaim(g, c, 'counted');
  } catch (e) {
    if (e instanceof NotFoundError) await releaseClaim(g, c, 'not-created');
    // otherwise keep the claim: it errs on the side of waiting
  }
}
