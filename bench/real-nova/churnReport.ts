/**
 * The churn's tables again from a results file (`bench/results/NAME.json` of `npm run bench:real-nova
 * -- --only churn`), with the figures computed afresh from the raw job times and rows it keeps:
 *
 *   node build/bench/real-nova/churnReport.js bench/results/NAME.json
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { analyseChurn, boundFields } from './churnAnalysis.js';
import type { RealChurnResult } from './churn.js';
import { churnLagTable, churnSpread, churnTable } from './churnTables.js';

const file = process.argv[2];
if (!file) throw new Error('usage: churnReport.js RESULTS.json');
const out = JSON.parse(readFileSync(file, 'utf8')) as { churn?: RealChurnResult };
const r = out.churn;
if (!r) throw new Error(`${file} has no churn results`);
for (const row of r.rows) {
  if (!row.raw) continue;
  const a = analyseChurn(row.raw.reports, new Map(row.raw.rows.map((x) => [x.uuid, x])), row.requestKinds, {
    quotaCores: r.config.quotaCores,
    coresPerJob: r.config.coresPerJob,
    jobs: row.jobs,
    waitsFor404: row.policy.startsWith('nova-guard'),
  });
  Object.assign(row, boundFields(a, row.makespanMs));
}
console.log(`${r.note}\n`);
console.log(churnTable(r) + '\n');
console.log(churnLagTable(r) + '\n');
console.log(churnSpread(r) + '\n');
