/**
 * Nova: `NovaClient`, the typed compute API calls (servers, flavors, limits, quota sets).
 *
 * @module
 */
export { NovaClient } from './client.js';
export { CLIENT_MAX_MICROVERSION } from './microversion.js';
export type { NovaClientOptions, CloudClientOptions, RequestOptions, RetryOptions, ListServersQuery } from './client.js';
