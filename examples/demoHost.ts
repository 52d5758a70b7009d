/**
 * One worker host of `npm run demo` (a shared ledger: `sqlite:…` by default, or `redis://…`): a child
 * process with its own client and a QuotaGuard on the ledger the string names, shared with the other
 * hosts (the guard opens it and closes it at `close()`). Gets its task over IPC, runs its workers
 * (`worker.ts`) and answers with what they did.
 */
import { KeystoneAuth, NovaClient, QuotaGuard } from 'nova-guard';
import { runWorker, type WorkerStats } from './worker.js';

/** What the demo asks a host to do. */
export interface DemoHostTask {
  host: number;
  /** Worker names of this host. */
  workers: string[];
  jobs: number;
  flavorRef: string;
  imageRef: string;
  testMs: number;
  /** The shared ledger's string (`sqlite:/abs/file`, `redis://host:port`), as `QuotaGuardOptions.ledger` takes it. */
  ledgerUrl: string;
  quiet: boolean;
  /** How to reach Nova: the embedded fake's Keystone, a token, or a clouds.yaml entry. */
  cloud: { keystone: { authUrl: string } } | { endpoint: string; token: string } | { osCloud: string };
}

/** What a host answers. */
export interface DemoHostResult {
  results: WorkerStats[];
  guard: { waits: number; quota403s: number; lateQuotaFaults: number; quotaRetries: number; ledgerFallbacks: number };
  requests: number;
}

async function client(task: DemoHostTask): Promise<NovaClient> {
  const c = task.cloud;
  if ('keystone' in c) {
    const auth = new KeystoneAuth({ authUrl: c.keystone.authUrl, username: 'ci-bot', password: 'ci-bot-password', userDomainName: 'Default', projectName: 'ci', projectDomainName: 'Default' });
    return new NovaClient({ auth, projectId: 'demo', microversion: '2.79' });
  }
  if ('endpoint' in c) return new NovaClient({ endpoint: c.endpoint, token: c.token, microversion: '2.79' });
  return NovaClient.fromCloud(c.osCloud, { microversion: '2.79' });
}

async function run(task: DemoHostTask): Promise<DemoHostResult> {
  const nova = await client(task);
  const guard = new QuotaGuard(nova, { ledger: task.ledgerUrl, baseDelayMs: 100, minDelayMs: 50, maxDelayMs: 1000, maxWaitMs: 60000, activeIntervalMs: 100 });
  try {
    const results = await Promise.all(
      task.workers.map((name) =>
        runWorker(nova, guard, {
          name,
          jobs: task.jobs,
          flavorRef: task.flavorRef,
          imageRef: task.imageRef,
          testDurationMs: task.testMs,
          deleteIntervalMs: 100,
          onJob: task.quiet ? undefined : (w, j, ok, detail) => console.log(`host${task.host + 1} ${w} job ${j}: ${ok ? 'done' : `FAILED ${detail}`}`),
        }),
      ),
    );
    const s = guard.stats;
    return { results, guard: { waits: s.waits, quota403s: s.quota403s, lateQuotaFaults: s.lateQuotaFaults, quotaRetries: s.quotaRetries, ledgerFallbacks: s.ledgerFallbacks }, requests: nova.stats.requests };
  } finally {
    await guard.close();
  }
}

// The demo stopped (Ctrl-C, a killed parent): its IPC channel closes, and this worker process ends with it.
process.once('disconnect', () => process.exit(1));

process.once('message', (task: DemoHostTask) => {
  run(task).then(
    (result) => process.send?.({ result }, () => process.exit(0)),
    (e: unknown) => process.send?.({ error: (e as Error)?.message ?? String(e) }, () => process.exit(1)),
  );
});
