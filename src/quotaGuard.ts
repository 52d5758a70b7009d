/**
 * Entry point: `QuotaGuard` and headroom (see `src/guard/`).
 *
 * @module
 */
export * from './guard/index.js';
// Registers the resolver of ledger strings (QuotaGuard's `ledger: 'sqlite:…'`).
import './ledgers/index.js';
