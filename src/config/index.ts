/**
 * Configuration: clouds.yaml and secure.yaml, the `OS_*` variables, and client options built from them.
 *
 * @module
 */
export { loadCloudConfig, clientOptionsFromCloud, resolveClientOptions } from './load.js';
export type { CloudConfig, CloudAuth, CloudAuthType, LoadCloudConfigOptions, CloudClientOptions } from './load.js';
