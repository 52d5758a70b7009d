/**
 * Wiring one {@link FakeNova}: the server table, quota book, compute side, timers, fault queue,
 * request log and the request pipeline both fronts share.
 *
 * @module
 */
import { Compute } from './compute.js';
import { FaultQueue } from './faults.js';
import { NovaFront } from './front.js';
import type { ResolvedOptions } from './options.js';
import { QuotaBook } from './quota.js';
import type { Engine } from './routes/context.js';
import { ServerStore } from './state.js';
import { TimerSet } from './timers.js';
import type { RecordedRequest } from './types.js';

/** The parts of one fake. `engine.baseUrl` is set once the socket listens. */
export interface FakeParts {
  store: ServerStore;
  quota: QuotaBook;
  compute: Compute;
  timers: TimerSet;
  faults: FaultQueue;
  requests: RecordedRequest[];
  engine: Engine;
  front: NovaFront;
}

/** Build the parts of a fake from its resolved options. */
export function assemble(o: ResolvedOptions): FakeParts {
  const timers = new TimerSet();
  const store = new ServerStore();
  const quota = new QuotaBook(o.quota, o.quotaLagMs);
  const compute = new Compute(store, quota, timers, o.timing, o.projectId);
  const engine: Engine = {
    store,
    compute,
    quota,
    flavors: o.flavors,
    projectId: o.projectId,
    pageSize: o.pageSize,
    baseUrl: '',
    countedUsage: () => quota.counted(store.usage()),
    reportedUsage: () => quota.reported(store.usage(), Date.now()),
  };
  const faults = new FaultQueue();
  const requests: RecordedRequest[] = [];
  const front = new NovaFront({
    engine,
    faults,
    timers,
    requests,
    minVersion: o.minVersion,
    maxVersion: o.maxVersion,
    validateToken: o.validateToken,
    keystoneUri: o.keystoneUri,
  });
  return { store, quota, compute, timers, faults, requests, engine, front };
}
