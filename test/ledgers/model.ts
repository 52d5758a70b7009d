/**
 * The reference model of a quota ledger's admission, as plain data and pure functions: what every
 * backend must decide (see `docs/ledger-conformance.md`).
 *
 * State: the live claims, the claims released as `'counted'` with the order number of their
 * release, the queue (oldest first), and one order counter that also numbers readings. Nova is
 * modelled beside it: the quota and what Nova counts (`used`), from which every `/limits` reading
 * is made, so "no admission takes more than the quota" can be checked.
 *
 * Admission ({@link decide}): `inFlight` = every live claim + every `'counted'` release whose order
 * number is at or after the reading's; `ahead` = the needs of every place before the caller's (all
 * places when it has none or its place is gone); the needs fit when, for every constrained resource
 * the call or the places ahead need, `needs + ahead <= headroom - inFlight` (the rule of the guard's
 * `fitsRawHeadroom`, `src/ledger/headroom.ts`). An expired lease drops its claim (no `'counted'`
 * record), as `ledger.ts` says ("drop expired claims").
 */
import type { ResourceAmounts } from '../../src/core/types.js';

export const RESOURCES = ['cores', 'ramMiB', 'instances'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Needs = ResourceAmounts;
/** Per resource: a number, or `undefined` when unlimited. */
export type Quota = Readonly<Partial<Record<Resource, number>>>;

export const ZERO: Needs = { cores: 0, ramMiB: 0, instances: 0 };
export const add = (a: Needs, b: Needs): Needs => ({ cores: a.cores + b.cores, ramMiB: a.ramMiB + b.ramMiB, instances: a.instances + b.instances });
const anything = (a: Needs): boolean => a.cores > 0 || a.ramMiB > 0 || a.instances > 0;

export interface ModelClaim {
  readonly needs: Needs;
  readonly holder: number;
  /** Taken through an admission (false: `claimAnyway`). */
  readonly checked: boolean;
  live: boolean;
  /** Its holder crashed: nobody will renew, bind or release it (its lease may still run out). */
  orphan: boolean;
  /**
   * Its POST may have been sent: renewed (answered `true`) since its admission, taken with
   * `claimAnyway`, or bound. A store that lost its state gets it back from its holder ({@link empty}).
   */
  posting: boolean;
}

export interface ModelCall {
  readonly needs: Needs;
  readonly holder: number;
  /** In the queue. */
  queued: boolean;
  /** Its holder crashed: its place stays until the place lease (beyond any sequence). */
  orphan: boolean;
  /** Admitted (it never admits again). */
  done: boolean;
}

export interface ModelState {
  readonly quota: Quota;
  /** What Nova counts. */
  used: Needs;
  order: number;
  readonly claims: ModelClaim[];
  readonly counted: Array<{ readonly needs: Needs; readonly order: number }>;
  readonly calls: ModelCall[];
  /** Call indices, oldest place first. */
  readonly queue: number[];
}

export function initialState(quota: Quota, used: Needs = ZERO): ModelState {
  return { quota, used: { ...used }, order: 0, claims: [], counted: [], calls: [], queue: [] };
}

/** Headroom of a reading made now: `quota - used`, at least 0; `undefined` for an unlimited resource. */
export function headroomNow(s: ModelState): Partial<Needs> {
  const out: Partial<Record<Resource, number>> = {};
  for (const r of RESOURCES) {
    const q = s.quota[r];
    if (q !== undefined) out[r] = Math.max(0, q - s.used[r]);
  }
  return out;
}

/** A reading is sent: its order number. */
export function openReading(s: ModelState): number {
  return ++s.order;
}

export interface Decision {
  readonly fits: boolean;
  readonly inFlight: Needs;
  readonly ahead: Needs;
}

/** The admission rule (see the module description). Pure. */
export function decide(s: ModelState, call: number | undefined, needs: Needs, headroom: Partial<Needs>, stamp: number): Decision {
  let inFlight = ZERO;
  for (const c of s.claims) if (c.live) inFlight = add(inFlight, c.needs);
  for (const c of s.counted) if (c.order >= stamp) inFlight = add(inFlight, c.needs);
  let ahead = ZERO;
  const mine = call === undefined ? -1 : s.queue.indexOf(call);
  const before = mine < 0 ? s.queue : s.queue.slice(0, mine);
  for (const i of before) if (i !== call) ahead = add(ahead, s.calls[i]!.needs);
  const fitsOne = (want: Needs): boolean =>
    RESOURCES.every((r) => {
      const h = headroom[r];
      return want[r] <= 0 || h === undefined || want[r] <= Math.max(0, h - inFlight[r]);
    });
  const fits = fitsOne(needs) && (!anything(ahead) || fitsOne(add(needs, ahead)));
  return { fits, inFlight, ahead };
}

/** Apply an admission's outcome: a claim taken (the call leaves the queue), or a place when short without one. */
export function applyDecision(s: ModelState, call: number, d: Decision): number | undefined {
  const c = s.calls[call]!;
  if (d.fits) {
    c.done = true;
    if (c.queued) {
      c.queued = false;
      s.queue.splice(s.queue.indexOf(call), 1);
    }
    s.claims.push({ needs: c.needs, holder: c.holder, checked: true, live: true, orphan: false, posting: false });
    return s.claims.length - 1;
  }
  if (!c.queued) {
    c.queued = true;
    s.queue.push(call);
  }
  return undefined;
}

/** End a claim: `'counted'` (Nova counts its server now) keeps a record with its order number. */
export function release(s: ModelState, claim: number, end: 'counted' | 'not-created'): void {
  const c = s.claims[claim]!;
  if (!c.live) return;
  c.live = false;
  if (end === 'counted') {
    s.counted.push({ needs: c.needs, order: ++s.order });
    s.used = add(s.used, c.needs);
  }
}

/** A lease ran out: the claim is dropped (Nova never saw its server: the holder did not post). */
export function lapse(s: ModelState, claim: number): void {
  s.claims[claim]!.live = false;
}

export function leave(s: ModelState, call: number): void {
  const c = s.calls[call]!;
  if (!c.queued) return;
  c.queued = false;
  s.queue.splice(s.queue.indexOf(call), 1);
}

/**
 * The store lost its state (Redis restarted empty) and every holder is back, its write-back done
 * (`src/ledger/port.ts`, "A store that lost its state"): a live claim comes back only when it is
 * posting; a claim only admitted is gone (no `'counted'` record: its POST was never sent, Nova
 * counts nothing for it). Places come back (each holder writes back its own, in their order), and
 * so do the claims of a crashed holder (in these tests its ledger object still runs). The
 * `'counted'` records go with the store: every reading sent from now on is numbered after them,
 * so none would be subtracted anyway. Returns the number of claims dropped.
 */
export function empty(s: ModelState): number {
  let dropped = 0;
  for (const c of s.claims) {
    if (c.live && !c.posting) {
      c.live = false;
      dropped++;
    }
  }
  return dropped;
}

/** A holder crashed: its claims and places stay in the store, nobody acts on them any more. */
export function crash(s: ModelState, holder: number): void {
  for (const c of s.claims) if (c.holder === holder) c.orphan = true;
  for (const c of s.calls) if (c.holder === holder) c.orphan = true;
}

/**
 * The quota invariant after an admission: for every limited resource, what Nova counts plus every
 * live checked claim stays within the quota, unless claims taken without a check (`claimAnyway`) or
 * usage outside the ledger already passed it.
 */
export function withinQuota(s: ModelState): boolean {
  let held = ZERO;
  for (const c of s.claims) if (c.live) held = add(held, c.needs);
  return RESOURCES.every((r) => {
    const q = s.quota[r];
    return q === undefined || s.used[r] + held[r] <= q;
  });
}
