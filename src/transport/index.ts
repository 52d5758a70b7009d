/**
 * Transport: the one HTTP layer under Nova and Keystone (`Transport`: time limits, TLS, redaction,
 * request ids), error mapping and the one definition of "transient" (`isTransient`), the one retry
 * policy (`withRetry`) and response shapes. The delete engine paces its requests with p-throttle.
 *
 * @module
 */
export * from './http.js';
export * from './retry.js';
export * from './responseShape.js';
export * from './tls.js';
export * from './transport.js';
