/**
 * Knobs that make the causes a quota audit names, on a {@link FakeNova} (`nova.causes`): an instance
 * mapping that lost its cell, a delete that never finishes, a server never scheduled (cell0), a
 * shelved-offloaded server, a resize waiting for confirmation, a cell that does not answer, usage with
 * no server behind it, an allocation placement kept, and the counting model (legacy counting from the
 * cell databases, or `[quota] count_usage_from_placement`). See `docs/audit.md` for what each holds.
 *
 * @module
 */
import { ValidationError } from '../../errors/index.js';
import type { Compute } from './compute.js';
import type { QuotaBook } from './quota.js';
import type { ServerRecord, ServerStore } from './state.js';
import type { FakeFlavor, FakeServerInit, FakeUsage, UsageCounts } from './types.js';
import { checkOptions, type OptionsSpec } from '../../core/options.js';
import { FAKE_SERVER_INIT_SPEC, FAKE_USAGE_SPEC } from './options.js';
import { ramMiBOf } from './usage.js';

/** The fault message of a server the scheduler found no host for (Nova's NoValidHost). */
export const NO_VALID_HOST_MESSAGE = 'No valid host was found. There are not enough hosts available.';

/** What the knobs need from their fake. */
export interface CausesDeps {
  store: ServerStore;
  quota: QuotaBook;
  compute: Compute;
  flavors: Map<string, FakeFlavor>;
}

function usageOf(u: Partial<FakeUsage>, what: string, spec: OptionsSpec<Partial<FakeUsage>> = FAKE_USAGE_SPEC): UsageCounts {
  checkOptions(`FakeNova.causes.${what}`, u, spec);
  const out = { cores: u.cores ?? 0, instances: u.instances ?? 0, ram: ramMiBOf(`FakeNova.causes.${what}`, u) ?? 0 };
  for (const [k, v] of Object.entries(out)) {
    if (!Number.isInteger(v)) throw new ValidationError(`FakeNova.causes.${what}: ${k} must be an integer, got ${String(v)}`);
  }
  return out;
}

/** The causes of quota drift, made on demand. Every method throws {@link ValidationError} for an unknown server or flavor. */
export class FakeNovaCauses {
  /** @internal FakeNova makes it (`nova.causes`). */
  constructor(private readonly d: CausesDeps) {}

  private row(id: string, what: string): ServerRecord {
    const r = this.d.store.live(id);
    if (!r) throw new ValidationError(`FakeNova.causes.${what}: no server ${id}`);
    return r;
  }

  private flavor(id: string, what: string): FakeFlavor {
    const f = this.d.flavors.get(id);
    if (!f) throw new ValidationError(`FakeNova.causes.${what}: unknown flavor '${id}'`);
    return f;
  }

  /**
   * The server's instance mapping loses its cell: listings still show it and Nova still counts it,
   * but its own GET, DELETE and actions answer 404 (an orphaned mapping).
   */
  breakMapping(id: string): void {
    this.row(id, 'breakMapping').ghost = true;
  }

  /**
   * The server's deletion never completes: status `DELETED` (vm_state `deleted`), never destroyed, so
   * legacy counting keeps counting it (counting from placement drops its instance, keeps its cores and RAM).
   */
  stickDeleting(id: string): void {
    const r = this.row(id, 'stickDeleting');
    this.d.compute.setBehavior(r, 'never', undefined);
    this.d.store.update(r, { status: 'DELETED', vmState: 'deleted', taskState: null, powerState: 0, deletePhase: 'stuck' });
  }

  /**
   * Seed a server the scheduler never placed: ERROR with Nova's NoValidHost fault, in cell0. It holds an
   * instance under both models; cores and RAM only under legacy counting.
   */
  addNeverScheduled(init: Partial<FakeServerInit> = {}): string {
    checkOptions('FakeNova.causes.addNeverScheduled', init, FAKE_SERVER_INIT_SPEC);
    const r = this.d.compute.seed({ ...init, status: 'ERROR', vmState: 'error', faultMessage: init.faultMessage ?? NO_VALID_HOST_MESSAGE }, this.flavor(init.flavorId ?? [...this.d.flavors.keys()][0]!, 'addNeverScheduled'));
    this.d.store.update(r, { cell0: true });
    this.d.store.scan = true;
    return r.id;
  }

  /** The server is shelved and offloaded: SHELVED_OFFLOADED, no host, no allocation. */
  shelveOffload(id: string): void {
    this.d.store.update(this.row(id, 'shelveOffload'), { status: 'SHELVED_OFFLOADED', vmState: 'shelved_offloaded', taskState: null, powerState: 4 });
  }

  /**
   * The server was resized to `newFlavorId` and waits for confirmation (VERIFY_RESIZE, vm_state
   * `resized`): its flavor is the new one; placement holds the old one too.
   */
  resizePending(id: string, newFlavorId: string): void {
    const r = this.row(id, 'resizePending');
    const flavor = this.flavor(newFlavorId, 'resizePending');
    this.d.store.update(r, { oldFlavor: r.flavor, flavor, status: 'VERIFY_RESIZE', vmState: 'resized', taskState: null });
    this.d.store.scan = true;
  }

  /**
   * The server's cell stops answering: from microversion 2.69 listings show it as a stub (status
   * UNKNOWN, no name or flavor), below 2.69 they leave it out; its GET answers 500. Legacy counting
   * leaves it out of the usage; counting from placement keeps it.
   */
  downCell(id: string): void {
    this.d.store.update(this.row(id, 'downCell'), { downCell: true });
    this.d.store.scan = true;
  }

  /** Usage with no server behind it (added to what Nova counts and reports), e.g. rows of a lost cell. RAM as `ramMiB` (`ram` its old name). */
  staleUsage(u: Partial<FakeUsage>): void {
    const add = usageOf(u, 'staleUsage');
    const d = this.d.quota.drift;
    this.d.quota.drift = { cores: d.cores + add.cores, instances: d.instances + add.instances, ram: d.ram + add.ram };
  }

  /** Cores and RAM (`ramMiB`; `ram` its old name) placement keeps allocated for the project with no server behind them (counted only from placement). */
  leakAllocation(u: Partial<Pick<FakeUsage, 'cores' | 'ramMiB' | 'ram'>>): void {
    const add = usageOf(u, 'leakAllocation', { cores: null, ramMiB: null, ram: null } as OptionsSpec<Partial<FakeUsage>>);
    const l = this.d.store.leaked;
    this.d.store.leaked = { cores: l.cores + add.cores, instances: 0, ram: l.ram + add.ram };
  }

  /**
   * What placement's `GET /usages?project_id=` would answer: `VCPU` and `MEMORY_MB` of every
   * allocation (live servers not in cell0, not shelved-offloaded; both flavors of a VERIFY_RESIZE
   * server; deletes not finished) plus the leaked ones.
   */
  placementUsages(): { VCPU: number; MEMORY_MB: number } {
    const u = this.d.store.placementUsage();
    return { VCPU: u.cores, MEMORY_MB: u.ram };
  }

  /** Count usage from placement (`[quota] count_usage_from_placement = True`) or, `false`, from the cell databases (the default). */
  countUsageFromPlacement(on: boolean): void {
    this.d.store.model = on ? 'placement' : 'legacy';
  }
}
