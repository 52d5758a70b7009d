/**
 * The main job: several autopkgtest-style workers, spread over two worker hosts (two processes' worth
 * of clients and guards), share one project whose core quota is smaller than what they would use at
 * once, and Nova deletes asynchronously. Every create goes through a QuotaGuard; every delete waits
 * until Nova has really deleted the server. The guards of the two hosts do not know each other's
 * claims, so they race and meet real quota 403s, which they absorb. The summary shows the waits and
 * 403s absorbed and no job failed; the run ends with a quota audit.
 *
 * `npm run demo` runs it on an embedded fake Nova behind a fake Keystone (password auth, token
 * renewal, catalog lookup). Against a real cloud:
 * `npm run demo -- --endpoint http://127.0.0.1:8774/v2.1 --token admin:demo --image <id> --flavor <id>`.
 *
 * With `--ledger redis://127.0.0.1:6379` the hosts are worker PROCESSES (`demoHost.ts`) whose guards
 * share one RedisQuotaLedger: they wait for each other's claims instead of racing into 403s
 * (`npm run demo -- --hosts 3 --ledger redis://127.0.0.1:6379`; `scripts/redis/start.sh` starts a Redis).
 */
import { fork } from 'node:child_process';
import { Command } from 'commander';
import { KeystoneAuth, NovaClient, QuotaGuard, auditQuota, formatAudit } from 'nova-guard';
import { FakeKeystone, FakeNova } from 'nova-guard/testing';
import type { DemoHostResult, DemoHostTask } from './demoHost.js';
import { runWorker, type WorkerStats } from './worker.js';
import { startPrometheusMetrics } from './prometheus.js';

interface DemoFlags {
  endpoint?: string;
  token?: string;
  osCloud?: string;
  image?: string;
  flavor?: string;
  workers: string;
  hosts: string;
  jobs: string;
  cores: string;
  testMs: string;
  deleteDelayMs: string;
  latencyMs: string;
  ledger?: string;
  quiet?: boolean;
  metrics?: boolean;
}

const program = new Command('demo')
  .option('--endpoint <url>', 'compute endpoint of a real cloud (default: an embedded fake Nova)')
  .option('--token <token>', 'token for --endpoint')
  .option('--os-cloud <name>', 'cloud from clouds.yaml (a real cloud)')
  .option('--image <id>', 'image id (real cloud; env NOVA_IMAGE_ID)')
  .option('--flavor <id>', 'flavor id (default 2; env NOVA_FLAVOR_ID)')
  .option('--workers <n>', 'workers', '8')
  .option('--hosts <n>', 'worker hosts the workers are spread over (each with its own client and guard)', '2')
  .option('--jobs <n>', 'jobs per worker', '3')
  .option('--cores <n>', 'core quota of the fake Nova', '10')
  .option('--test-ms <ms>', 'how long each "test" runs, in ms', '150')
  .option('--delete-delay-ms <ms>', 'how long the fake Nova takes to delete a server, in ms', '400')
  .option('--latency-ms <ms>', 'API latency of the fake Nova, in ms (makes the hosts race)', '15')
  .option('--ledger <url>', 'redis:// URL of a shared RedisQuotaLedger: the hosts become worker processes sharing it')
  .option('--quiet', 'print only the summary')
  .option('--metrics', "print nova-guard's OpenTelemetry metrics at the end, in the Prometheus text format (examples/prometheus.ts)")
  .parse();
const flags = program.opts<DemoFlags>();

