/**
 * The refusal of the keys Nova's `POST /servers` schema does not accept at a microversion (the table:
 * `src/core/createServerKeys.ts`)
 * (`additionalProperties: false` at both levels of the body). Source: `nova/api/openstack/compute/schemas/servers.py`
 * (`create`, `create_v219` ... `create_v294`) and the `@validation.schema` ranges on `ServersController.create`;
 * the message is jsonschema's (`Additional properties are not allowed ('x' was unexpected)`, the keys sorted).
 *
 * The legacy v2.0 API (`create_v20`) strips unknown keys instead of refusing them; the fake does the same
 * below 2.1.
 *
 * @module
 */
import { PERSONALITY_REMOVED_MINOR, SERVER_KEYS_2_1, SERVER_KEYS_ADDED, TOP_KEYS } from '../../core/createServerKeys.js';
import type { Microversion } from './microversion.js';
import { pyRepr } from './pyjson.js';
import { atLeast } from './views.js';

/** The keys `server` may have at `version`. */
export function serverKeysAt(version: Microversion): Set<string> {
  const keys = new Set(SERVER_KEYS_2_1);
  // `personality` (file injection) was removed at 2.57.
  if (!atLeast(version, PERSONALITY_REMOVED_MINOR)) keys.add('personality');
  for (const [key, minor] of SERVER_KEYS_ADDED) if (atLeast(version, minor)) keys.add(key);
  return keys;
}

function refusal(extras: string[]): string | undefined {
  if (extras.length === 0) return undefined;
  // jsonschema sorts the extras (by str) and quotes each with repr().
  const sorted = [...extras].sort();
  return `Additional properties are not allowed (${sorted.map((k) => pyRepr(k)).join(', ')} ${sorted.length === 1 ? 'was' : 'were'} unexpected)`;
}

/**
 * jsonschema's message for the keys of the `server` object the schema of `version` does not allow;
 * undefined when there are none (or below 2.1, where Nova strips them).
 */
export function unexpectedServerKeys(server: Record<string, unknown>, version: Microversion): string | undefined {
  if (!atLeast(version, 1)) return undefined;
  const allowed = serverKeysAt(version);
  return refusal(Object.keys(server).filter((k) => !allowed.has(k)));
}

/** The same for the top level of the body (`server` and the two scheduler-hint keys only). */
export function unexpectedTopKeys(body: Record<string, unknown>, version: Microversion): string | undefined {
  if (!atLeast(version, 1)) return undefined;
  return refusal(Object.keys(body).filter((k) => !TOP_KEYS.has(k)));
}
