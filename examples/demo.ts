/**
 * The main job: several autopkgtest-style workers, spread over two worker hosts, share one project
 * whose core quota is smaller than what they would use at once, and Nova deletes asynchronously.
 * Every create goes through a QuotaGuard; every delete waits until Nova has really deleted the
 * server. The summary shows what ledger the hosts shared, the waits and quota 403s, and that no job
 * failed; the run ends with a quota audit.
 *
 * `npm run demo` runs it on an embedded fake Nova behind a fake Keystone (password auth, token
 * renewal, catalog lookup). Against a real cloud:
 * `npm run demo -- --endpoint http://127.0.0.1:8774/v2.1 --token admin:demo --image <id> --flavor <id>`.
 *
 * `--ledger` takes any ledger string a QuotaGuard takes (README "Ledgers"):
 * - by default a SQLite ledger in a fresh temporary directory (removed at the end): the hosts are
 *   worker PROCESSES (`demoHost.ts`) whose guards share that file, the setup of one machine with a
 *   process per worker: they wait for each other's claims, and no quota 403 is met;
 * - `sqlite:/abs/file` or `redis://host:port` (`scripts/redis/start.sh` starts a Redis): the same,
 *   on that ledger (Redis: the setup of many machines);
 * - `in-process`: the hosts are clients in this process, each with its own in-process ledger: they
 *   share nothing, so they race into Nova's quota 403s, which their guards absorb.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { KeystoneAuth, NovaClient, QuotaGuard, auditQuota, formatAudit } from 'nova-guard';
import { FakeKeystone, FakeNova } from 'nova-guard/testing';
import { defaultLedgerDir } from 'nova-guard/sqlite';
import type { DemoHostResult, DemoHostTask } from './demoHost.js';
import { runWorker, type WorkerStats } from './worker.js';
import { startPrometheusMetrics } from './prometheus.js';

/**
 * The line above `--metrics` with worker processes: the metrics printed are this process's (its
 * Keystone token, the audit); each worker process keeps its own. A Prometheus comment line.
 */
const FLEET_METRICS_NOTE =
  "# the metrics of this process only (its Keystone token and the quota audit): the worker processes' creates and deletes are counted in their own processes; --ledger in-process --metrics shows the job's";

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
  .option('--ledger <spec>', 'ledger the hosts share: sqlite:/abs/file, redis://host:port, or in-process (each host its own: they race into quota 403s); default: sqlite: in a fresh temporary directory')
  .option('--quiet', 'print only the summary')
  .option('--metrics', "print nova-guard's OpenTelemetry metrics at the end, in the Prometheus text format (examples/prometheus.ts)")
  .parse();
const flags = program.opts<DemoFlags>();

