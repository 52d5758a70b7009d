/**
 * The reaper's decisions for one pass, as plain functions on plain data: which listed servers belong
 * to the fleet, which are old enough, and which have been candidates on two consecutive passes (and
 * so may be deleted). No requests here; {@link Reaper} does the I/O.
 *
 * The two-pass rule is nodepool's leak cleanup (`nodepool/driver/statemachine.py`
 * `cleanupLeakedResources`: "We've seen this twice now, so it's not a race condition"; see
 * `docs/field-cases.md#what-nodepool-does`).
 *
 * @module
 */
import { ValidationError } from '../errors/index.js';
import type { Server } from '../core/types.js';
import { statusOf } from '../core/counting.js';

/** Which servers belong to the fleet. At least one of `prefix` and `metadataKey` is required; both must match when both are given. */
export interface FleetSelector {
  /** Server name prefix, e.g. `'adt-'` (case-sensitive). */
  prefix?: string | undefined;
  /** A metadata key the fleet's servers carry, e.g. `'ci-worker'`. */
  metadataKey?: string | undefined;
  /** With `metadataKey`: the value it must have. Without it any value matches. */
  metadataValue?: string | undefined;
}

/** Why a fleet server was not deleted in a pass. */
export type ReapSkipReason =
  /** Younger than `olderThanMs`. */
  | 'too-young'
  /** No valid `created` time: its age is unknown. */
  | 'no-created-time'
  /** A candidate seen for the first time: deleted on the next pass if still a candidate. */
  | 'first-sighting'
  /** A candidate that changed since the previous pass (status, task_state, name, metadata, `updated`): seen anew. */
  | 'changed'
  /** A candidate of the previous pass that is no longer listed. */
  | 'vanished'
  /** A candidate of the previous pass that no longer matches the fleet selector. */
  | 'left-fleet'
  /**
   * Status SOFT_DELETED or DELETED: already deleted. A `changes-since` listing carries DELETED records
   * (Nova API guide, "Polling changes"); a SOFT_DELETED server is reclaimed by Nova itself (or restored
   * by its owner), so the reaper leaves both alone.
   */
  | 'deleted-status'
  /**
   * Status UNKNOWN: the server's cell does not answer (Nova API guide, "Down cells": from microversion
   * 2.69 such servers are listed as stubs without name, metadata or flavor). It exists but its owner is
   * unknowable: never reaped; its run of consecutive sightings starts again once its cell answers.
   */
  | 'status-unknown'
  /**
   * The server carries the mark of a live claim (see {@link LiveMark}: e.g. a `QuotaGuard` create
   * still in flight, or a claim tag it still watches): never reaped, whatever its age; its run of
   * consecutive sightings starts again once the claim has ended.
   */
  | 'claim-live'
  /** Would be deleted, but this is a dry run. */
  | 'dry-run';

/**
 * Servers that belong to a live claim: those whose metadata `key` has one of `values`. A
 * `QuotaGuard`'s `liveClaims()` gives them: its held claims by `nova-guard-claim-id`, the claim
 * tags it still watches by `nova-guard-claim`. A tagged server whose claim has ended (in no mark)
 * is a candidate under the usual rules (`olderThanMs`, two passes).
 */
export interface LiveMark {
  /** Metadata key, e.g. `'nova-guard-claim'`. */
  readonly key: string;
  /** Its values that mark a live claim. */
  readonly values: readonly string[];
}

/** True when `server`'s metadata carries one of `marks`. */
export function hasLiveMark(server: Server, marks: readonly LiveMark[]): boolean {
  const md = server.metadata;
  if (!md || typeof md !== 'object') return false;
  return marks.some((m) => Object.hasOwn(md, m.key) && m.values.includes(String(md[m.key])));
}

/** A fleet server the pass did not delete. */
export interface ReapSkip {
  serverId: string;
  name: string | undefined;
  reason: ReapSkipReason;
  /** The reason in words. */
  detail: string;
  /** Age in ms, when known. */
  ageMs?: number | undefined;
}

