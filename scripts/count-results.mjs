// Prints CI's closing line "N passed, N failed" (and skipped) from vitest JSON reports.
// Usage: node scripts/count-results.mjs test-results/unit.json [more.json ...]
// A missing or unreadable report counts as one failure, so a crashed run can never look green.
import { readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8'));
    passed += r.numPassedTests ?? 0;
    failed += (r.numFailedTests ?? 0) + (r.numFailedTestSuites ?? 0) - countSuitesWithFailedTests(r);
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  } catch (e) {
    console.error(`count-results: cannot read ${file}: ${e.message}`);
    failed += 1;
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed > 0 ? 1 : 0;

// A suite counts as failed when it has failed tests; only suites that failed without a failed test
// (an import error, a crash in a hook) add to the failure count on their own.
function countSuitesWithFailedTests(r) {
  return (r.testResults ?? []).filter(
    (s) => s.status === 'failed' && (s.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
}
