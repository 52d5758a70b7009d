/**
 * Authentication: token providers, Keystone v3 (password, application credential, token).
 *
 * @module
 */
export { StaticTokenProvider } from './provider.js';
export type { AuthProvider, GetTokenOptions } from './provider.js';
export { KeystoneAuth, EndpointNotFoundError } from './keystone.js';
export type { KeystoneAuthOptions, KeystoneCredentials } from './keystone.js';
