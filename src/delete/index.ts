/**
 * Deleting servers and waiting until Nova has deleted them: `deleteServer`, `deleteServers`,
 * `waitForDelete`, and the ledger of deletions not yet confirmed.
 *
 * @module
 */
export { waitForDelete } from './waitForDelete.js';
export type { WaitForDeleteOptions, WaitForDeleteResult, WaitOutcome, DeleteProgress } from './waitForDelete.js';
export { deleteServer, deleteServers } from './deleteServer.js';
export { onDeleteConfirmed } from './ledger.js';
export type { UnconfirmedDelete } from './ledger.js';
export type { DeleteServerOptions, DeleteServerResult, DeleteOutcome, DeleteServersOptions, DeleteServersResult, DeleteSettled } from './deleteServer.js';