/** `--name`'s value as a whole number >= 1. @throws Error naming the flag otherwise. */
function countFlag(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a whole number >= 1, got ${JSON.stringify(text)}`);
  return n;
}

/**
 * The workers and the hosts they are spread over: never more hosts than workers (a host without a
 * worker is neither started nor counted, so `--workers 1` runs on 1 worker process, not 2).
 */
function sizes(): { workers: number; hosts: number } {
  const workers = countFlag('workers', flags.workers);
  return { workers, hosts: Math.min(countFlag('hosts', flags.hosts), workers) };
}

/** A ledger string the demo takes: `in-process`, `sqlite:…` or `redis(s)://…` (the guard checks the rest). */
const LEDGER_FORMS = /^(in-process|sqlite:.*|rediss?:\/\/.+)$/;

/** `--ledger`, or the default: a SQLite file in a fresh temporary directory (`cleanup` removes it). */
function ledgerSpec(): { spec: string; cleanup: () => void } {
  if (flags.ledger !== undefined) {
    if (!LEDGER_FORMS.test(flags.ledger)) throw new Error(`--ledger must be sqlite:[PATH], redis://host:port or in-process, got ${JSON.stringify(flags.ledger)}`);
    return { spec: flags.ledger, cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), 'nova-guard-demo-'));
  return { spec: `sqlite:${join(dir, 'ledger.db')}`, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `1 host`, `2 hosts`. */
function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What the summary says of the ledger, and why quota 403s would appear without a shared one (never a success claim when jobs failed). */
function ledgerLine(spec: string, hosts: number, quota403s: number, failed: number): string {
  const secretless = spec.replace(/\/\/[^@/]*@/, '//***@');
  const outcome = failed > 0 ? `${failed} jobs failed: see the errors below` : `${quota403s} quota 403s`;
  if (spec === 'in-process') {
    if (hosts === 1) return `in-process (one host, whose workers share its guard: ${outcome})`;
    return `in-process (each of the ${hosts} hosts has its own: they share nothing and race into Nova's quota 403s (${outcome}), which the guard absorbs; the demo's default, a sqlite: ledger, or redis:// avoids them)`;
  }
  // `sqlite:` alone names a file in the library's default directory: say which.
  const shown = spec === 'sqlite:' ? `sqlite: (a file in ${defaultLedgerDir()})` : secretless;
  return `${shown} (${hosts === 1 ? 'used by the 1 worker process' : `shared by the ${hosts} worker processes`}: ${outcome}). With --ledger in-process the hosts share nothing and race into Nova's 403s, which the guard absorbs.`;
}

/** Each distinct job error once, with how many jobs met it. */
function errorLines(results: ReadonlyArray<{ worker: string; errors: readonly string[] }>): string[] {
  const seen = new Map<string, string[]>();
  for (const r of results) for (const e of r.errors) seen.set(e, [...(seen.get(e) ?? []), r.worker]);
  return [...seen].map(([e, workers]) => (workers.length === 1 ? `  ${workers[0]}: ${e}` : `  ${workers.length} jobs (${[...new Set(workers)].join(', ')}): ${e}`));
}

/** The worker processes running (a fleet run): stopped with the demo on Ctrl-C or SIGTERM. */
const children = new Set<ChildProcess>();
/** Set once a signal stops the demo: the worker processes' exits are then expected, not failures. */
let stopping = false;

/** On SIGINT or SIGTERM: stop the worker processes, wait for them, remove the temporary ledger, exit 130 / 143. */
function stopOnSignals(cleanup: () => void): void {
  const stop = (signal: NodeJS.Signals): void => {
    stopping = true;
    console.error(`demo: ${signal}: stopping ${children.size} worker process(es) and removing the temporary ledger`);
    const exited = [...children].map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve()))));
    for (const c of children) c.kill('SIGTERM');
    const force = setTimeout(() => {
      for (const c of children) c.kill('SIGKILL');
    }, 5000);
    void Promise.all(exited).then(() => {
      clearTimeout(force);
      cleanup();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function main(): Promise<number> {
  sizes(); // bad --workers / --hosts: said before anything starts
  const { spec, cleanup } = ledgerSpec();
  stopOnSignals(cleanup);
  if (!flags.quiet) console.log(`demo: ledger ${spec.replace(/\/\/[^@/]*@/, '//***@')}`);
  try {
    return await demo(spec);
  } finally {
    cleanup();
  }
}

async function demo(spec: string): Promise<number> {
  const started = performance.now();
  const metrics = flags.metrics ? await startPrometheusMetrics() : undefined;
  const real = Boolean(flags.endpoint || flags.osCloud);
  const { workers, hosts } = sizes();
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
  if (spec !== 'in-process') return fleet(started, spec, client, keystone?.authUrl, fake, keystone, metrics);
  const imageRef = flags.image ?? process.env['NOVA_IMAGE_ID'] ?? 'cirros';
  const flavorRef = flags.flavor ?? process.env['NOVA_FLAVOR_ID'] ?? '2';
  const guards = clients.map((c) => new QuotaGuard(c, {
    baseDelayMs: 100,
    minDelayMs: 50,
    maxDelayMs: 1000,
    maxWaitMs: 60000,
    activeIntervalMs: 100,
  }));
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
    ['workers x jobs', `${workers} x ${jobs} (flavor ${flavorRef}: ${vcpus}-core servers) on ${plural(hosts, 'host')} in this process`],
    ['ledger', ledgerLine(spec, hosts, guardSum('quota403s'), sum('jobsFailed'))],
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
  for (const line of errorLines(results)) console.log(line);

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
    children.add(child);
    child.once('exit', () => children.delete(child));
    child.once('message', (m: { result?: DemoHostResult; error?: string }) => (m.result ? resolve(m.result) : reject(new Error(`host ${task.host + 1}: ${m.error}`))));
    child.once('exit', (code) => reject(new Error(`host ${task.host + 1} exited (${code}) without a result`)));
    child.send(task);
  });
}

