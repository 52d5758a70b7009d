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
    reporters: ['default', ['json', { outputFile: 'test-results/slow.json' }]],
  },
});