async function main(): Promise<number> {
  const started = performance.now();
  const metrics = flags.metrics ? await startPrometheusMetrics() : undefined;
  const real = Boolean(flags.endpoint || flags.osCloud);
  const hosts = Math.max(1, Number(flags.hosts));
  let fake: FakeNova | undefined;
  let keystone: FakeKeystone | undefined;
  const clients: NovaClient[] = [];
  for (let h = 0; h < hosts; h++) {
    if (flags.endpoint && flags.token) {
      clients.push(new NovaClient({ endpoint: flags.endpoint, token: flags.token, microversion: '2.79' }));
    } else if (real) {
      clients.push(await NovaClient.fromCloud(flags.osCloud, { microversion: '2.79' }));
    } else {
      if (!fake) {
        fake = await FakeNova.start({
          projectId: 'demo',
          maxTotalCores: Number(flags.cores),
          buildDelayMs: 100,
          deleteDelayMs: Number(flags.deleteDelayMs),
          deletedWindowMs: 30,
          validateToken: (t) => keystone?.isValid(t) ?? false,
        });
        if (Number(flags.latencyMs) > 0) fake.inject({ path: /.*/, delayMs: Number(flags.latencyMs), times: Infinity });
        keystone = await FakeKeystone.start({
          computeUrl: fake.endpoint,
          projects: [{ id: 'demo', name: 'ci' }],
          users: [{ name: 'ci-bot', password: 'ci-bot-password', projects: ['demo'] }],
        });
      }
      const auth = new KeystoneAuth({
        authUrl: keystone!.authUrl,
        username: 'ci-bot',
        password: 'ci-bot-password',
        userDomainName: 'Default',
        projectName: 'ci',
        projectDomainName: 'Default',
      });
      clients.push(new NovaClient({ auth, projectId: 'demo', microversion: '2.79' }));
    }
  }
  const client = clients[0]!;
  if (flags.ledger) return fleet(started, client, keystone?.authUrl, fake, keystone);
  const imageRef = flags.image ?? process.env['NOVA_IMAGE_ID'] ?? 'cirros';
  const flavorRef = flags.flavor ?? process.env['NOVA_FLAVOR_ID'] ?? '2';
  const guards = clients.map((c) => new QuotaGuard(c, {
    baseDelayMs: 100,
    minDelayMs: 50,
    maxDelayMs: 1000,
    maxWaitMs: 60000,
    activeIntervalMs: 100,
  }));
  const workers = Number(flags.workers);
  const jobs = Number(flags.jobs);
  const results: WorkerStats[] = await Promise.all(
    Array.from({ length: workers }, (_, i) =>
      runWorker(clients[i % hosts]!, guards[i % hosts]!, {
        name: `demo-w${i + 1}`,
        jobs,
        flavorRef,
        imageRef,
        testDurationMs: Number(flags.testMs),
        deleteIntervalMs: 100,
        onJob: flags.quiet ? undefined : (w, j, ok, detail) => console.log(`${w} job ${j}: ${ok ? 'done' : `FAILED ${detail}`}`),
      }),
    ),
  );
  const guardSum = (k: 'waits' | 'quota403s' | 'lateQuotaFaults' | 'quotaRetries'): number => guards.reduce((n, g) => n + g.stats[k], 0);
  const requests = clients.reduce((n, c) => n + c.stats.requests, 0);
  const limits = await client.getLimits();
  // The flavor's own vcpus (a flavor without them, or one that cannot be read, shows as unknown).
  const vcpus = await client.getFlavor(flavorRef).then(
    (f) => (typeof f.vcpus === 'number' && Number.isFinite(f.vcpus) ? String(f.vcpus) : 'unknown'),
    () => 'unknown',
  );
  const sum = (k: keyof WorkerStats): number => results.reduce((n, r) => n + (r[k] as number), 0);
  const rows: Array<[string, string | number]> = [
    ['cloud', real ? (flags.endpoint ?? flags.osCloud ?? '') : `fake Nova behind fake Keystone, ${flags.cores}-core quota, ${flags.deleteDelayMs} ms deletes`],
    ['workers x jobs', `${workers} x ${jobs} (flavor ${flavorRef}: ${vcpus}-core servers) on ${hosts} hosts`],
    ['jobs done', sum('jobsDone')],
    ['jobs failed', sum('jobsFailed')],
    ['waits for headroom', guardSum('waits')],
    ['quota 403s met (absorbed)', guardSum('quota403s')],
    ['late quota faults (ERROR after 202, deleted, retried)', guardSum('lateQuotaFaults')],
    ['quota retries', guardSum('quotaRetries')],
    ['requests made', requests],
    ['deletes confirmed', sum('deletesConfirmed')],
    ['cores in use at the end', limits.absolute.totalCoresUsed ?? 'unknown'],
    ['elapsed', `${((performance.now() - started) / 1000).toFixed(1)} s`],
  ];
  console.log('\n| nova-guard demo | |\n|---|---|');
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
  for (const r of results) for (const e of r.errors) console.log(`  ${r.worker}: ${e}`);

  const audit = await auditQuota(client);
  console.log(`\n${formatAudit(audit)}`);
  if (metrics) console.log(`\n${await metrics.text()}`);
  await metrics?.shutdown();
  await fake?.close();
  await keystone?.stop();
  return sum('jobsFailed') === 0 && sum('deletesConfirmed') === workers * jobs ? 0 : 1;
}