/** A shared ledger (`sqlite:…`, `redis://…`): the hosts are processes whose guards share it. */
async function fleet(
  started: number,
  spec: string,
  client: NovaClient,
  authUrl: string | undefined,
  fake: FakeNova | undefined,
  keystone: FakeKeystone | undefined,
  metrics: Awaited<ReturnType<typeof startPrometheusMetrics>> | undefined,
): Promise<number> {
  const { workers, hosts } = sizes();
  const jobs = Number(flags.jobs);
  const flavorRef = flags.flavor ?? process.env['NOVA_FLAVOR_ID'] ?? '2';
  const imageRef = flags.image ?? process.env['NOVA_IMAGE_ID'] ?? 'cirros';
  const cloud: DemoHostTask['cloud'] = authUrl ? { keystone: { authUrl } } : flags.endpoint && flags.token ? { endpoint: flags.endpoint, token: flags.token } : { osCloud: flags.osCloud ?? '' };
  const names = Array.from({ length: workers }, (_, i) => `demo-w${i + 1}`);
  let out: DemoHostResult[];
  try {
    out = await Promise.all(
      Array.from({ length: hosts }, (_, h) =>
        runHost({ host: h, workers: names.filter((_, i) => i % hosts === h), jobs, flavorRef, imageRef, testMs: Number(flags.testMs), ledgerUrl: spec, quiet: Boolean(flags.quiet), cloud }),
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
    ['workers x jobs', `${workers} x ${jobs} (flavor ${flavorRef}) on ${plural(hosts, 'worker process', 'worker processes')}`],
    ['ledger', ledgerLine(spec, hosts, guardSum('quota403s'), sum('jobsFailed'))],
    ['jobs done', sum('jobsDone')],
    ['jobs failed', sum('jobsFailed')],
    ['waits for headroom', guardSum('waits')],
    ['quota 403s met (absorbed)', guardSum('quota403s')],
    ['late quota faults (ERROR after 202, deleted, retried)', guardSum('lateQuotaFaults')],
    ['quota retries', guardSum('quotaRetries')],
    ['ledger fallbacks (the shared ledger failed: in-process ledger)', guardSum('ledgerFallbacks')],
    ['requests made', out.reduce((n, o) => n + o.requests, 0)],
    ['deletes confirmed', sum('deletesConfirmed')],
    ['cores in use at the end', limits.absolute.totalCoresUsed ?? 'unknown'],
    ['elapsed', `${((performance.now() - started) / 1000).toFixed(1)} s`],
  ];
  console.log('\n| nova-guard demo (fleet) | |\n|---|---|');
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
  for (const line of errorLines(results)) console.log(line);
  const audit = await auditQuota(client);
  console.log(`\n${formatAudit(audit)}`);
  // This process's metrics (the hosts' own stay in their processes): said, so that a reader does not
  // take the few requests of the token and the audit for the job's.
  if (metrics) console.log(`\n${FLEET_METRICS_NOTE}\n${await metrics.text()}`);
  await metrics?.shutdown();
  await fake?.close();
  await keystone?.stop();
  return sum('jobsFailed') === 0 && sum('deletesConfirmed') === workers * jobs ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (stopping) return; // the signal handler reports and exits
    console.error(`demo failed: ${(e as Error).message}`);
    process.exitCode = 1;
  },
);
