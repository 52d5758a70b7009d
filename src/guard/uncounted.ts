/**
 * The project's servers that Nova lists but does not count yet, for a ledger that must learn them
 * (`QuotaLedger.acquire`'s `uncounted`: a Redis ledger whose store may have been emptied lists once
 * before its first admission, `docs/fleet-ledger.md`).
 *
 * One `GET /servers/detail` at microversion 2.69 or later (flavors embedded from 2.47; Nova API
 * reference, "List Servers Detailed"), bounded by the client's request time limit. A server is
 * "not counted yet" when Nova's legacy counting counts it at all (`countsTowardUsage`) and it is
 * not surely past scheduling (`isPastScheduling`: BUILD with `task_state` `scheduling` or null and
 * no host is only a build request, which `nova/quota.py`'s legacy counting leaves out). Its needs
 * are its flavor's `vcpus` and `ram` (embedded, else `GET /flavors/{id}`, cached by the client) and
 * 1 instance; a flavor that cannot be read counts 0 cores and 0 MiB (as `needsFromFlavor` takes an
 * unknown need).
 *
 * @module
 */
import { countsTowardUsage, embeddedFlavor, flavorSize, type FlavorSize } from '../core/counting.js';
import type { Server } from '../core/types.js';
import { AuthError, isAbortError } from '../errors/index.js';
import { presenceMicroversion } from '../delete/index.js';
import type { NovaClient } from '../nova/index.js';
import type { UncountedServer } from '../ledger/index.js';
import { CLAIM_ID_KEY } from './ledgerUse.js';
import { isPastScheduling } from './waitForActive.js';

/** Most pages one listing reads (at Nova's usual 1000 servers a page). */
const MAX_PAGES = 100;

/** The size of `server`'s flavor: embedded, else read (client-cached); undefined when it cannot be read. */
async function sizeOf(client: NovaClient, server: Server, signal: AbortSignal | undefined): Promise<FlavorSize | undefined> {
  const embedded = embeddedFlavor(server);
  if (embedded) return embedded;
  const flavorId = server.flavor?.id;
  if (flavorId === undefined || String(flavorId) === '') return undefined;
  try {
    return flavorSize(await client.getFlavor(String(flavorId), { signal }));
  } catch (e) {
    if (isAbortError(e) || e instanceof AuthError) throw e;
    return undefined;
  }
}

/**
 * The servers of `servers` (a listing of the project) that Nova does not count yet, with what each
 * will hold (see the module description).
 * @throws {@link AbortError} when `signal` aborts; {@link AuthError} when a flavor read is refused for the token.
 */
export async function uncountedOf(client: NovaClient, servers: readonly Server[], signal?: AbortSignal): Promise<UncountedServer[]> {
  const building = servers.filter((s) => countsTowardUsage(s) && !isPastScheduling(s));
  return Promise.all(
    building.map(async (s) => {
      const size = await sizeOf(client, s, signal);
      const claimId = s.metadata?.[CLAIM_ID_KEY];
      return {
        serverId: String(s.id),
        claimId: typeof claimId === 'string' && claimId !== '' ? claimId : undefined,
        needs: { cores: size?.vcpus ?? 0, ramMiB: size?.ram ?? 0, instances: 1 },
      };
    }),
  );
}

/**
 * One listing of the project (`GET /servers/detail`) and {@link uncountedOf} it.
 * @throws the client's errors of the listing; {@link AbortError} when `signal` aborts.
 */
export async function listUncounted(client: NovaClient, signal: AbortSignal | undefined): Promise<UncountedServer[]> {
  const servers = await client.listServers({}, { microversion: presenceMicroversion(client.microversion), timeoutMs: client.requestTimeoutMs, maxPages: MAX_PAGES, signal });
  return uncountedOf(client, servers, signal);
}
