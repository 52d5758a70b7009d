/**
 * One look at servers being deleted: the requests the delete engine sends, and how an answer is read.
 *
 * - `GET /servers/{id}` (Nova API reference, "Show Server Details"): a body for this very id is an
 *   observation; Nova's `itemNotFound` 404 naming the server is the proof that it is gone. A 404
 *   that is not Nova's answer for this server (a proxy page, a wrong endpoint), a body for another
 *   id or a garbled body is a failed look, never "gone".
 * - `GET /servers/detail?changes-since=T` (Nova API reference, "List Servers Detailed"): every server
 *   of the project changed since `T` on Nova's clock, deleted ones included (status `DELETED`, both
 *   while Nova destroys them and after). A server absent from it is only "not seen": it is looked
 *   at by its own GET, never taken as unchanged or gone.
 * - `GET /servers` (Nova API reference, "List Servers"; ids only): lists a server until Nova destroys
 *   it, its `DELETED` window included. A server that showed `DELETED` and is absent from it is about
 *   to be confirmed by its own GET (the 404).
 *
 * @module
 */
import { InvalidResponseError } from '../errors/index.js';
import { isServerNotFound, isTransient } from '../transport/http.js';
import type { Server } from '../core/types.js';
import { statusOf } from '../core/counting.js';
import type { Observation, ServerApi, WaitOutcome } from './types.js';

export type { Observation } from './types.js';

/** Margin taken off every `changes-since` time, in ms: the `Date` header's one-second resolution, rounding of `updated_at` and latency. */
export const CHANGES_SINCE_MARGIN_MS = 2000;

/** Nova's `utils.isotime` form of a time, floored to the second: `2026-11-30T14:03:09Z`. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A fault's identity: its time and message (Nova records a new fault for each failure). */
export function faultKey(server: Server | undefined): string | undefined {
  const f = server?.fault;
  return f ? `${String(f.created)} ${String(f.message)}` : undefined;
}

/**
 * The end a look means for a wait, or undefined while the deletion goes on. Status is compared in
 * upper case (Nova spells it so; some proxies and fakes do not). `DELETED` is not an end: Nova frees
 * the server's cores only at its 404.
 *
 * ERROR with task_state `deleting` is a server in ERROR being deleted, which goes on, unless it shows
 * a fault it did not have when the DELETE was accepted (`faultBeforeDelete`), recorded in a later
 * second than that DELETE's `Date` (`deleteDateMs`): then Nova's terminate failed (`terminate_instance` records the
 * fault and leaves task_state `deleting`, and a repeated DELETE is ignored), and waiting cannot help.
 */
export function classify(obs: Observation, deleteDateMs?: number, faultBeforeDelete?: string): Exclude<WaitOutcome, 'timeout'> | undefined {
  if (obs.gone) return 'deleted';
  const status = statusOf(obs.server);
  const taskState = obs.server['OS-EXT-STS:task_state'];
  const idle = taskState === null || taskState === undefined || taskState === '';
  // SOFT_DELETED with task_state deleting: a force-delete of it is under way (Nova keeps the status).
  if (status === 'SOFT_DELETED') return idle ? 'soft-deleted' : undefined;
  if (status === 'ERROR' && idle) return 'error';
  if (status === 'ERROR' && taskState === 'deleting' && deleteDateMs !== undefined && faultKey(obs.server) !== faultBeforeDelete) {
    // Both times have one-second resolution: only a fault of a later second than the DELETE's is
    // surely newer (one of the same second may be the reason the server was in ERROR before).
    const faultAt = Date.parse(String(obs.server.fault?.created ?? ''));
    if (Number.isFinite(faultAt) && faultAt >= (Math.floor(deleteDateMs / 1000) + 1) * 1000) return 'error';
  }
  return undefined;
}

/** True when the server shows status `DELETED` (Nova is destroying it; its 404 follows). */
export function showsDeleted(obs: Observation): boolean {
  return !obs.gone && statusOf(obs.server) === 'DELETED';
}

/**
 * A failure that ends a wait at once: anything but a transient failure (5xx, no response, request
 * timeout, rate limit). A 401 after the client's re-authentication, a 403, a 404 that is not Nova's
 * answer for this server (a wrong endpoint, a proxy page) or a garbled body will not mend by looking
 * again, and is never taken as "gone": the server stays in the client's unconfirmed deletions.
 */
export function isFatalLookFailure(error: unknown): boolean {
  return !isTransient(error);
}

/**
 * `GET /servers/{id}` as one look (one attempt: the engine's schedule is the retry).
 * @throws the request's error when it is not Nova's 404 for this server; {@link InvalidResponseError} for a body of another server.
 */
