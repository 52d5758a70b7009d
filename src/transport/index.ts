/**
 * Transport: the one HTTP layer under Nova and Keystone (error mapping, retries of idempotent
 * requests, request ids, response shapes, TLS, the request-rate limiter).
 *
 * @module
 */
export * from './http.js';
export * from './retry.js';
export * from './responseShape.js';
export * from './rateLimiter.js';
export * from './tls.js';
