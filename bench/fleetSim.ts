/**
 * Fleet simulation in virtual time (issue 20 item 5): H hosts x W workers run a working day of jobs
 * against one project's core quota on a FakeNova, with the REAL nova-guard code (each host its own
 * `NovaClient` and `QuotaGuard`, creates through `guard.createServer`, deletes through
 * `client.deleteServer(id, { wait: true })`) and one ledger shared by every host, all on one
 * virtual clock ({@link VirtualTime}): nothing sleeps on the wall clock.
 *
 * The shared ledger is nova-guard's `InProcessQuotaLedger`, one instance for all hosts (see
 * {@link HostLedger}): the Redis ledger reads Redis's own clock and cannot run in virtual time. What
 * that leaves unproved (Redis's network latency, its restarts and outages, the hosts' shared
 * `/limits` readings) is said in the output and in `docs/fleet-simulation.md`.
 *
 * Each job: a guarded create (-> ACTIVE), a test of a drawn duration, a delete awaited until Nova's
 * 404. The baseline runs the autopkgtest-style worker (`bench/churn.ts`) on the same day: up to 3
 * create attempts with a fixed 300 s sleep, `nova boot --poll` (5 s) until ACTIVE, a delete that
 * does not wait.
 *
 * Run alone: `npm run build && npm run build:examples && node build/bench/fleetSimMain.js [jobs] [hosts] [workersPerHost] [policy]`,
 * or as the `sim` section of `npm run bench` (`--only sim`, `--sim-jobs N`).
 *
 * @module
 */
import { NovaClient, QuotaGuard, InProcessFleet, InProcessQuotaLedger, waitForActive } from 'nova-guard';
import { FakeNova } from 'nova-guard/testing';
import { inOrderBoundMs, pullOrderBoundMs } from './sim/inOrderBound.js';
import { HostLedger, SharedReadings } from './sim/hostLedger.js';
import { NovaApiFront, REAL_NOVA_MODEL, fakeNovaOptions, type FrontRecord, type NovaModel } from './sim/novaModel.js';
import { VirtualTime } from './sim/virtualTime.js';
import { MICROVERSION, logNormal, mean, round, seededRandom } from './stats.js';

/** A flavor of the day's mix. */
export interface SimFlavor {
  /** FakeNova flavor id ('2': 2 cores, '3': 4 cores, as the default flavors). */
  ref: string;
  cores: number;
  /** Share of the jobs (the shares are normalised). */
  share: number;
}

/** Settings of one simulated day. */
export interface FleetSimConfig {
  policy: 'nova-guard' | 'autopkgtest';
  hosts: number;
  workersPerHost: number;
  quotaCores: number;
  jobs: number;
  flavors: readonly SimFlavor[];
  /** Test duration on the server: log-normal median and sigma, capped (ms). */
  testMedianMs: number;
  testSigma: number;
  testMaxMs: number;
  model: NovaModel;
  seed: number;
  /** autopkgtest's sleep between create attempts (ms). @default 300000 */
  autopkgtestSleepMs?: number;
  /** `nova boot --poll` interval of the autopkgtest-style worker (ms). @default 5000 */
  autopkgtestPollMs?: number;
  /**
   * QuotaGuard's `explainShortfall`. @default false: with it on, every waiting call lists the whole
   * project (`GET /servers/detail`, about 1.5 KB per server) every 5th wait; in a fleet whose quota
   * binds all day that is most of the bytes Nova sends (see docs/fleet-simulation.md).
   */
  explainShortfall?: boolean;
  /**
   * One ledger for every host. @default true. `false` gives each host's guard its own in-process
   * ledger (the hosts do not see each other's claims): a run that shows what the shared ledger prevents.
   */
  sharedLedger?: boolean;
  /**
   * The hosts' clients join one `InProcessFleet` (nova-guard policy only): the first host watches
   * for the fleet, the others' delete waits and ACTIVE waits take its publications and send no looks
   * of their own (the same logic as the Redis fleet watcher, without Redis). @default false
   */
  fleetWatcher?: boolean;
}

/** Where the makespan goes: per job (mean, s) and as makespan (s) = sum of cores x time / quota. */
export interface LagShare {
  meanS: number;
  makespanS: number;
}