/** A server that is a candidate this pass: a fleet member older than `olderThanMs`. */
export interface ReapCandidate {
  serverId: string;
  name: string | undefined;
  status: string;
  taskState: string | null;
  /** Time since `created`, ms. */
  ageMs: number;
  /** When it was first seen as a candidate on consecutive passes (epoch ms). */
  firstSeenMs: number;
  /** True when it was a candidate on the previous pass too, unchanged: it may be deleted. */
  confirmed: boolean;
}

/** One candidate remembered between passes (plain JSON). */
export interface SeenCandidate {
  name: string | undefined;
  /** What the server looked like (see `fingerprintOf`). */
  fingerprint: string;
  /** First sighting in the current run of consecutive passes, epoch ms. */
  firstSeenMs: number;
  /** A delete was attempted: its own changes (task_state `deleting`) do not reset its count. */
  deleteAttempted: boolean;
}

/**
 * What a reaper remembers between passes: plain JSON, so a cron job can keep it in a file
 * (see `readReaperState` / `writeReaperState`).
 */
export interface ReaperState {
  version: 1;
  /** Passes run so far. */
  passes: number;
  /** When the last pass listed the servers (the reaper's clock), epoch ms; null before the first. */
  lastPassMs: number | null;
  /** The last pass's candidates by server id. */
  candidates: Record<string, SeenCandidate>;
}

/** A fresh {@link ReaperState}. */
export function emptyReaperState(): ReaperState {
  return { version: 1, passes: 0, lastPassMs: null, candidates: {} };
}

/** Throws {@link ValidationError} unless `selector` names a fleet. */
export function checkSelector(selector: FleetSelector): void {
  const { prefix, metadataKey, metadataValue } = selector;
  if (prefix !== undefined && (typeof prefix !== 'string' || prefix === '')) throw new ValidationError('prefix must be a non-empty string');
  if (metadataKey !== undefined && (typeof metadataKey !== 'string' || metadataKey === '')) throw new ValidationError('metadataKey must be a non-empty string');
  if (metadataValue !== undefined && metadataKey === undefined) throw new ValidationError('metadataValue needs metadataKey');
  if (metadataValue !== undefined && typeof metadataValue !== 'string') throw new ValidationError('metadataValue must be a string');
  if (prefix === undefined && metadataKey === undefined) {
    throw new ValidationError('the reaper needs a fleet: give a name prefix and/or a metadata key (it never reaps every server of a project)');
  }
}

/** True when `server` belongs to the fleet `selector` names. */
export function isFleetMember(server: Server, selector: FleetSelector): boolean {
  if (selector.prefix !== undefined && !(typeof server.name === 'string' && server.name.startsWith(selector.prefix))) return false;
  if (selector.metadataKey !== undefined) {
    const md = server.metadata;
    if (!md || typeof md !== 'object' || !Object.hasOwn(md, selector.metadataKey)) return false;
    if (selector.metadataValue !== undefined && md[selector.metadataKey] !== selector.metadataValue) return false;
  }
  return true;
}

/** What "unchanged between passes" compares: name, status, vm_state, task_state, `updated`, metadata. */
export function fingerprintOf(server: Server): string {
  const md = server.metadata && typeof server.metadata === 'object' ? server.metadata : {};
  return JSON.stringify([
    server.name ?? null,
    server.status ?? null,
    server['OS-EXT-STS:vm_state'] ?? null,
    server['OS-EXT-STS:task_state'] ?? null,
    server.updated ?? null,
    Object.keys(md)
      .sort()
      .map((k) => [k, md[k]]),
  ]);
}

/** Inputs of {@link planPass}. */
export interface PlanInput {
  servers: readonly Server[];
  previous: ReaperState;
  selector: FleetSelector;
  olderThanMs: number;
  dryRun: boolean;
  /** The pass's time, epoch ms. */
  nowMs: number;
  /** Marks of live claims, read after the listing (see {@link LiveMark}). Default none. */
  live?: readonly LiveMark[] | undefined;
}

/** What {@link planPass} decides. */
export interface PassPlan {
  candidates: ReapCandidate[];
  /** Confirmed candidates to delete now (empty in a dry run). */
  toDelete: Array<{ server: Server; candidate: ReapCandidate }>;
  skipped: ReapSkip[];
  /** Ids of listed servers with status UNKNOWN (a cell that does not answer), fleet or not: never reaped. */
  unreachable: string[];
  /** The state after this pass, before deletion results (deleted servers are dropped by the caller). */
  next: ReaperState;
}

