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
    include: ['test/**/*.test.ts'],
    // The JSON report is what .ci/run counts its closing "N passed, N failed" line from.
    reporters: ['default', ['json', { outputFile: 'test-results/unit.json' }]],
    exclude: ['test/integration/**', 'node_modules/**'],
    testTimeout: 20000,
    hookTimeout: 20000,
  },
});
