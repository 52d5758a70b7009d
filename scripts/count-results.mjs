/* global process, console */
// Prints CI's closing line "N passed, N failed" (and skipped) from vitest JSON reports.
// Usage: node scripts/count-results.mjs test-results/unit.json [more.json ...]
// A test file that failed without a failed test (an import error, a crash in a hook) counts as one
// failure, and so does a missing or unreadable report, so a crashed run can never look green.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
for (const file of process.argv.slice(2)) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    for (const suite of report.testResults ?? []) {
      const tests = suite.assertionResults ?? [];
      const failedTests = tests.filter((t) => t.status === 'failed').length;
      passed += tests.filter((t) => t.status === 'passed').length;
      skipped += tests.filter((t) => t.status === 'pending' || t.status === 'skipped' || t.status === 'todo').length;
      failed += failedTests > 0 ? failedTests : suite.status === 'failed' ? 1 : 0;
      const where = `${file}: ${String(suite.name ?? '').replace(/^.*?\/test\//, 'test/')}`;
      for (const t of tests.filter((t) => t.status === 'failed')) {
        const why = String(t.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300);
        failures.push(`${where} > ${t.fullName ?? t.title}${why ? `\n    ${why}` : ''}`);
      }
      if (failedTests === 0 && suite.status === 'failed') {
        failures.push(`${where} (the file failed outside its tests: ${String(suite.message ?? '').split('\n')[0].slice(0, 300)})`);
      }
    }
    if ((report.testResults ?? []).length === 0) {
      console.error(`count-results: ${file} holds no test results`);
      failed += 1;
    }
  } catch (e) {
    console.error(`count-results: cannot read ${file}: ${e.message}`);
    failed += 1;
  }
}
// The failed tests are named just above the closing line, so that the tail of a long CI log says which.
if (failures.length > 0) console.log(`Failed:\n${failures.map((f) => `  ${f}`).join('\n')}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
