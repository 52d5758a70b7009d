/**
 * A CI worker that creates servers through its OWN create function, guarded by
 * `QuotaGuard.withQuotaGuard`: the guard waits for quota headroom (fresh `GET /limits`, minus what
 * this process has in flight), calls the function, and calls it again after a backoff when it
 * rejects with a transient quota error. The function waits until the server is ACTIVE (so that Nova
 * counts it when the guard's claim ends), and when the server lands in ERROR with a quota fault
 * (Nova's recheck race) it deletes it and throws an Error whose message is Nova's quota fault, which
 * the guard retries (a message `parseQuotaMessage` reads as a transient quota error).
 *
 * The function tags its server with the claim it runs under (`claim.metadata`: `nova-guard-claim`,
 * `nova-guard-claim-id`, `nova-guard-token`, `nova-guard-holder`, the metadata the guard's own POSTs
 * carry), so that the quota audit and the reaper know the fleet's servers (`liveClaims`) and can
 * spot a late create from an expired claim.
 *
 * Run: `npm run build:examples && node build/examples/guarded-worker.js` (an embedded FakeNova with
 * a 6-core quota, 4 workers × 3 jobs of 2-core servers, one recheck race), or against a cloud:
 * `node build/examples/guarded-worker.js --endpoint http://127.0.0.1:8774/v2.1 --token admin:demo --image <id> --flavor <id>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { NovaClient, QuotaGuard, parseQuotaMessage, waitForActive, type GuardClaimInfo, type Server } from 'nova-guard';
import { FakeNova } from 'nova-guard/testing';

interface Flags {
  endpoint?: string;
  token?: string;
  image: string;
  flavor: string;
  workers: string;
  jobs: string;
}

const flags = new Command('guarded-worker')
  .option('--endpoint <url>', 'compute endpoint (default: an embedded fake Nova)')
  .option('--token <token>', 'token for --endpoint')
  .option('--image <id>', 'image id', 'cirros')
  .option('--flavor <id>', 'flavor id', '2')
  .option('--workers <n>', 'workers', '4')
  .option('--jobs <n>', 'jobs per worker', '3')
  .parse()
  .opts<Flags>();

/**
 * The worker's own create, tagged with the guard's claim (`claim.metadata`): POST, wait for ACTIVE,
 * and on ERROR delete the server (it holds quota) and throw: an Error with Nova's quota fault as its
 * message (retried by the guard unless permanent), another Error otherwise (not retried).
 */
async function createActive(client: NovaClient, name: string, signal: AbortSignal, claim: GuardClaimInfo): Promise<Server> {
  const metadata = { ...claim.metadata, job: name };
  const created = await client.createServer({ name, flavorRef: flags.flavor, imageRef: flags.image, networks: 'none', metadata }, { signal });
  const res = await waitForActive(client, created.id, { intervalMs: 20, timeoutMs: 300000, signal });
  if (res.outcome === 'active') return res.server!;
  await client.deleteServer(created.id, { wait: true, intervalMs: 20 });
  const fault = res.server?.fault?.message;
  if (parseQuotaMessage(fault)) throw new Error(fault);
  throw new Error(`server ${created.id} ended ${res.outcome}: ${fault ?? 'no fault'}`);
}

async function worker(client: NovaClient, guard: QuotaGuard, name: string, jobs: number): Promise<number> {
  let failed = 0;
  for (let job = 1; job <= jobs; job++) {
    try {
      // fn gets the call's signal and the claim it runs under: its metadata tags the server.
      const server = await guard.withQuotaGuard({ flavorRef: flags.flavor, count: 1 }, (signal, claim) => createActive(client, `${name}-job${job}`, signal, claim));
      await sleep(50); // "run the test"
      await client.deleteServer(server.id, { wait: true, intervalMs: 20 });
      console.log(`${name} job ${job}: done on ${server.id} (claim tag ${server.metadata?.['nova-guard-claim'] ?? 'MISSING'}, claim ${server.metadata?.['nova-guard-claim-id'] ?? 'MISSING'})`);
    } catch (e) {
      failed++;
      console.log(`${name} job ${job}: FAILED ${(e as Error).name}: ${(e as Error).message}`);
    }
  }
  return failed;
}

async function main(): Promise<number> {
  let fake: FakeNova | undefined;
  let client: NovaClient;
  // `networks: 'none'` (a server with no network, as CI test servers often are) needs microversion
  // 2.37 or later: at the default 2.1 Nova refuses it with a 400 (Nova API reference, "Create Server").
  const microversion = '2.37';
  if (flags.endpoint && flags.token) {
    client = new NovaClient({ endpoint: flags.endpoint, token: flags.token, microversion });
  } else {
    fake = await FakeNova.start({ maxTotalCores: 6, buildDelayMs: 30, deleteDelayMs: 60 });
    fake.failCreatesWithQuotaRecheck(1); // one recheck race: 202, then ERROR with a quota fault
    client = new NovaClient({ endpoint: fake.endpoint, token: `admin:${fake.projectId}`, microversion });
  }
  const guard = new QuotaGuard(client, {
    baseDelayMs: 50,
    minDelayMs: 20,
    maxDelayMs: 500,
    maxWaitMs: 120000,
    onRetry: (i) => console.log(`  retry (${i.reason}) after ${i.delayMs} ms: ${i.error.message}`),
  });
  try {
    const failed = await Promise.all(Array.from({ length: Number(flags.workers) }, (_, i) => worker(client, guard, `w${i + 1}`, Number(flags.jobs))));
    const total = failed.reduce((a, b) => a + b, 0);
    console.log(`\n${guard.stats.succeeded} guarded creates, ${guard.stats.waits} waits for headroom, ${guard.stats.quotaRetries} quota retries, ${total} failed jobs`);
    return total === 0 ? 0 : 1;
  } finally {
    await fake?.close();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(`guarded-worker failed: ${(e as Error).message}`);
    process.exitCode = 1;
  },
);
