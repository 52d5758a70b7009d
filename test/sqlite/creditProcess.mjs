// One process of test/sqlite/creditChurn.test.ts: a NovaClient on a FakeNova (HTTP), a
// SqliteQuotaLedger on the test's directory and a QuotaGuard on it; beside them a "reaper" (a second
// client, ledger object and guard of its own, on the same file) that deletes some of the worker's
// servers before the worker does. The worker runs `jobs` jobs: a guarded create, a short hold, then
// its delete waited to the 404; a reaped server's delete by the worker comes after its next create
// (Nova then answers the worker's DELETE 404: already gone). Answers with its outcomes and counters.
// Imports the built package (dist/, through the package's own name). Config: JSON in argv[2].
import process from 'node:process';
import { setTimeout } from 'node:timers';
import { NovaClient, QuotaGuard } from 'nova-guard';
import { SqliteQuotaLedger } from 'nova-guard/sqlite';

const cfg = JSON.parse(process.argv[2]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const open = (holder) => {
  const client = new NovaClient({ endpoint: cfg.endpoint, token: `admin:${cfg.projectId}`, microversion: '2.79' });
  const ledger = new SqliteQuotaLedger({ endpoint: cfg.endpoint, projectId: cfg.projectId, path: cfg.dir, holder });
  const guard = new QuotaGuard(client, { ledger, activeIntervalMs: 20, minDelayMs: 10, baseDelayMs: 20, maxDelayMs: 200, maxWaitMs: 60_000 });
  return { client, ledger, guard };
};
const worker = open(cfg.holder);
const reaper = open(`${cfg.holder}-reaper`);
const outcomes = [];
const errors = [];
const del = { intervalMs: 20, timeoutMs: 30_000, wait: true };
let pending;
try {
  for (let j = 0; j < cfg.jobs; j++) {
    const server = await worker.guard.createServer({ name: `${cfg.holder}-${j}`, flavorRef: '2', imageRef: 'img', networks: 'none' });
    if (pending) outcomes.push((await worker.client.deleteServer(pending, del)).outcome);
    pending = undefined;
    await sleep(cfg.holdMs + Math.floor(Math.random() * cfg.holdMs));
    if (j % cfg.reapEvery === cfg.reapEvery - 1) {
      await reaper.client.deleteServer(server.id, del);
      pending = server.id;
    } else {
      outcomes.push((await worker.client.deleteServer(server.id, del)).outcome);
    }
  }
  if (pending) outcomes.push((await worker.client.deleteServer(pending, del)).outcome);
} catch (e) {
  errors.push(`${e?.name}: ${e?.message}`);
}
const stats = { quota403s: worker.guard.stats.quota403s };
for (const p of [worker, reaper]) {
  await p.guard.close();
  await p.ledger.close();
}
process.send?.({ result: { outcomes, errors, stats } }, () => process.exit(0));
