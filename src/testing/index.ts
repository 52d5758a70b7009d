/**
 * `nova-guard/testing`: fakes of OpenStack services for testing code that talks to Nova.
 *
 * @module
 */
export * from './fakeNova.js';
export * from './fakeKeystone.js';
export type { StoredUser } from './fakeKeystone/tokens.js';
export type { TlsPair } from './wire/httpBinding.js';
