/**
 * Flavors and images by name or id, the way `openstack server create` finds them (osc-lib
 * `find_resource`): an exact id first, else an exact name; none is `No Flavor found for x` /
 * `No Image found for x`, several `More than one Flavor exists with the name 'x'.` (failures, exit 1).
 *
 * - Flavors: `GET /flavors/detail` (Nova API reference, "List Flavors With Details": ids, names,
 *   vcpus and RAM), through the client, which keeps each flavor: the guard's needs of the flavor
 *   found then cost no `GET /flavors/{id}` (one flavor request a create, not two). It asks
 *   `is_public=None` (an admin's private flavors too, as openstacksdk asks) and follows its
 *   `flavors_links` next pages; a given id the listing does not show is read with `GET /flavors/{id}`,
 *   as openstack gets an id first.
 * - Images: a UUID is taken as an image id without a request (the POST tells when it is not one);
 *   a name is looked up in Nova's image proxy, `GET /images` at microversion 2.1 (Nova API reference,
 *   "Images (DEPRECATED)": removed at 2.36, so the call pins 2.1), which lists Glance's images.
 *
 * @module
 */
import type { NovaClient } from '../nova/client.js';
import { isServerId } from '../core/validate.js';
import { NotFoundError, ValidationError } from '../errors/index.js';

/** A flavor or image that cannot be found (or not uniquely): exit 1, as openstack's `CommandError`. */
export class LookupError extends Error {}

/** An id and name pair of Nova's lists. */
export interface Named {
  id: string;
  name: string;
}

/** Nova's lists as `{ id, name }` pairs (items without a string id are skipped). */
function named(items: unknown): Named[] {
  if (!Array.isArray(items)) return [];
  return items
    .filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && typeof (x as Record<string, unknown>)['id'] === 'string')
    .map((x) => ({ id: x['id'] as string, name: typeof x['name'] === 'string' ? x['name'] : '' }));
}

/** `GET /flavors/detail`: every flavor's id and name (the client keeps the flavors: {@link NovaClient.listFlavors}). */
export async function listFlavors(client: NovaClient): Promise<Named[]> {
  return named(await client.listFlavors());
}

/** `GET /images` at microversion 2.1 (Nova's image proxy): every image's id and name. */
export async function listImages(client: NovaClient): Promise<Named[]> {
  const res = await client.request<{ images?: unknown }>({ method: 'GET', path: '/images', microversion: '2.1' });
  return named(res.data?.images);
}

/** Pick the one item whose id, else whose name, is `given`. @throws {@link LookupError}. */
export function pick(items: readonly Named[], given: string, kind: 'Flavor' | 'Image'): Named {
  const byId = items.find((x) => x.id === given);
  if (byId) return byId;
  const byName = items.filter((x) => x.name === given);
  if (byName.length > 1) throw new LookupError(`More than one ${kind} exists with the name '${given}'.`);
  if (byName.length === 0) throw new LookupError(`No ${kind} found for ${given}`);
  return byName[0]!;
}

/**
 * The flavor `given` (id or name): in the listing, else, when the listing has none of that id or name,
 * `GET /flavors/{given}` (a flavor the listing leaves out is found by its id, as openstack's
 * `find_resource` gets an id first). @throws {@link LookupError}; API errors as they are.
 */
export async function findFlavor(client: NovaClient, given: string): Promise<Named> {
  try {
    return pick(await listFlavors(client), given, 'Flavor');
  } catch (e) {
    if (!(e instanceof LookupError) || !e.message.startsWith('No Flavor found')) throw e;
    const flavor = await client.getFlavor(given).catch((error: unknown) => {
      if (error instanceof NotFoundError || error instanceof ValidationError) return undefined;
      throw error;
    });
    if (flavor === undefined || flavor.id !== given) throw e;
    return { id: flavor.id, name: typeof flavor.name === 'string' ? flavor.name : '' };
  }
}

/**
 * The image `given` (id or name): a UUID without a request (its name looked up when the list can be
 * read, else left empty). @throws {@link LookupError}; API errors as they are.
 */
export async function findImage(client: NovaClient, given: string): Promise<Named> {
  if (isServerId(given)) return { id: given, name: '' };
  return pick(await listImages(client), given, 'Image');
}