/** Run one host task in a child process (`demoHost.js`). */
function runHost(task: DemoHostTask): Promise<DemoHostResult> {
  return new Promise((resolve, reject) => {
    const child = fork(new URL('./demoHost.js', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m: { result?: DemoHostResult; error?: string }) => (m.result ? resolve(m.result) : reject(new Error(`host ${task.host + 1}: ${m.error}`))));
    child.once('exit', (code) => reject(new Error(`host ${task.host + 1} exited (${code}) without a result`)));
    child.send(task);
  });
}

/** `--ledger`: the hosts are processes whose guards share a RedisQuotaLedger. */
async function fleet(started: number, client: NovaClient, authUrl: string | undefined, fake: FakeNova | undefined, keystone: FakeKeystone | undefined): Promise<number> {
  const hosts = Math.max(1, Number(flags.hosts));
  const workers = Number(flags.workers);
  const jobs = Number(flags.jobs);
  const flavorRef = flags.flavor ?? process.env['NOVA_FLAVOR_ID'] ?? '2';
  const imageRef = flags.image ?? process.env['NOVA_IMAGE_ID'] ?? 'cirros';
  const cloud: DemoHostTask['cloud'] = authUrl ? { keystone: { authUrl } } : flags.endpoint && flags.token ? { endpoint: flags.endpoint, token: flags.token } : { osCloud: flags.osCloud ?? '' };
  const names = Array.from({ length: workers }, (_, i) => `demo-w${i + 1}`);
  let out: DemoHostResult[];
  try {
    out = await Promise.all(
      Array.from({ length: hosts }, (_, h) =>
        runHost({ host: h, workers: names.filter((_, i) => i % hosts === h), jobs, flavorRef, imageRef, testMs: Number(flags.testMs), ledgerUrl: flags.ledger!, quiet: Boolean(flags.quiet), cloud }),
      ),
    );
  } catch (e) {
    await fake?.close();
    await keystone?.stop();
    throw e;
  }
  const results = out.flatMap((o) => o.results);
  const sum = (k: keyof WorkerStats): number => results.reduce((n, r) => n + (r[k] as number), 0);
  const guardSum = (k: keyof DemoHostResult['guard']): number => out.reduce((n, o) => n + o.guard[k], 0);
  const limits = await client.getLimits();
  const real = Boolean(flags.endpoint || flags.osCloud);
  const rows: Array<[string, string | number]> = [
    ['cloud', real ? (flags.endpoint ?? flags.osCloud ?? '') : `fake Nova behind fake Keystone, ${flags.cores}-core quota, ${flags.deleteDelayMs} ms deletes`],
    ['workers x jobs', `${workers} x ${jobs} (flavor ${flavorRef}) on ${hosts} host processes sharing a Redis ledger`],
    ['jobs done', sum('jobsDone')],
    ['jobs failed', sum('jobsFailed')],
    ['waits for headroom', guardSum('waits')],
    ['quota 403s met (absorbed)', guardSum('quota403s')],
    ['late quota faults (ERROR after 202, deleted, retried)', guardSum('lateQuotaFaults')],
    ['quota retries', guardSum('quotaRetries')],
    ['ledger fallbacks (Redis failed: in-process ledger)', guardSum('ledgerFallbacks')],
    ['requests made', out.reduce((n, o) => n + o.requests, 0)],
    ['deletes confirmed', sum('deletesConfirmed')],
    ['cores in use at the end', limits.absolute.totalCoresUsed ?? 'unknown'],
    ['elapsed', `${((performance.now() - started) / 1000).toFixed(1)} s`],
  ];
  console.log('\n| nova-guard demo (fleet) | |\n|---|---|');
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
  for (const r of results) for (const e of r.errors) console.log(`  ${r.worker}: ${e}`);
  const audit = await auditQuota(client);
  console.log(`\n${formatAudit(audit)}`);
  await fake?.close();
  await keystone?.stop();
  return sum('jobsFailed') === 0 && sum('deletesConfirmed') === workers * jobs ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(`demo failed: ${(e as Error).message}`);
    process.exitCode = 1;
  },
);
