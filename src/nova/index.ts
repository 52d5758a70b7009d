/**
 * Nova: `NovaClient`, the typed compute API calls (servers, flavors, limits, quota sets).
 *
 * @module
 */
export { NovaClient, parseAbsoluteLimits } from './client.js';
export type { NovaClientOptions, CloudClientOptions, RequestOptions, RetryOptions, RawRequest, RawResponse, ListServersOptions, ListServersQuery, ClientStats } from './client.js';
