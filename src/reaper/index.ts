/**
 * The reaper: finds leftover servers of a fleet and deletes them in two passes.
 *
 * @module
 */
export { Reaper, reapServers } from './reaper.js';
export type { ReaperOptions, ReaperRunOptions, ReapServersOptions, ReapResult, ReapPassResult, ReapDeleted, ReapFailure, ReapEvent, ReapCandidate, ReapSkip, ReapSkipReason, ReaperState, SeenCandidate, FleetSelector, LiveMark } from './reaper.js';
export { readReaperState, writeReaperState } from './state.js';
