/**
 * The package's version, read once from its `package.json` (the one place it is written), for the
 * `User-Agent` of Nova and Keystone requests and `nova-guard --version`.
 *
 * @module
 */
import { createRequire } from 'node:module';

/** `version` of nova-guard's `package.json` (`src/core` and `dist/core` both sit two folders below it). */
export const VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
