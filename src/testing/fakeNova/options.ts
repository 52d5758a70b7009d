/**
 * Checking and resolving {@link FakeNovaOptions}: every default in one place.
 *
 * @module
 */
import { ValidationError } from '../../errors/index.js';
import { MAX_TIMER_MS, is } from '../../core/validate.js';
import { checkOptions, type OptionsSpec } from '../../core/options.js';
import type { ComputeTiming } from './compute.js';
import { realNovaDeletedWindowMs, windowFunction } from './deleteLoad.js';
import { compareMicroversion, parseMicroversion, type Microversion } from './microversion.js';
import type { FakeDeleteBehavior, FakeFlavor, FakeNovaOptions, FakeServerInit, FakeUsage, UsageCounts } from './types.js';

/** The default flavors: `'1'` m1.tiny, `'2'` m1.small, `'3'` m1.medium (as the real-Nova test stack). */
export const DEFAULT_FLAVORS: readonly FakeFlavor[] = Object.freeze([
  { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
  { id: '2', name: 'm1.small', vcpus: 2, ram: 2048, disk: 20 },
  { id: '3', name: 'm1.medium', vcpus: 4, ram: 4096, disk: 40 },
]);

/** Every {@link FakeDeleteBehavior}. */
export const BEHAVIORS: readonly FakeDeleteBehavior[] = ['normal', 'error', 'never', 'ignore'];

/** {@link FakeNovaOptions} checked, with every default filled in. */
export interface ResolvedOptions {
  projectId: string;
  port: number;
  pageSize: number;
  minVersion: Microversion;
  maxVersion: Microversion;
  flavors: Map<string, FakeFlavor>;
  quota: UsageCounts;
  quotaLagMs: number;
  timing: ComputeTiming;
  validateToken: ((token: string) => boolean) | undefined;
  keystoneUri: string;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_TIMER_MS) {
    throw new ValidationError(`FakeNova option ${name} must be a finite number from 0 to ${MAX_TIMER_MS} (got ${String(value)})`);
  }
  return value;
}

/** A quota value: an integer >= -1 (-1 = unlimited). */
export function quotaValue(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < -1) {
    throw new ValidationError(`FakeNova ${name} must be an integer >= -1 (-1 = unlimited), got ${String(value)}`);
  }
  return value;
}

function version(name: string, text: string | undefined, fallback: string): Microversion {
  const v = parseMicroversion(text ?? fallback);
  if (!v) throw new ValidationError(`FakeNova option ${name} must look like '2.37' (got ${String(text)})`);
  return v;
}

function deletedWindow(options: FakeNovaOptions): ComputeTiming['deletedWindowMs'] {
  const w = options.deletedWindowMs;
  if (typeof w === 'function') return windowFunction(w);
  if (w === undefined) return windowFunction(realNovaDeletedWindowMs);
  return windowFunction(nonNegative('deletedWindowMs', w, 0));
}

function terminateErrorTaskState(value: FakeNovaOptions['terminateErrorTaskState']): 'deleting' | null {
  if (value === undefined || value === null) return null;
  if (value !== 'deleting') throw new ValidationError(`FakeNova option terminateErrorTaskState must be 'deleting' or null (got ${String(value)})`);
  return value;
}

/** What a {@link FakeFlavor} holds (each of `FakeNovaOptions.flavors`). */
const FLAVOR_SPEC: OptionsSpec<FakeFlavor> = {
  id: is.string({ nonEmpty: true }),
  name: is.string(),
  vcpus: null,
  ram: null,
  disk: is.integer(),
  isPublic: is.boolean,
};

/**
 * What `FakeNova.start` takes (see {@link FakeNovaOptions}): names and types; the ranges of
 * durations, quotas, microversions and flavors are {@link resolveOptions}'s.
 */
export const FAKE_NOVA_SPEC: OptionsSpec<FakeNovaOptions> = {
  port: null,
  projectId: is.string(),
  maxTotalCores: null,
  maxTotalInstances: null,
  maxTotalRAMSize: null,
  flavors: is.arrayOf(is.options(FLAVOR_SPEC)),
  buildDelayMs: null,
  schedulingDelayMs: null,
  deleteDelayMs: null,
  deletedWindowMs: null,
  terminateErrorTaskState: null,
  softDelete: is.boolean,
  reclaimIntervalMs: null,
  quotaLagMs: null,
  validateToken: is.functionOf('(token: string) => boolean', "returning true for a token Nova accepts (with FakeKeystone: (token) => keystone.isValid(token))"),
  keystoneUri: is.string({ nonEmpty: true }),
  pageSize: null,
  minMicroversion: is.string(),
  maxMicroversion: is.string(),
};

