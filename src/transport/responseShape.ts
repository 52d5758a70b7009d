/**
 * Checking the shape of Nova's 2xx bodies before nova-guard reads them: a proxy page, JSON `null` or
 * a body without the member the Nova API reference promises becomes an {@link InvalidResponseError},
 * never a `TypeError` and never a silently empty answer.
 *
 * Shapes (Nova API reference): "Show Server Details" `{"server": {...}}`, "List Servers Detailed"
 * `{"servers": [...], "servers_links": [...]}`, "Create Server" `{"server": {...}}`, "Show Flavor
 * Details" `{"flavor": {...}}`, "Show Rate And Absolute Limits" `{"limits": {"absolute": {...}}}`,
 * "Show The Detail of Quota" `{"quota_set": {...}}`.
 *
 * @module
 */
import { InvalidResponseError } from '../errors/index.js';
import { textSnippet, type Redactor } from './http.js';
import { isPlainObject } from '../core/validate.js';

/** What the error needs to know about the exchange. */
export interface ShapeContext {
  method: string;
  /** Request URL (or path) for the message. */
  url: string;
  status: number;
  requestId?: string | undefined;
  serverId?: string | undefined;
  /** Extra sentence for the message, e.g. that a POST may have created a server. */
  note?: string | undefined;
  /** Removes the caller's secrets (a body may echo the request) before any of it reaches a message. */
  redact?: Redactor | undefined;
}

function invalid(ctx: ShapeContext, expected: string, body: unknown): InvalidResponseError {
  return unexpectedBody(ctx, `expected ${expected} (${textSnippet(body, ctx.redact)})${ctx.note ? `. ${ctx.note}` : ''}`);
}

/** An {@link InvalidResponseError} for a body whose shape is right but whose content cannot be used (`problem`). */
export function invalidResponse(ctx: ShapeContext, problem: string): InvalidResponseError {
  return unexpectedBody(ctx, ctx.redact ? ctx.redact(problem) : problem);
}

function unexpectedBody(ctx: ShapeContext, detail: string): InvalidResponseError {
  const { status, requestId, method, url, serverId } = ctx;
  return new InvalidResponseError({ status, message: `Nova answered ${status} to ${method} ${url} with an unexpected body: ${detail}`, requestId, method, url, serverId });
}

/**
 * `body[key]` when `body` is a JSON object whose `key` is a JSON object.
 * @throws {@link InvalidResponseError} otherwise.
 */
export function objectMember<T>(body: unknown, key: string, ctx: ShapeContext): T {
  const v = isPlainObject(body) ? body[key] : undefined;
  if (!isPlainObject(v)) throw invalid(ctx, `a JSON object with a "${key}" object`, body);
  return v as T;
}

/**
 * `body[key]` when it is a JSON object with a non-empty string `id` (a server as Nova shows it).
 * @throws {@link InvalidResponseError} otherwise.
 */
export function idObjectMember<T>(body: unknown, key: string, ctx: ShapeContext): T {
  const v = objectMember<Record<string, unknown>>(body, key, ctx);
  if (typeof v['id'] !== 'string' || v['id'] === '') throw invalid(ctx, `a JSON object with a "${key}" object that has an "id"`, body);
  return v as T;
}

/**
 * `body[key]` when it is a list of JSON objects, each with a non-empty string `id`.
 * @throws {@link InvalidResponseError} otherwise.
 */
export function idObjectListMember<T>(body: unknown, key: string, ctx: ShapeContext): T[] {
  const v = objectListMember<Record<string, unknown>>(body, key, ctx);
  if (!v.every((o) => typeof o['id'] === 'string' && o['id'] !== '')) throw invalid(ctx, `a JSON object with a "${key}" list of objects that have an "id"`, body);
  return v as T[];
}

/**
 * `body[key]` when `body` is a JSON object whose `key` is a list of JSON objects.
 * @throws {@link InvalidResponseError} otherwise.
 */
export function objectListMember<T>(body: unknown, key: string, ctx: ShapeContext): T[] {
  const v = isPlainObject(body) ? body[key] : undefined;
  if (!Array.isArray(v) || !v.every(isPlainObject)) throw invalid(ctx, `a JSON object with a "${key}" list of objects`, body);
  return v as T[];
}

/**
 * `body[key]` when it is a list of objects, `[]` when `body` has no `key` (an optional member such as
 * `servers_links`).
 * @throws {@link InvalidResponseError} when it is there but not a list of objects.
 */
export function optionalObjectListMember<T>(body: unknown, key: string, ctx: ShapeContext): T[] {
  if (!isPlainObject(body) || body[key] === undefined || body[key] === null) return [];
  return objectListMember<T>(body, key, ctx);
}
