/**
 * What a create needs, from its flavor (`GET /flavors/{id}`, Nova API reference, "Show Flavor
 * Details": `vcpus`, `ram` in MiB). A flavor whose `vcpus` or `ram` is missing or not a
 * non-negative number (some proxies and hand-made flavors) gives an unknown need: counted as 0, so
 * that resource never blocks and never turns the guard's totals into `NaN`; Nova's own check
 * decides (the POST, then the quota 403 path). The guard warns once per flavor and resource.
 *
 * @module
 */
import type { Flavor, ResourceAmounts } from '../core/types.js';
import { flavorNumber } from '../core/counting.js';
import { NotFoundError } from '../errors/index.js';
import { restated } from '../errors/api.js';
import { warnOnce, type GuardState } from './state.js';

/**
 * `GET /flavors/{id}` of a `flavorRef` (an id, or a URL ending in the id: `flavorId`). Nova's 404
 * (`itemNotFound`) is thrown as a {@link NotFoundError} whose message adds that `flavorRef` is a
 * flavor id, not a name (`'m1.small'` is the usual slip; the CLI's `--flavor` resolves names).
 * @throws {@link NotFoundError}; the client's other errors as they are.
 */
export async function readFlavor(g: Pick<GuardState, 'client'>, flavorRef: string, flavorId: string, signal: AbortSignal | undefined): Promise<Flavor> {
  try {
    return await g.client.getFlavor(flavorId, { signal });
  } catch (e) {
    if (!(e instanceof NotFoundError) || e.fault !== 'itemNotFound') throw e;
    throw restated(
      e,
      `${e.message} flavorRef is a flavor id (or a flavor URL), not a flavor name: ${JSON.stringify(flavorRef)} names no flavor id of this cloud. ` +
        'Find the id of a name in GET /flavors (`openstack flavor show NAME -f value -c id`; `nova-guard server create --flavor NAME` resolves names itself).',
    );
  }
}

/**
 * Needs of `count` servers of `flavor`; fields of `given` win. An unknown `vcpus` or `ram` is 0
 * (see the module description), with one warning per flavor and resource.
 */
export function needsFromFlavor(g: Pick<GuardState, 'log' | 'warned'>, flavorId: string, flavor: Flavor, count: number, given?: Partial<ResourceAmounts>): ResourceAmounts {
  const amount = (field: 'vcpus' | 'ram', resource: 'cores' | 'ram'): number => {
    const n = flavorNumber((flavor as unknown as Record<string, unknown>)[field]);
    if (n !== undefined) return n * count;
    warnOnce(
      g,
      `flavor-${resource}:${flavorId}`,
      { flavorId, [field]: (flavor as unknown as Record<string, unknown>)[field] ?? null },
      `flavor ${flavorId} has no usable ${field}: its ${resource} need is unknown, Nova decides`,
    );
    return 0;
  };
  return {
    cores: given?.cores ?? amount('vcpus', 'cores'),
    ramMiB: given?.ramMiB ?? amount('ram', 'ram'),
    instances: given?.instances ?? count,
  };
}