/** One simulated day. */
export interface FleetSimRow {
  policy: FleetSimConfig['policy'];
  /** The hosts shared one fleet watcher (`FleetSimConfig.fleetWatcher`). */
  fleetWatcher: boolean;
  hosts: number;
  workers: number;
  quotaCores: number;
  jobs: number;
  jobsDone: number;
  failedJobs: number;
  quota403s: number;
  recheckErrors: number;
  serversLeft: number;
  peakCores: number;
  makespanS: number;
  wholeJobBoundS: number;
  fluidBoundS: number;
  makespanOverBound: number;
  /**
   * The pull-order bound (`sim/inOrderBound.ts` `pullOrderBoundMs`): no scheduler whose workers take
   * the jobs from the queue in order ends before it (the end-of-day tail every such scheduler pays).
   */
  pullOrderBoundS: number;
  /** The sound bound the makespan target is judged on: max(whole-job bound, pull-order bound). */
  boundS: number;
  /** Makespan over {@link FleetSimRow.boundS}. */
  makespanOverSoundBound: number;
  /**
   * The in-order schedule (`sim/inOrderBound.ts` `inOrderBoundMs`): an ideal scheduler that STARTS the
   * same jobs in queue order, with no lag between them. Not a bound for a scheduler that lets a later
   * small job pass a waiting large one; what the lags cost on the same timeline.
   */
  inOrderBoundS: number;
  /** Makespan over the in-order schedule: what the lags cost, the end-of-day tail left out. */
  makespanOverInOrderBound: number;
  /** Calls on the shared ledger per job (`SharedReadings.ledgerCalls`: each one or more Redis commands in the Redis ledger). */
  ledgerCallsPerJob: number;
  /** The same by method (acquire, bind, release, peek, leave, renew, claimAnyway, publishFreed, probe), per job. */
  ledgerCallsByMethod: Record<string, number>;
  /** From the last job's POST (the day's queue empty) to the end: the end-of-day tail. */
  tailS: number;
  requestsPerJob: number;
  /** Requests per job without `GET /limits`. */
  requestsPerJobWithoutLimits: number;
  /** Requests per job by kind: POST (create), DELETE, `GET /limits`, `GET /servers/{id}`, listings, the rest. */
  perJob: { post: number; delete: number; limits: number; get: number; listing: number; other: number };
  /** The fleet watcher's counters summed over the hosts (with `fleetWatcher`). */
  fleet?: { published: number; consumed: number; proofs: number; fallbacks: number; gaps: number; watcherEngine: Record<string, number> };
  /** `/limits` readings the hosts shared (admissions decided without a request to Nova). */
  sharedReadings: number;
  /** Confirmed deletions credited to the kept reading (it stayed fresh) instead of making it stale. */
  credits: number;
  /** Admissions per job: the guard's admission attempts (shared readings and own `/limits` reads) over the jobs. */
  admissionsPerJob: number;
  requests: FrontRecord['byKind'];
  responseBytes: FrontRecord['bytes'];
  looksPerSecond: number;
  lags: { detection404: LagShare; wakeUp: LagShare; countedTwice: LagShare; freshLimits: LagShare };
  wallS: number;
  /** CPU time (user + system) of the run, s. */
  cpuS: number;
  virtualSteps: number;
  errors: string[];
}

interface Job {
  index: number;
  flavor: SimFlavor;
  testMs: number;
}

interface ServerTrack {
  job: Job;
  postAtMs: number;
  destroyedAtMs?: number;
  deleteReturnedAtMs?: number;
  countedAtMs?: number;
}

