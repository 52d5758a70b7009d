/**
 * The ledger of deletions a client was asked for and has not seen confirmed. A server enters it when
 * `deleteServer` is called for it and leaves it only when its deletion is confirmed (404, status
 * DELETED or SOFT_DELETED). After a timeout, a failure or an abort it stays, with the reason, so a
 * worker can come back for it (`client.unconfirmedDeletes()`) instead of leaking its cores.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';

/** One deletion that is not confirmed yet. */
export interface UnconfirmedDelete {
  serverId: string;
  /** When `deleteServer` was first called for it (epoch ms). */
  firstRequestedAtMs: number;
  /** `deleteServer` calls made for it so far. */
  calls: number;
  /**
   * Where it stands: `'in-progress'` (a call is running), `'delete-requested'` (DELETE accepted, not
   * waited for), or `'failed'` (the last call threw: see `lastError`).
   */
  state: 'in-progress' | 'delete-requested' | 'failed';
  /** `name: message` of the error that ended the last call, if it threw. */
  lastError?: string;
}

const ledgers = new WeakMap<NovaClient, Map<string, UnconfirmedDelete>>();
const confirmedListeners = new WeakMap<NovaClient, Set<(serverId: string) => void>>();

/**
 * Call `listener` whenever this client confirms a deletion (Nova has freed the server's quota).
 * Used by QuotaGuard to wake its waiters at once. Returns the function that unsubscribes.
 */
export function onDeleteConfirmed(client: NovaClient, listener: (serverId: string) => void): () => void {
  let set = confirmedListeners.get(client);
  if (!set) {
    set = new Set();
    confirmedListeners.set(client, set);
  }
  set.add(listener);
  return () => set.delete(listener);
}

function ledgerOf(client: NovaClient): Map<string, UnconfirmedDelete> {
  let l = ledgers.get(client);
  if (!l) {
    l = new Map();
    ledgers.set(client, l);
  }
  return l;
}

/** A `deleteServer` call for `serverId` starts. */
export function trackDelete(client: NovaClient, serverId: string): void {
  const l = ledgerOf(client);
  const e = l.get(serverId);
  if (e) {
    e.calls++;
    e.state = 'in-progress';
  } else {
    l.set(serverId, { serverId, firstRequestedAtMs: Date.now(), calls: 1, state: 'in-progress' });
  }
}

/** The call ended: confirmed (removed), only requested, or failed with `error`. */
export function settleDelete(client: NovaClient, serverId: string, how: 'confirmed' | 'delete-requested' | { error: unknown }): void {
  const l = ledgerOf(client);
  if (how === 'confirmed') {
    l.delete(serverId);
    for (const listener of [...(confirmedListeners.get(client) ?? [])]) {
      try {
        listener(serverId);
      } catch {
        // a listener must not break the deletion
      }
    }
    return;
  }
  const e = l.get(serverId);
  if (!e) return;
  if (how === 'delete-requested') {
    e.state = 'delete-requested';
    delete e.lastError;
  } else {
    e.state = 'failed';
    const err = how.error as { name?: string; message?: string };
    e.lastError = `${err?.name ?? 'Error'}: ${err?.message ?? String(how.error)}`;
  }
}

/** Snapshot of the client's unconfirmed deletions, oldest first. */
export function unconfirmedDeletes(client: NovaClient): UnconfirmedDelete[] {
  return [...ledgerOf(client).values()].map((e) => ({ ...e })).sort((a, b) => a.firstRequestedAtMs - b.firstRequestedAtMs);
}
