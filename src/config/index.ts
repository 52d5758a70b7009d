/**
 * Configuration: clouds.yaml and secure.yaml, the `OS_*` variables, and client options built from them.
 *
 * @module
 */
export { loadCloudConfig, clientOptionsFromCloud, resolveClientOptions } from './load.js';
export type { CloudConfig, LoadCloudConfigOptions } from './load.js';
// `CloudClientOptions` (these extras plus every `NovaClientOptions` field) is `NovaClient`'s: see `src/nova/options.ts`.