/** What `FakeNova.addServer` takes (see {@link FakeServerInit}). */
export const FAKE_SERVER_INIT_SPEC: OptionsSpec<FakeServerInit> = {
  id: null,
  name: is.string(),
  flavorId: is.string({ nonEmpty: true }),
  status: is.string({ nonEmpty: true }),
  vmState: is.string(),
  taskState: null,
  metadata: is.object,
  createdMs: is.number(),
  faultMessage: is.string(),
};

/** The resources of `FakeNova.setQuota` and `FakeNova.setUsageDrift` (see `FakeUsage`; `ram` the old name of `ramMiB`); values are checked there. */
export const FAKE_USAGE_SPEC: OptionsSpec<FakeUsage> = { cores: null, instances: null, ramMiB: null, ram: null };

/** What `FakeNova.setServerBehavior` takes. */
export const SERVER_BEHAVIOR_SPEC: OptionsSpec<{ onDelete?: FakeDeleteBehavior; faultMessage?: string }> = {
  onDelete: is.oneOf(BEHAVIORS),
  faultMessage: is.string(),
};

/**
 * @throws `ValidationError` (nova-guard) for an unknown option name, a negative duration, a quota below -1, a malformed
 *   microversion, duplicate or invalid flavors, a non-positive page size, or a
 *   `terminateErrorTaskState` other than `'deleting'` or null.
 */
export function resolveOptions(options: FakeNovaOptions): ResolvedOptions {
  checkOptions('FakeNova options', options, FAKE_NOVA_SPEC);
  const projectId = options.projectId ?? 'demo';
  if (!projectId || /[/?#\s]/.test(projectId)) throw new ValidationError(`FakeNova projectId is invalid: ${projectId}`);
  const port = nonNegative('port', options.port, 0);
  if (!Number.isInteger(port) || port > 65535) throw new ValidationError(`FakeNova option port must be an integer from 0 to 65535 (got ${String(port)})`);
  const pageSize = options.pageSize ?? 1000;
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new ValidationError(`FakeNova option pageSize must be an integer >= 1 (got ${String(pageSize)})`);
  }
  const minVersion = version('minMicroversion', options.minMicroversion, '2.1');
  const maxVersion = version('maxMicroversion', options.maxMicroversion, '2.93');
  if (compareMicroversion(minVersion, maxVersion) > 0) {
    throw new ValidationError('FakeNova minMicroversion must not be above maxMicroversion');
  }
  const flavors = new Map<string, FakeFlavor>();
  for (const f of options.flavors ?? DEFAULT_FLAVORS) {
    if (!f.id || flavors.has(f.id)) throw new ValidationError(`FakeNova flavor id missing or duplicated: '${f.id}'`);
    if (!Number.isInteger(f.vcpus) || f.vcpus < 0 || !Number.isInteger(f.ram) || f.ram < 0) {
      throw new ValidationError(`FakeNova flavor ${f.id}: vcpus and ram must be integers >= 0`);
    }
    flavors.set(f.id, { ...f });
  }
  return {
    projectId,
    port,
    pageSize,
    minVersion,
    maxVersion,
    flavors,
    quota: {
      cores: quotaValue('maxTotalCores', options.maxTotalCores, 20),
      instances: quotaValue('maxTotalInstances', options.maxTotalInstances, 10),
      ram: quotaValue('maxTotalRAMSize', options.maxTotalRAMSize, 51200),
    },
    quotaLagMs: nonNegative('quotaLagMs', options.quotaLagMs, 0),
    timing: {
      buildDelayMs: nonNegative('buildDelayMs', options.buildDelayMs, 0),
      schedulingDelayMs: nonNegative('schedulingDelayMs', options.schedulingDelayMs, 0),
      deleteDelayMs: nonNegative('deleteDelayMs', options.deleteDelayMs, 0),
      deletedWindowMs: deletedWindow(options),
      softDelete: options.softDelete ?? false,
      terminateErrorTaskState: terminateErrorTaskState(options.terminateErrorTaskState),
      reclaimIntervalMs: nonNegative('reclaimIntervalMs', options.reclaimIntervalMs, 0),
    },
    validateToken: options.validateToken,
    keystoneUri: options.keystoneUri ?? 'http://127.0.0.1:5000/',
  };
}
