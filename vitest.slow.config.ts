import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { SLOW } from './vitest.slowFiles.js';

/**
 * `npm run test:slow`: the suites of many processes and real servers (a redis-server each, SQLite
 * shared by processes, copies of the shell worker), which `npm test` leaves out to stay quick.
 * `.ci/run` runs both. Its JSON report is test-results/slow.json. The rest is `npm test`'s set-up.
 */
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: SLOW,
    exclude: ['test/integration/**', 'node_modules/**'],
    // NOVA_GUARD_REPORT names another file (.ci/run's runs of the CLI's process suites on other Node.js lines).
    reporters: ['default', ['json', { outputFile: process.env['NOVA_GUARD_REPORT'] ?? 'test-results/slow.json' }]],
  },
});
