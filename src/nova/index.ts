/**
 * Nova: `NovaClient`, the typed compute API calls (servers, flavors, limits, quota sets).
 *
 * @module
 */
export { NovaClient } from './client.js';
export type { NovaClientOptions, CloudClientOptions, RequestOptions, RetryOptions, ListServersQuery } from './client.js';
