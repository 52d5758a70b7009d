/**
 * vitest configuration of the integration and fidelity suites (`test/integration/`), which run against a
 * real Nova: `npm run test:real-nova` starts one (scripts/real-nova/) or uses the one named by
 * NOVA_ENDPOINT and NOVA_TOKEN. Files run one at a time: they share one compute host and, under
 * Keystone, one project.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    alias: {
      'nova-guard/testing': fileURLToPath(new URL('./src/testing/index.ts', import.meta.url)),
      'nova-guard': fileURLToPath(new URL('./src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/integration/**/*.test.ts'],
    globalSetup: ['test/integration/globalSetup.ts'],
    fileParallelism: false,
    // Real creates and deletes take about a second each; a quota test makes several.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // .ci/run counts its closing "N passed, N failed" line from this report (scripts/count-results.mjs);
    // NOVA_GUARD_REPORT names another file for a second run (the Keystone-mode run of .ci/run).
    reporters: ['default', ['json', { outputFile: process.env['NOVA_GUARD_REPORT'] ?? 'test-results/integration.json' }]],
  },
});
