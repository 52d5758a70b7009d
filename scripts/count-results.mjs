/* global process, console */
// Prints CI's closing line "N passed, N failed" (and skipped) from vitest JSON reports.
// Usage: node scripts/count-results.mjs test-results/unit.json [more.json ...]
// A test file that failed without a failed test (an import error, a crash in a hook) counts as one
// failure, and so does a missing or unreadable report, so a crashed run can never look green.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  try {
    const report = JSON.parse(readFileSync(file, 'utf8'));
    for (const suite of report.testResults ?? []) {
      const tests = suite.assertionResults ?? [];
      const failedTests = tests.filter((t) => t.status === 'failed').length;
      passed += tests.filter((t) => t.status === 'passed').length;
      skipped += tests.filter((t) => t.status === 'pending' || t.status === 'skipped' || t.status === 'todo').length;
      failed += failedTests > 0 ? failedTests : suite.status === 'failed' ? 1 : 0;
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
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;
