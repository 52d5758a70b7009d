/**
 * `npm run bench:real-nova`: nova-guard beside the real peers on the real-Nova harness (Nova 26.2, fake
 * virt driver, noauth2), in one run:
 * - delete-and-wait of 1, 10 and 40 servers: nova-guard (library and CLI), `openstack server delete
 *   --wait`, openstacksdk `delete_server` + `wait_for_delete` (deleteWait.ts);
 * - the churn with one process per worker (churn.ts, churnWorker.ts);
 * - `--only cli-sqlite` (not in the default run): shell workers of separate CLI processes sharing the
 *   SQLite ledger (cliChurn.ts), `--runs` runs.
 * Results: `bench/results/real-nova.json` and `real-nova.svg`, and the tables on stdout. Run through
 * `bench/real-nova/run.sh` (it installs the Python clients when missing and starts the harness).
 * `--only delete,churn`, `--sizes 1,10,40`, `--policies naive,autopkgtest,nova-guard`.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { markdownTable } from '../table.js';
import { CHURN_POLICIES, runRealChurn, type ChurnPolicy, type RealChurnResult } from './churn.js';
import { churnLagTable, churnSpread, churnTable } from './churnTables.js';
import { CLI_CHURN, cliChurnNote, runCliChurn, type CliChurnRow } from './cliChurn.js';
import { DELETE_TOOLS, runDeleteWait, type DeleteRow, type DeleteTool } from './deleteWait.js';
import { harness } from './harness.js';
import { drawRealNova } from './plot.js';

const flags = new Command('bench:real-nova')
  .option('--only <names>', 'comma-separated: delete,churn,cli-sqlite', 'delete,churn')
  .option('--runs <n>', 'runs of churn (policies interleaved) and of cli-sqlite', '3')
  .option('--sizes <n>', 'delete-and-wait fleet sizes', '1,10,40')
  .option('--tools <names>', `delete tools (${DELETE_TOOLS.join(', ')})`, DELETE_TOOLS.join(','))
  .option('--policies <names>', `churn policies (${CHURN_POLICIES.join(', ')})`, CHURN_POLICIES.join(','))
  .option('--ledger <url>', 'Redis URL for the nova-guard-redis policy')
  .option('--out <name>', 'results file name under bench/results/', 'real-nova')
  .parse()
  .opts<{ only: string; runs: string; sizes: string; tools: string; policies: string; ledger?: string; out: string }>();

const list = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);

function deleteTable(rows: DeleteRow[]): string {
  const kinds = (r: DeleteRow): string =>
    Object.entries(r.requestKinds)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ');
  return markdownTable(
    ['tool', 'servers', 'wall s', 'requests', 'last 404 at s', 'lag after last 404 s', 'reported before 404', 'outcome', 'requests by kind'],
    rows.map((r) => [r.tool, r.servers, r.wallMs / 1000, r.requests, r.lastGoneMs / 1000, r.lagAfterLast404Ms / 1000, r.reportedBefore404, r.outcome, kinds(r)]),
  );
}

function cliChurnTable(rows: CliChurnRow[]): string {
  return markdownTable(
    ['run', 'jobs', 'failed jobs', 'quota 403s (nova-api)', 'quota 403s (CLI)', 'servers created', 'ERROR servers', 'servers left', 'peak cores', 'makespan s', 'whole-job bound s', 'fluid bound s', 'makespan / bound', 'requests', 'requests per job'],
    rows.map((x) => [x.run, x.jobs, x.failedJobs, x.quota403s, x.quota403sSeenByCli, x.serversCreated, x.errorServers, x.serversLeft, x.peakCores, x.makespanMs / 1000, x.wholeJobBoundMs / 1000, x.fluidBoundMs / 1000, x.makespanOverBound, x.requests, x.requestsPerJob]),
  );
}

async function main(): Promise<void> {
  const only = new Set(list(flags.only));
  const nova = harness();
  const resultsDir = new URL('../../../bench/results/', import.meta.url);
  mkdirSync(resultsDir, { recursive: true });
  const started = performance.now();
  const out: { nova: string; startedAt: string; deleteWait?: DeleteRow[]; churn?: RealChurnResult; cliSqlite?: { note: string; rows: CliChurnRow[] }; seconds?: number } = {
    nova: `Nova 26.2 (Debian 12 python3-nova), fake virt driver, noauth2, ${nova.endpoint}`,
    startedAt: new Date().toISOString(),
  };
  console.log(`# nova-guard on a real Nova, beside the real peers\n\n${out.nova}\n`);
  if (only.has('delete')) {
    const sizes = list(flags.sizes).map(Number);
    const rows = await runDeleteWait(nova, sizes, list(flags.tools) as DeleteTool[]);
    out.deleteWait = rows;
    console.log(`## Delete-and-wait (each tool with its defaults; 1-vCPU servers, all ACTIVE)\n`);
    console.log(
      'wall: tool start (process spawn for the CLIs) to its return. requests: lines of nova-api\'s access log between the marks. ' +
        'last 404: the last server row deleted (the harness database, every 50 ms). lag: return minus that. ' +
        'reported before 404: servers reported gone while their row still existed on a later look.\n',
    );
    console.log(deleteTable(rows) + '\n');
  }
  if (only.has('churn')) {
    const r = await runRealChurn(nova, list(flags.policies) as ChurnPolicy[], flags.ledger, Number(flags.runs));
    out.churn = r;
    console.log(`## Churn: one process per worker\n`);
    console.log(`${r.note}\n`);
    console.log(churnTable(r) + '\n');
    console.log(`Where the makespan goes (lags: median / max per job, and cores x lag / quota summed as makespan seconds; see churnAnalysis.ts), and requests per job by kind (nova-api's log):\n`);
    console.log(churnLagTable(r) + '\n');
    console.log(`Over the runs (median, min–max):\n`);
    console.log(churnSpread(r) + '\n');
    for (const x of r.rows) if (x.errors.length > 0) console.log(`${x.policy} errors: ${x.errors.join('; ')}\n`);
  }
  if (only.has('cli-sqlite')) {
    const rows: CliChurnRow[] = [];
    for (let i = 1; i <= Number(flags.runs); i++) rows.push(await runCliChurn(nova, i, CLI_CHURN));
    out.cliSqlite = { note: cliChurnNote(CLI_CHURN), rows };
    console.log(`## Shell workers: separate CLI processes, one SQLite ledger\n`);
    console.log(`${out.cliSqlite.note}\n`);
    console.log(cliChurnTable(rows) + '\n');
    for (const x of rows) if (x.errors.length > 0) console.log(`run ${x.run} errors: ${x.errors.join('; ')}\n`);
  }
  out.seconds = Math.round((performance.now() - started) / 1000);
  writeFileSync(new URL(`${flags.out}.json`, resultsDir), JSON.stringify(out, null, 2) + '\n');
  const svg = await drawRealNova(new URL(`${flags.out}.svg`, resultsDir), out.deleteWait, out.churn?.rows);
  console.log(`Results: bench/results/${flags.out}.json${svg ? `, bench/results/${flags.out}.svg` : ''} (${out.seconds} s)`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