/** The day's jobs, drawn from `seed` (the same day for every policy and fleet size). */
export function drawJobs(cfg: FleetSimConfig): Job[] {
  const random = seededRandom(cfg.seed);
  const total = cfg.flavors.reduce((a, f) => a + f.share, 0);
  return Array.from({ length: cfg.jobs }, (_, index) => {
    let x = random() * total;
    const flavor = cfg.flavors.find((f) => (x -= f.share) < 0) ?? cfg.flavors[cfg.flavors.length - 1]!;
    const testMs = Math.min(cfg.testMaxMs, logNormal(random, cfg.testMedianMs, cfg.testSigma));
    return { index, flavor, testMs };
  });
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Run one simulated day; the globals are virtual only while it runs. */
export async function runFleetSim(cfg: FleetSimConfig): Promise<FleetSimRow> {
  const jobs = drawJobs(cfg);
  const random = seededRandom(cfg.seed ^ 0x5eed);
  const fake = await FakeNova.start(fakeNovaOptions(cfg.model, cfg.quotaCores, random));
  const vt = new VirtualTime();
  const servers = new Map<string, ServerTrack>();
  const jobByName = new Map<string, Job>();
  const deleting = new Set<string>();
  const postTimes: number[] = [];
  const confirmTimes: Array<{ atMs: number; waiting: boolean }> = [];
  let waitingCreates = 0;
  const posted = new Set<number>();
  const errors: string[] = [];
  let failed = 0;
  let done = 0;
  vt.install();
  try {
    const front = new NovaApiFront(fake.adapter, cfg.model, vt.clock, random, (name, id, atMs) => {
      const job = jobByName.get(name);
      if (!job) return;
      servers.set(id, { job, postAtMs: atMs });
      postTimes.push(atMs);
      if (!posted.has(job.index)) {
        posted.add(job.index);
        if (cfg.policy === 'nova-guard') waitingCreates--;
      }
    });
    const deleteAdapter = front.adapter;
    // Deletes are tracked at the front: a DELETE accepted puts the server on the watch list for its destroy.
    const adapter: typeof deleteAdapter = async (config) => {
      const res = await deleteAdapter(config);
      if ((config.method ?? '').toUpperCase() === 'DELETE') {
        const id = /\/servers\/([^/?]+)$/.exec(new URL(config.url ?? '', config.baseURL ?? 'http://x').pathname)?.[1];
        if (id && servers.has(id)) deleting.add(id);
      }
      return res;
    };
    const shared = new InProcessQuotaLedger({ clock: vt.clock, endpoint: fake.endpoint, projectId: fake.projectId });
    const readings = new SharedReadings(shared, vt.clock);
    const clients: NovaClient[] = [];
    const guards: QuotaGuard[] = [];
    const fleet = cfg.fleetWatcher === true && cfg.policy === 'nova-guard' ? new InProcessFleet() : undefined;
    const members = [];
    for (let h = 0; h < cfg.hosts; h++) {
      const client = new NovaClient({ endpoint: fake.endpoint, token: `admin:${fake.projectId}`, microversion: MICROVERSION, adapter, clock: vt.clock });
      clients.push(client);
      if (fleet) members.push(await fleet.join(client));
      if (cfg.policy === 'nova-guard') {
        const ledger = new HostLedger(shared, `host-${h}`, () => vt.now, (id, atMs) => {
          const s = servers.get(id);
          if (s && s.countedAtMs === undefined) s.countedAtMs = atMs;
        }, readings, vt.clock);
        const own = cfg.sharedLedger === false ? {} : { ledger };
        guards.push(new QuotaGuard(client, { ...own, explainShortfall: cfg.explainShortfall ?? false }));
      }
    }
    const sleep = (ms: number): Promise<void> => new Promise((resolve) => vt.clock.setTimeout(resolve, ms));
    const body = (job: Job): { name: string; flavorRef: string; imageRef: string; networks: 'none' } => ({
      name: `job-${job.index}`,
      flavorRef: job.flavor.ref,
      imageRef: 'img',
      networks: 'none',
    });
    const returned = (id: string): void => {
      const s = servers.get(id);
      if (s) s.deleteReturnedAtMs = vt.now;
      confirmTimes.push({ atMs: vt.now, waiting: waitingCreates > 0 });
    };

    const guarded = async (h: number, job: Job): Promise<boolean> => {
      const client = clients[h]!;
      waitingCreates++;
      let server;
      try {
        server = await guards[h]!.createServer(body(job));
      } finally {
        if (!posted.has(job.index)) {
          posted.add(job.index);
          waitingCreates--;
        }
      }
      await sleep(job.testMs);
      await client.deleteServer(server.id, { wait: true });
      returned(server.id);
      return true;
    };

    const autopkgtest = async (h: number, job: Job): Promise<boolean> => {
      const client = clients[h]!;
      let id: string | undefined;
      for (let attempt = 1; attempt <= 3 && id === undefined; attempt++) {
        let created: string | undefined;
        try {
          created = (await client.createServer(body(job))).id;
          const r = await waitForActive(client, created, { intervalMs: cfg.autopkgtestPollMs ?? 5000, timeoutMs: 600000 });
          if (r.outcome === 'active') id = created;
          else throw new Error(`server ${r.outcome}`);
        } catch {
          if (created) await client.deleteServer(created).catch(() => undefined); // nova delete "$uuid" || true
          if (attempt < 3) await sleep(cfg.autopkgtestSleepMs ?? 300000);
        }
      }
      if (id === undefined) return false;
      await sleep(job.testMs);
      await client.deleteServer(id).catch(() => undefined);
      returned(id);
      return true;
    };

    for (const j of jobs) jobByName.set(`job-${j.index}`, j);
    let next = 0;
    let workersLeft = cfg.hosts * cfg.workersPerHost;
    let makespanMs = 0;
    const run = cfg.policy === 'nova-guard' ? guarded : autopkgtest;
    for (let h = 0; h < cfg.hosts; h++) {
      for (let w = 0; w < cfg.workersPerHost; w++) {
        void (async () => {
          while (next < jobs.length) {
            const job = jobs[next++]!;
            try {
              if (await run(h, job)) done++;
              else failed++;
            } catch (e) {
              failed++;
              if (errors.length < 20) errors.push(`${(e as Error).name}: ${(e as Error).message}`);
            }
          }
          if (--workersLeft === 0) makespanMs = vt.now;
        })();
      }
    }
    // The destroy of a server is seen at the step it happens: Nova's instance count drops.
    let instances = fake.usage().instances;
    const watchDestroys = (): void => {
      const now = fake.usage().instances;
      if (now < instances) {
        for (const id of deleting) {
          if (fake.getServerState(id) === undefined) {
            deleting.delete(id);
            const s = servers.get(id);
            if (s) s.destroyedAtMs = vt.now;
          }
        }
      }
      instances = now;
    };
    await vt.run(() => {
      watchDestroys();
      return workersLeft === 0;
    });
    // Let the deletes nobody waits for finish (the baseline's), for at most 10 virtual minutes.
    const drainUntil = vt.now + 600000;
    await vt.run(() => {
      watchDestroys();
      return fake.usage().instances === 0 && fake.listServerStates().length === 0;
    }, drainUntil).catch(() => undefined);
    watchDestroys();
    await Promise.all(guards.map((g) => g.close().catch(() => undefined)));
    readings.close();
    const fleetStats = members.reduce((a, m) => ({ published: a.published + m.stats.published, consumed: a.consumed + m.stats.consumed, proofs: a.proofs + m.stats.proofs, fallbacks: a.fallbacks + m.stats.fallbacks, gaps: a.gaps + m.stats.gaps }), { published: 0, consumed: 0, proofs: 0, fallbacks: 0, gaps: 0 });
    const watcherEngine = { ...clients[0]!.deleteEngine.stats };
    fleet?.close();

    // Bounds from each server's own POST-to-404 time.
    const Q = cfg.quotaCores;
    const g = cfg.flavors.map((f) => f.cores).reduce(gcd);
    let coreTime = 0;
    let longest = 0;
    const detection: number[] = [];
    const twice: number[] = [];
    let detectionCore = 0;
    let twiceCore = 0;
    for (const s of servers.values()) {
      if (s.destroyedAtMs === undefined) continue;
      const t = s.destroyedAtMs - s.postAtMs;
      coreTime += s.job.flavor.cores * t;
      longest = Math.max(longest, t);
      if (s.deleteReturnedAtMs !== undefined && cfg.policy === 'nova-guard') {
        const lag = Math.max(0, s.deleteReturnedAtMs - s.destroyedAtMs);
        detection.push(lag);
        detectionCore += s.job.flavor.cores * lag;
      }
      if (s.countedAtMs !== undefined) {
        const lag = Math.max(0, s.countedAtMs - (s.postAtMs + cfg.model.schedulingMs));
        twice.push(lag);
        twiceCore += s.job.flavor.cores * lag;
      }
    }
    const wholeJobBoundMs = Math.max(longest, coreTime / (g * Math.floor(Q / g)));
    // The in-order bound: the same jobs in queue order, each holding its cores for its own POST-to-404 time.
    const lastServer = new Map<number, { postAtMs: number; heldMs: number; cores: number }>();
    for (const s of servers.values()) {
      if (s.destroyedAtMs === undefined) continue;
      const prev = lastServer.get(s.job.index);
      if (!prev || prev.postAtMs < s.postAtMs) lastServer.set(s.job.index, { postAtMs: s.postAtMs, heldMs: s.destroyedAtMs - s.postAtMs, cores: s.job.flavor.cores });
    }
    const inOrder = [...lastServer.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
    const inOrderMs = inOrderBoundMs(inOrder, cfg.hosts * cfg.workersPerHost, Q);
    const pullOrderMs = pullOrderBoundMs(inOrder, cfg.hosts * cfg.workersPerHost, g * Math.floor(Q / g));
    const boundMs = Math.max(wholeJobBoundMs, pullOrderMs);
    const fluidBoundMs = coreTime / Q;
    // Wake-up lag: from a 404 a worker saw while some create was waiting, to the next POST Nova accepted.
    postTimes.sort((a, b) => a - b);
    const wake: number[] = [];
    let p = 0;
    for (const c of confirmTimes) {
      if (!c.waiting) continue;
      while (p < postTimes.length && postTimes[p]! < c.atMs) p++;
      if (p < postTimes.length) wake.push(postTimes[p]! - c.atMs);
    }
    const meanCores = mean(jobs.map((j) => j.flavor.cores));
    const share = (xs: number[], coreMs: number): LagShare => ({
      meanS: xs.length ? round(mean(xs) / 1000, 3) : 0,
      makespanS: round(coreMs / Q / 1000, 1),
    });
    const rec = front.record;
    const record = fake.quotaRecord();
    const looks = rec.byKind.get + rec.byKind.list + rec.byKind.limits;
    const per = (n: number): number => round(n / cfg.jobs, 2);
    const k = rec.byKind;
    return {
      policy: cfg.policy,
      fleetWatcher: fleet !== undefined,
      hosts: cfg.hosts,
      workers: cfg.hosts * cfg.workersPerHost,
      quotaCores: Q,
      jobs: cfg.jobs,
      jobsDone: done,
      failedJobs: failed,
      quota403s: record.quota403s,
      recheckErrors: record.recheckErrors,
      serversLeft: fake.listServerStates().length,
      peakCores: record.peakCores,
      makespanS: round(makespanMs / 1000, 1),
      wholeJobBoundS: round(wholeJobBoundMs / 1000, 1),
      fluidBoundS: round(fluidBoundMs / 1000, 1),
      makespanOverBound: round(makespanMs / wholeJobBoundMs, 3),
      pullOrderBoundS: round(pullOrderMs / 1000, 1),
      boundS: round(boundMs / 1000, 1),
      makespanOverSoundBound: round(makespanMs / boundMs, 3),
      inOrderBoundS: round(inOrderMs / 1000, 1),
      makespanOverInOrderBound: round(makespanMs / inOrderMs, 3),
      tailS: round((makespanMs - (postTimes[postTimes.length - 1] ?? makespanMs)) / 1000, 1),
      requestsPerJob: round(rec.total / cfg.jobs, 2),
      requestsPerJobWithoutLimits: round((rec.total - rec.byKind.limits) / cfg.jobs, 2),
      perJob: { post: per(k.create), delete: per(k.delete), limits: per(k.limits), get: per(k.get), listing: per(k.list), other: per(k.flavor + k.other) },
      ...(fleet ? { fleet: { ...fleetStats, watcherEngine } } : {}),
      sharedReadings: readings.shared,
      credits: readings.credits,
      ledgerCallsPerJob: round(Object.values(readings.ledgerCalls).reduce((a, b) => a + b, 0) / cfg.jobs, 2),
      ledgerCallsByMethod: Object.fromEntries(Object.entries(readings.ledgerCalls).map(([m, n]) => [m, round(n / cfg.jobs, 2)])),
      admissionsPerJob: round((readings.shared + rec.byKind.limits) / cfg.jobs, 2),
      requests: { ...rec.byKind },
      responseBytes: { ...rec.bytes },
      looksPerSecond: round(looks / (makespanMs / 1000), 3),
      lags: {
        detection404: share(detection, detectionCore),
        wakeUp: share(wake, mean(wake) * wake.length * meanCores || 0),
        countedTwice: share(twice, twiceCore),
        freshLimits: { meanS: round(rec.limitsWaitMs / Math.max(1, rec.byKind.limits) / 1000, 3), makespanS: round((rec.limitsWaitMs * meanCores) / Q / 1000, 1) },
      },
      wallS: 0,
      cpuS: 0,
      virtualSteps: vt.steps,
      errors: [...new Set(errors)].slice(0, 5),
    };
  } finally {
    vt.uninstall();
    await fake.close();
  }
}

/** Finish a row: its wall time and the CPU time this process spent (the machine may be shared). */
export async function timedFleetSim(cfg: FleetSimConfig): Promise<FleetSimRow> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const row = await runFleetSim(cfg);
  row.wallS = round((performance.now() - t0) / 1000, 1);
  const cpu = process.cpuUsage(cpu0);
  row.cpuS = round((cpu.user + cpu.system) / 1e6, 1);
  return row;
}

/** The fleet: 515 cores, 2- and 4-core flavors, autopkgtest-like test times. */
export function fleetSimConfig(over: Partial<FleetSimConfig> = {}): FleetSimConfig {
  return {
    policy: 'nova-guard',
    hosts: 30,
    workersPerHost: 8,
    quotaCores: 515,
    jobs: 20000,
    flavors: [
      { ref: '2', cores: 2, share: 0.7 },
      { ref: '3', cores: 4, share: 0.3 },
    ],
    testMedianMs: 240000,
    testSigma: 0.8,
    testMaxMs: 3600000,
    model: REAL_NOVA_MODEL,
    seed: 20261202,
    ...over,
  };
}
