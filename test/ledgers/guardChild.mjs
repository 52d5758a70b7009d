// One process of test/ledgers/ledgerConfig.test.ts: a FakeNova and a QuotaGuard of the built package
// (dist/, through the package's own name) on the ledger of argv[2]'s JSON ({ ledger, options, env,
// op: 'create' | 'headroom' | 'two-creates', concurrent, noClose }). Prints one JSON line on stdout: what each call gave
// (the error's name, message, classes; or the server), the guard's stats, the time each call took,
// and the process warnings seen. Node's own printing of the warnings stays on stderr.
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import * as ng from 'nova-guard';
import { FakeNova } from 'nova-guard/testing';
import { pino } from 'pino';

const cfg = JSON.parse(process.argv[2]);
const warnings = [];
process.on('warning', (w) => warnings.push({ name: w.name, message: w.message }));
const nova = await FakeNova.start({ maxTotalCores: 8, deletedWindowMs: 0 });
const client = new ng.NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter });
const calls = [];
let guard;
try {
  guard = new ng.QuotaGuard(client, { waitForActive: false, maxWaitMs: 60_000, ...(cfg.ledger === undefined ? {} : { ledger: cfg.ledger }), ...cfg.options, ...(cfg.log ? { logger: pino({ level: cfg.log }, pino.destination({ fd: 2, sync: true })) } : {}) });
} catch (e) {
  calls.push({ at: 'construction', ...describe(e) });
}
function describe(e) {
  return {
    ok: false,
    name: e?.name,
    message: e?.message,
    ledgerConfigError: typeof ng.LedgerConfigError === 'function' && e instanceof ng.LedgerConfigError,
    configError: e instanceof ng.ConfigError,
    novaGuardError: e instanceof ng.NovaGuardError,
    reason: e?.reason,
    kind: e?.kind,
    cause: e?.cause === undefined ? undefined : String(e.cause?.message ?? e.cause),
  };
}
const ops = cfg.op === 'two-creates' ? ['create', 'create'] : [cfg.op ?? 'create'];
const one = async (op, i) => {
  const t0 = performance.now();
  try {
    const v = op === 'headroom' ? await guard.headroom() : await guard.createServer({ name: `c${i}`, flavorRef: '2', imageRef: 'img', networks: 'none' });
    return { ok: true, op, ms: Math.round(performance.now() - t0), id: v.id };
  } catch (e) {
    return { op, ms: Math.round(performance.now() - t0), ...describe(e) };
  }
};
if (guard) {
  // `concurrent`: the calls at once (one guard, as a worker pool); else one after the other
  if (cfg.concurrent) calls.push(...(await Promise.all(ops.map((op, i) => one(op, i)))));
  else for (const [i, op] of ops.entries()) calls.push(await one(op, i));
}
await new Promise((r) => setTimeout(r, 50)); // warnings are emitted on the next tick
const out = { calls, stats: guard ? { ...guard.stats } : undefined, warnings, posts: nova.requests.filter((r) => r.method === 'POST').length };
// `noClose`: the guard is left as a caller that saw the error might leave it (no close()): the
// process must end on its own, nothing of the ledger left running.
if (!cfg.noClose) await guard?.close();
await nova.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
if (!cfg.noClose) process.exit(0);
