/**
 * The coordination port: `QuotaLedger`, what every ledger (in-process, SQLite, Redis) implements,
 * its data types, the in-process ledger, and the helpers the backends share (the fit rule of an
 * admission, the wake-ups of queued places, the scope checks, the option checks).
 *
 * Layering: above `core`, `errors` and `nova`, below the backends (`src/sqlite`, `src/redis`) and
 * the guard that uses it; it imports neither.
 *
 * @module
 */
export type {
  QuotaLedger,
  LimitsReading,
  LedgerPlace,
  LedgerClaim,
  LedgerLimits,
  RawHeadroom,
  AdmitRequest,
  Admission,
  ClaimEnd,
  LedgerScope,
  AcquireRequest,
  Acquisition,
  UncountedServer,
  UncountedRead,
  LedgerPeek,
  LimitsRead,
  FreedCredit,
} from './port.js';
export { isLedgerDown, ledgerDownCode, refutedOrder, waitForOthersRead } from './port.js';
export { FreshWhenAsked } from './freshWhenAsked.js';
export { InProcessQuotaLedger, READ_GRACE_MS } from './inProcess.js';
export type { InProcessQuotaLedgerOptions } from './inProcess.js';
export { ClaimLedger, type Claim } from './claims.js';
export { PlaceWakes } from './placeWakes.js';
export { clientScope, fleetWatcherWanted, scopeMismatch, describeScope, checkScopeNow, bindLedgerScope } from './scope.js';
export type { ClientScopeOptions } from './scope.js';
export { isClock, isHolderName, defaultHolder } from './holder.js';
export {
  QUOTA_RESOURCES,
  AMOUNT_FIELD,
  LIMIT_KEYS,
  NO_NEEDS,
  neededOf,
  computeHeadroom,
  creditedLimits,
  checkFit,
  describeShortfalls,
  shortfallResources,
  addNeeds,
  isAnything,
  fitsRawHeadroom,
  rawHeadroomOf,
} from './headroom.js';
export type { QuotaNeeds, Headroom, ResourceHeadroom, Shortfall, FitVerdict, QuotaResourceName } from './headroom.js';
