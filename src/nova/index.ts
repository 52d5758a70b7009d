/**
 * Nova: `NovaClient`, the typed compute API calls (servers, flavors, limits, quota sets).
 *
 * @module
 */
export { NovaClient, parseAbsoluteLimits } from './client.js';
export { CLIENT_MAX_MICROVERSION } from './microversion.js';
export type { NovaClientOptions, CloudClientOptions, RequestOptions, RetryOptions, RawRequest, RawResponse, ListServersOptions, ListServersQuery, ClientStats } from './client.js';