/** Decide one pass. Pure: the same input gives the same plan. */
export function planPass(input: PlanInput): PassPlan {
  const { previous, selector, olderThanMs, dryRun, nowMs } = input;
  const candidates: ReapCandidate[] = [];
  const toDelete: PassPlan['toDelete'] = [];
  const skipped: ReapSkip[] = [];
  const unreachable: string[] = [];
  const seen: Record<string, SeenCandidate> = {};
  const listed = new Map<string, Server>();

  for (const server of input.servers) {
    listed.set(server.id, server);
    const status = statusOf(server);
    const created = typeof server.created === 'string' ? Date.parse(server.created) : Number.NaN;
    const ageMs = Number.isFinite(created) ? Math.max(0, nowMs - created) : undefined;
    const base = { serverId: server.id, name: server.name ?? previous.candidates[server.id]?.name, ageMs };
    if (status === 'UNKNOWN') {
      // A down cell's stub has no name or metadata: checked before fleet membership, which it cannot show.
      unreachable.push(server.id);
      if (isFleetMember(server, selector) || previous.candidates[server.id]) {
        skipped.push({ ...base, reason: 'status-unknown', detail: 'status UNKNOWN: its cell does not answer; never reaped' });
      }
      continue;
    }
    if (!isFleetMember(server, selector)) continue;
    if (status === 'SOFT_DELETED' || status === 'DELETED') {
      skipped.push({ ...base, reason: 'deleted-status', detail: `status ${status}: already deleted` });
      continue;
    }
    if (input.live && hasLiveMark(server, input.live)) {
      skipped.push({ ...base, reason: 'claim-live', detail: 'carries the mark of a live claim (a create in flight or a claim tag still watched): never reaped' });
      continue;
    }
    if (ageMs === undefined) {
      skipped.push({ ...base, reason: 'no-created-time', detail: `no valid created time (${JSON.stringify(server.created)})` });
      continue;
    }
    if (ageMs < olderThanMs) {
      skipped.push({ ...base, reason: 'too-young', detail: `age ${ageMs} ms < olderThanMs ${olderThanMs} ms` });
      continue;
    }
    const fingerprint = fingerprintOf(server);
    const prev = previous.candidates[server.id];
    const unchanged = prev !== undefined && (prev.fingerprint === fingerprint || prev.deleteAttempted);
    const record: SeenCandidate = unchanged
      ? { ...prev, name: server.name, fingerprint }
      : { name: server.name, fingerprint, firstSeenMs: nowMs, deleteAttempted: false };
    seen[server.id] = record;
    const taskState = server['OS-EXT-STS:task_state'];
    const candidate: ReapCandidate = {
      serverId: server.id,
      name: server.name,
      status: status || 'UNKNOWN',
      taskState: typeof taskState === 'string' ? taskState : null,
      ageMs,
      firstSeenMs: record.firstSeenMs,
      confirmed: unchanged,
    };
    candidates.push(candidate);
    if (!prev) {
      skipped.push({ ...base, reason: 'first-sighting', detail: 'first pass it is a candidate: deleted on the next pass if still one' });
    } else if (!unchanged) {
      skipped.push({ ...base, reason: 'changed', detail: 'changed since the previous pass (status, task_state, name, metadata or updated time)' });
    } else if (dryRun) {
      skipped.push({ ...base, reason: 'dry-run', detail: 'would be deleted (dry run)' });
    } else {
      toDelete.push({ server, candidate });
    }
  }

  for (const [id, prev] of Object.entries(previous.candidates)) {
    if (seen[id]) continue;
    const server = listed.get(id);
    if (server && statusOf(server) === 'UNKNOWN') continue;
    if (!server) {
      skipped.push({ serverId: id, name: prev.name, reason: 'vanished', detail: 'a candidate of the previous pass, no longer listed' });
    } else if (!isFleetMember(server, selector)) {
      skipped.push({ serverId: id, name: server.name, reason: 'left-fleet', detail: 'a candidate of the previous pass that no longer matches the fleet' });
    }
  }

  return {
    candidates,
    toDelete,
    skipped,
    unreachable,
    next: { version: 1, passes: previous.passes + 1, lastPassMs: nowMs, candidates: seen },
  };
}
