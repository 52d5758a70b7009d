/**
 * The fault of an ERROR server that the listing leaves out. Nova's detail listing
 * (`GET /servers/detail`, Nova API reference, "List Servers Detailed") reads the faults of the listed
 * servers from the API's own database (`InstanceList.fill_faults` in `nova/objects/instance.py`, not
 * targeted at a cell), so a server that lives in cell0 (never scheduled: "No valid host was found") is
 * listed in ERROR without its `fault`; its own `GET /servers/{id}` shows it. Seen on Nova 26.2.
 *
 * @module
 */
import pLimit from 'p-limit';
import type { NovaClient } from '../nova/client.js';
import { AuthError, isAbortError } from '../errors/index.js';
import { statusOf } from './count.js';
import type { Server } from '../core/types.js';

/**
 * Give each listed ERROR server without a `fault` the fault of its own GET: the one in `fetched` when
 * the ghost check ran (it GET every listed server; a ghost has none), else one `GET /servers/{id}`
 * each, at most `concurrency` at once. Replaces the entries of `servers` in place. A failed GET is
 * noted and leaves the server as listed; aborts and authentication failures are rethrown.
 */
export async function fillListedFaults(
  client: NovaClient,
  servers: Server[],
  fetched: ReadonlyMap<string, Server> | undefined,
  concurrency: number,
  notes: string[],
  signal: AbortSignal,
): Promise<void> {
  const limit = pLimit(concurrency);
  signal.addEventListener('abort', () => limit.clearQueue(), { once: true });
  await Promise.all(
    servers.map((s, i) =>
      statusOf(s) !== 'ERROR' || s.fault
        ? undefined
        : limit(async () => {
            let own = fetched?.get(s.id);
            if (!fetched) {
              try {
                own = await client.getServer(s.id, { signal });
              } catch (e) {
                if (isAbortError(e) || e instanceof AuthError) throw e;
                notes.push(`fault of ERROR server ${s.id} not read: ${(e as Error).message}`);
                return;
              }
            }
            if (own?.fault) servers[i] = { ...s, fault: own.fault };
          }),
    ),
  );
}
