/**
 * The reaper: finds leftover servers of a fleet and deletes them in two passes.
 *
 * @module
 */
export { Reaper, reapServers } from './reaper.js';
export type { ReaperOptions, ReaperRunOptions, ReapServersOptions, ReapResult, ReapEvent, ReaperState, FleetSelector } from './reaper.js';
export { readReaperState, writeReaperState } from './state.js';
