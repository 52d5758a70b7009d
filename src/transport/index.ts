/**
 * Transport: the one HTTP layer under Nova and Keystone (`Transport`: time limits, TLS, redaction,
 * request ids), error mapping and the one definition of "transient" (`isTransient`), the one retry
 * policy (`withRetry`), response shapes, and the request-rate limiter.
 *
 * @module
 */
export * from './http.js';
export * from './retry.js';
export * from './responseShape.js';
export * from './rateLimiter.js';
export * from './tls.js';
export * from './transport.js';
