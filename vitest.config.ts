import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SLOW } from './vitest.slowFiles.js';

export default defineConfig({
  resolve: {
    alias: {
      'nova-guard/redis': fileURLToPath(new URL('./src/redis/index.ts', import.meta.url)),
      'nova-guard/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)),
      'nova-guard': fileURLToPath(new URL('./src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The JSON report is what .ci/run counts its closing "N passed, N failed" line from.
    // NOVA_GUARD_REPORT names another file (a focused run of .ci/run that must not overwrite the main report).
    reporters: ['default', ['json', { outputFile: process.env['NOVA_GUARD_REPORT'] ?? 'test-results/unit.json' }]],
    // The suites of many processes and real servers run in `npm run test:slow` (vitest.slow.config.ts).
    exclude: ['test/integration/**', 'node_modules/**', ...SLOW],
    // Every file gets real timers back and its fakes closed after each test (test/cleanup.ts).
    setupFiles: ['test/setup.ts'],
    // The files of a worker share one module graph: importing src/ and its dependencies once per
    // worker instead of once per file saves most of the suite's time. State lives on the objects a
    // test makes (clients, fakes), hooks undo what a test changes (timers, spies, env), and
    // spies are restored before every test.
    isolate: false,
    restoreMocks: true,
    testTimeout: 20000,
    hookTimeout: 20000,
  },
});
