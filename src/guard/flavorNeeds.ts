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
import { warnOnce, type GuardState } from './state.js';

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
