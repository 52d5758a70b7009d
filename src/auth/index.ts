/**
 * Authentication: token providers, Keystone v3 (password, application credential, token).
 *
 * @module
 */
export { StaticTokenProvider } from './provider.js';
export type { AuthProvider, GetTokenOptions } from './provider.js';
export type { EndpointInterface } from './catalog.js';
export type { KeystoneTokenInfo } from './token.js';
export { KeystoneAuth, MIN_TOKEN_LIFE_MS, EndpointNotFoundError } from './keystone.js';
export type { KeystoneAuthOptions, KeystoneCredentials, KeystoneMethod, CatalogEntry, CatalogEndpoint, EndpointFilter } from './keystone.js';
