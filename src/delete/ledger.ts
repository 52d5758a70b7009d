/**
 * The ledger of deletions a client was asked for and has not seen confirmed, and the one "deletion
 * confirmed" event. A server enters when `deleteServer` is called for it and leaves only when Nova's
 * 404 confirms it (or it shows `SOFT_DELETED`). After a timeout, a failure or an abort it stays, with
 * the reason, so a worker can come back for it (`client.unconfirmedDeletes()`).
 *
 * @module
 */
import { callEach } from '../core/listeners.js';
import type { UnconfirmedDelete } from './types.js';

/** The unconfirmed deletions of one client. */
export class DeleteLedger {
  readonly #entries = new Map<string, UnconfirmedDelete>();
  readonly #listeners = new Set<(serverId: string) => void>();
  readonly #starts = new Set<(serverId: string, first: boolean) => void>();
  readonly #accepts = new Set<(serverId: string) => void>();
  readonly #wallNow: () => number;

  /** @param wallNow - Epoch ms (the client's clock). */
  constructor(wallNow: () => number) {
    this.#wallNow = wallNow;
  }

  /** Call `listener` whenever a deletion is confirmed. Returns the function that unsubscribes. */
  onConfirmed(listener: (serverId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Call `listener` whenever a `deleteServer` call starts, synchronously, before its DELETE is sent.
   * `first`: no deletion of the server was pending on this client (every DELETE of it this client
   * sends until Nova confirms the deletion goes after this call). Returns the function that unsubscribes.
   */
  onStart(listener: (serverId: string, first: boolean) => void): () => void {
    this.#starts.add(listener);
    return () => this.#starts.delete(listener);
  }

  /**
   * Call `listener` whenever Nova accepts a DELETE (or `forceDelete`) this client sent for a server
   * (its 204 / 202: the server still existed when Nova took it; a 404, or a DELETE whose answer was
   * lost, calls nothing). Returns the function that unsubscribes.
   */
  onAccepted(listener: (serverId: string) => void): () => void {
    this.#accepts.add(listener);
    return () => this.#accepts.delete(listener);
  }

  /** Nova accepted a DELETE of `serverId` sent by this client (see {@link onAccepted}). */
  accepted(serverId: string): void {
    // a listener must not break the deletion
    callEach(this.#accepts, serverId);
  }

  /** True while anyone listens for confirmed deletions (a `QuotaGuard` on the client). */
  get listened(): boolean {
    return this.#listeners.size > 0;
  }

  /** A `deleteServer` call for `serverId` starts (its DELETE is sent after this returns). */
  track(serverId: string): void {
    const first = !this.#entries.has(serverId);
    // a listener must not break the deletion
    callEach(this.#starts, serverId, first);
    const e = this.#entries.get(serverId);
    if (e) {
      e.calls++;
      e.state = 'in-progress';
    } else {
      this.#entries.set(serverId, { serverId, firstRequestedAtMs: this.#wallNow(), calls: 1, state: 'in-progress' });
    }
  }

  /**
   * Nova has confirmed the deletion of `serverId` (its 404, seen by any wait of the engine, or the
   * end of a `deleteServer` call): it leaves the ledger and the listeners are told, once. A server
   * not in the ledger (confirmed already, or never deleted through this client) tells no one.
   */
  confirm(serverId: string): void {
    if (!this.#entries.delete(serverId)) return;
    // a listener must not break the deletion
    callEach(this.#listeners, serverId);
  }

  /** The call ended: confirmed (removed, listeners told unless it was already), only requested, or failed with `error`. */
  settle(serverId: string, how: 'confirmed' | 'delete-requested' | { error: unknown }): void {
    if (how === 'confirmed') {
      this.confirm(serverId);
      return;
    }
    const e = this.#entries.get(serverId);
    if (!e) return;
    if (how === 'delete-requested') {
      e.state = 'delete-requested';
      delete e.lastError;
    } else {
      e.state = 'failed';
      const err = how.error as { name?: string; message?: string } | undefined;
      e.lastError = `${err?.name ?? 'Error'}: ${err?.message ?? String(how.error)}`;
    }
  }

  /** Snapshot, oldest first. */
  list(): UnconfirmedDelete[] {
    return [...this.#entries.values()].map((e) => ({ ...e })).sort((a, b) => a.firstRequestedAtMs - b.firstRequestedAtMs);
  }
}