export async function lookById(api: ServerApi, serverId: string, signal: AbortSignal, requestTimeoutMs: number): Promise<Observation> {
  let server: Server;
  try {
    server = await api.getServer(serverId, { signal, requestTimeoutMs, retry: false });
  } catch (e) {
    if (isServerNotFound(e, serverId)) return { gone: true };
    throw e;
  }
  if (server.id !== serverId) {
    throw new InvalidResponseError({
      status: 200,
      message: `GET /servers/${serverId} answered with the body of server ${JSON.stringify(String(server.id))}`,
      method: 'GET',
      serverId,
    });
  }
  return { gone: false, server };
}

/**
 * The `tenant_id` of a listed server that is not `projectId` (the client's project), or undefined.
 * Nova lists only the project's own servers unless asked for `all_tenants`, which the delete engine
 * never asks for: a server of another project means the answer is not this project's listing (a
 * misrouted cache or proxy), and its absences prove nothing.
 */
export function foreignProject(servers: readonly Server[], projectId: string | undefined): string | undefined {
  if (projectId === undefined) return undefined;
  for (const s of servers) {
    const tenant = s['tenant_id'];
    if (typeof tenant === 'string' && tenant !== projectId) return tenant;
  }
  return undefined;
}

/**
 * `GET /servers/detail?changes-since=<sinceNovaMs>`: the bodies by id, and Nova's `Date` of the answer.
 * @throws {@link InvalidResponseError} when it lists a server of another project than the client's
 * (`tenant_id`, see {@link foreignProject}): a failed listing, never evidence.
 */
export function listChangedSince(api: ServerApi, sinceNovaMs: number, signal: AbortSignal, requestTimeoutMs: number): Promise<DetailListing> {
  return listDetail(api, { 'changes-since': isoSeconds(sinceNovaMs) }, signal, requestTimeoutMs);
}

/**
 * `GET /servers/detail` without a filter: every server the project has, with its body (a server Nova
 * has destroyed is not in it, one showing `DELETED` whose row is not destroyed yet is). It answers
 * what a `changes-since` listing and a brief listing answer together, in one request.
 * @throws {@link InvalidResponseError} as {@link listChangedSince}.
 */
export function listWhole(api: ServerApi, signal: AbortSignal, requestTimeoutMs: number): Promise<DetailListing> {
  return listDetail(api, {}, signal, requestTimeoutMs);
}

/** A detail listing: the bodies by id, Nova's `Date` of its first page (epoch ms), and the pages read. */
export interface DetailListing {
  readonly byId: Map<string, Server>;
  readonly serverDateMs: number | undefined;
  readonly pages: number;
}

/** `GET /servers/detail` with `query`, refused as a failed listing when it shows another project's server. */
async function listDetail(api: ServerApi, query: Record<string, string>, signal: AbortSignal, requestTimeoutMs: number): Promise<DetailListing> {
  const { servers, serverDateMs, pages } = await api.listServersWithMeta(query, { signal, requestTimeoutMs, retry: false });
  const foreign = foreignProject(servers, api.projectId);
  if (foreign !== undefined) {
    throw new InvalidResponseError({
      status: 200,
      message: `GET /servers/detail listed a server of project ${JSON.stringify(foreign)}, not of the client's project ${JSON.stringify(api.projectId)}: not this project's listing (a misrouted cache or proxy?), taken as a failed listing`,
      method: 'GET',
    });
  }
  const byId = new Map<string, Server>();
  for (const s of servers) if (typeof s.id === 'string') byId.set(s.id, s);
  return { byId, serverDateMs, pages };
}

/**
 * The microversion of the brief listing: at least 2.69, from which Nova lists the servers of a cell
 * it cannot reach (status `UNKNOWN`) instead of leaving them out (Nova API reference, "List Servers",
 * microversion 2.69), so a server missing from it is really gone.
 */
export function presenceMicroversion(clientMicroversion: string): string {
  const minor = /^2\.(\d+)$/.exec(clientMicroversion)?.[1];
  return minor !== undefined && Number(minor) < 69 ? '2.69' : clientMicroversion;
}

/** `GET /servers` (ids only, every page) at {@link presenceMicroversion}: the ids Nova lists, and the `Date` of its first page (epoch ms). */
export async function listIds(
  api: ServerApi,
  signal: AbortSignal,
  requestTimeoutMs: number,
  microversion?: string,
): Promise<{ ids: Set<string>; pages: number; serverDateMs: number | undefined }> {
  const { servers, pages, serverDateMs } = await api.listServersWithMeta({}, { signal, requestTimeoutMs, retry: false, brief: true, ...(microversion ? { microversion } : {}) });
  return { ids: new Set(servers.map((s) => String(s.id))), pages, serverDateMs };
}
