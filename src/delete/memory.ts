/**
 * What a delete engine remembers of a server between its waits: the `Date` at which Nova accepted
 * its last DELETE (its `changes-since` anchor before any look), and its faults (to tell a failed
 * terminate from a server that was in ERROR before). Bounded: the oldest servers are forgotten first.
 *
 * @module
 */
import { classify, faultKey, type Observation } from './observe.js';
import type { WaitOutcome } from './types.js';

/** Servers remembered at most. */
const MAX_SERVERS = 10_000;

/** The engine's memory of servers it was asked to delete. */
export class ServerMemory {
  readonly #deleteDates = new Map<string, number>();
  /** Clock time (the engine's) each remembered DELETE was accepted. */
  readonly #acceptedAt = new Map<string, number>();
  readonly #faults = new Map<string, string>();
  readonly #faultsAtDelete = new Map<string, string | undefined>();

  /**
   * Nova accepted a DELETE of `serverId`; its answer's `Date` (epoch ms, Nova's clock), and the
   * engine's clock time then (`atMs`; the first accepted DELETE's is kept: `lookPlan.ts`).
   */
  deleteAccepted(serverId: string, serverDateMs: number, atMs?: number): void {
    this.#deleteDates.delete(serverId);
    this.#deleteDates.set(serverId, serverDateMs);
    if (atMs !== undefined && !this.#acceptedAt.has(serverId)) this.#acceptedAt.set(serverId, atMs);
    this.#faultsAtDelete.set(serverId, this.#faults.get(serverId));
    if (this.#deleteDates.size > MAX_SERVERS) this.forget(this.#deleteDates.keys().next().value!);
  }

  /** The `Date` of the last accepted DELETE, if remembered. */
  deleteDate(serverId: string): number | undefined {
    return this.#deleteDates.get(serverId);
  }

  /** The engine's clock time its first remembered DELETE was accepted, if known. */
  acceptedAt(serverId: string): number | undefined {
    return this.#acceptedAt.get(serverId);
  }

  /** The end `obs` means for a wait on `serverId` (see `classify`), remembering the fault it shows. */
  classify(serverId: string, obs: Observation): Exclude<WaitOutcome, 'timeout'> | undefined {
    const key = obs.gone ? undefined : faultKey(obs.server);
    if (key !== undefined) this.#faults.set(serverId, key);
    return classify(obs, this.#deleteDates.get(serverId), this.#faultsAtDelete.get(serverId));
  }

  /** The server is gone: nothing of it is kept. */
  forget(serverId: string): void {
    this.#deleteDates.delete(serverId);
    this.#acceptedAt.delete(serverId);
    this.#faults.delete(serverId);
    this.#faultsAtDelete.delete(serverId);
  }
}
