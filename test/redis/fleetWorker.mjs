// One "host" of the multi-process fleet tests (test/redis/fleet.test.ts, fleetNetwork.test.ts): a
// child process that runs `workers` workers, each `jobs` jobs (guarded create of a 2-core server, a
// short test, delete and wait for the 404), through one QuotaGuard on a RedisQuotaLedger (or none:
// `redisUrl` null). Imports the built package (dist/, through the package's own name); the tests
// build it when stale. Config: JSON in argv[2]; a ledger or guard option left out takes the
// library's default. Log: pino JSON lines (warn and above) on stdout. Result: one IPC message.
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { clearInterval, setInterval } from 'node:timers';
import { pino } from 'pino';
import { NovaClient, QuotaGuard } from 'nova-guard';
import { RedisQuotaLedger } from 'nova-guard/redis';

const cfg = JSON.parse(process.argv[2]);
/** `o` without its undefined values (an option left out takes its default). */
const given = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
const logger = pino({ level: process.env.FLEET_LOG_LEVEL ?? 'warn', base: { holder: cfg.holder } }, pino.destination({ fd: 1, sync: true }));
const client = new NovaClient(given({ endpoint: cfg.endpoint, token: `admin:${cfg.projectId}`, microversion: '2.79', requestTimeoutMs: cfg.requestTimeoutMs }));
// `ledger`: a ledger string (`sqlite:DIR`, test/sqlite/processes.test.ts) the guard opens, owns and closes.
const ledger =
  typeof cfg.ledger === 'string'
    ? cfg.ledger
    : cfg.redisUrl === null
    ? undefined
    : new RedisQuotaLedger(given({ url: cfg.redisUrl, endpoint: cfg.endpoint, projectId: cfg.projectId, holder: cfg.holder, commandTimeoutMs: cfg.commandTimeoutMs, limitsMaxAgeMs: cfg.limitsMaxAgeMs, restartGraceMs: cfg.restartGraceMs, placeTtlMs: cfg.placeTtlMs }));
const guard = new QuotaGuard(
  client,
  given({
    ledger,
    leaseTtlMs: cfg.leaseTtlMs,
    ledgerTimeoutMs: cfg.ledgerTimeoutMs,
    ledgerFallback: cfg.ledgerFallback,
    minDelayMs: 20,
    baseDelayMs: 50,
    maxDelayMs: 400,
    maxWaitMs: cfg.maxWaitMs ?? 60_000,
    activeIntervalMs: 50,
    activeTimeoutMs: 60_000,
    logger,
  }),
);

// For the record (info): when this host first reached Redis, and each create's end.
logger.info({ at: Date.now() }, 'host started');
if (ledger instanceof RedisQuotaLedger) {
  const reached = setInterval(() => {
    if (!ledger.everReached()) return;
    clearInterval(reached);
    logger.info({ at: Date.now() }, 'ledger reached Redis');
  }, 5);
}
let failed = 0;
let done = 0;
const errors = [];
const createMs = [];
const started = performance.now();
await Promise.all(
  Array.from({ length: cfg.workers }, async (_, w) => {
    for (let j = 0; j < cfg.jobs; j++) {
      try {
        const t0 = performance.now();
        const server = await guard.createServer({ name: `${cfg.holder}-w${w}-j${j}`, flavorRef: '2', imageRef: 'img', networks: 'none' });
        createMs.push(Math.round(performance.now() - t0));
        logger.info({ at: Date.now(), server: server.id, createMs: createMs.at(-1) }, 'created');
        await sleep(cfg.runMs);
        await client.deleteServer(server.id, { wait: true, intervalMs: 50, timeoutMs: 30_000 });
        done++;
      } catch (e) {
        failed++;
        errors.push(`${e?.name}: ${e?.message}`);
      }
    }
  }),
);
const wallMs = Math.round(performance.now() - started);
const stats = { ...guard.stats };
if (typeof ledger === 'string') await guard.close();
else await ledger?.close();
process.send?.({ done, failed, errors: [...new Set(errors)].slice(0, 5), stats, createMs, wallMs }, () => process.exit(0));
