/**
 * Deleting servers and waiting until Nova has deleted them: `deleteServer`, `deleteServers`,
 * `waitForDelete`, the per-client delete engine under them, and the ledger of deletions not yet
 * confirmed.
 *
 * @module
 */
export { waitForDelete } from './waitForDelete.js';
export type { DeleteCapable } from './waitForDelete.js';
export { deleteServer, deleteServers } from './deleteServer.js';
export { DeleteEngine } from './engine.js';
export { confirmNotFound } from './requestDelete.js';
export { checkDeleteOptions } from './options.js';
export { presenceMicroversion } from './observe.js';
export type {
  WaitForDeleteOptions,
  WaitForDeleteResult,
  WaitOutcome,
  DeleteProgress,
  DeleteFailureNotice,
  DeleteServerOptions,
  DeleteServerResult,
  DeleteOutcome,
  DeleteServersOptions,
  DeleteServersResult,
  DeleteSettled,
  UnconfirmedDelete,
  WatchEnd,
} from './types.js';
export type { FleetLink, FleetInterest, FleetPublication, FleetStats, Published } from './fleet.js';
export { newFleetStats } from './fleet.js';
export { FleetConsumer } from './fleetConsumer.js';
export { FleetWatcher } from './fleetWatcher.js';
export { MemoryFleetStore } from './memoryFleetStore.js';
export type { FleetStore, FleetLease, FleetInterestEntry, FleetInterestRead, KeptProof, PublicationDraft } from './fleetStore.js';
export { InProcessFleet } from './inProcessFleet.js';
import type { DeleteCapable } from './waitForDelete.js';

/**
 * Call `listener` whenever `client` confirms a deletion (Nova's 404: the server's quota is free).
 * Returns the function that unsubscribes. The quota guard wakes its waiters with it. While anyone
 * listens, a `deleteServer` without `wait` leaves its accepted deletion to the client's watcher,
 * which looks until Nova's 404 (`follow.ts`); the last unsubscribe stops those looks.
 */
export function onDeleteConfirmed(client: DeleteCapable, listener: (serverId: string) => void): () => void {
  return client.deleteEngine.follows.listen(listener);
}

/**
 * Call `listener` whenever a `deleteServer` call for a server starts on `client`: synchronously,
 * before its DELETE is sent; `first` when no deletion of that server was pending on the client (every
 * DELETE of it the client sends until Nova's 404 goes after). Returns the function that unsubscribes.
 * The quota guard notes there which kept `/limits` reading was stored before the DELETE
 * (`src/guard/freedCredits.ts`).
 */
export function onDeleteStarted(client: DeleteCapable, listener: (serverId: string, first: boolean) => void): () => void {
  return client.deleteEngine.ledger.onStart(listener);
}

/**
 * Call `listener` whenever Nova accepts a DELETE (or `forceDelete`) `client` sent (its 204 / 202:
 * the server still existed when Nova took it; not on Nova's 404). Returns the function that
 * unsubscribes. The quota guard credits a confirmed deletion only after such an answer
 * (`src/guard/freedCredits.ts`).
 */
export function onDeleteAccepted(client: DeleteCapable, listener: (serverId: string) => void): () => void {
  return client.deleteEngine.ledger.onAccepted(listener);
}

/**
 * Ask `client`'s watcher for short looks at the servers it sees deleted: at most `intervalMs` apart
 * (still widened by the poll pace, bounded by the rate limit; see `shortLooks.ts`) until the
 * function returned is called (idempotent). The quota guard asks while a create waits for headroom.
 */
export function askShortLooks(client: DeleteCapable, intervalMs: number): () => void {
  return client.deleteEngine.shortLooks.begin(intervalMs);
}
