/**
 * `nova-guard/redis`: the fleet quota ledger on Redis, for the guards of many processes on many
 * hosts that share one project's quota. Needs the optional peer dependency `ioredis` (5.x); the
 * main entry `nova-guard` never imports this folder, so users without Redis need not install it.
 *
 * @module
 */
export { RedisQuotaLedger } from './ledger.js';
export type { RedisQuotaLedgerOptions } from './options.js';
export { MIN_PLACE_TTL_MS } from './options.js';
export { RedisLedgerError } from './errors.js';
export type { FleetWatcher, FleetStats } from '../delete/index.js';
export { MIN_FLEET_LEASE_TTL_MS } from './options.js';
export type { FleetLink, FleetInterest } from '../delete/index.js';
