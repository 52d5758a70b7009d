/**
 * Model-based differential test of the three quota ledgers: random command sequences (join, a
 * `/limits` reading of the quota Nova leaves, admission as the guard makes it, renew, bind, release
 * `'counted'` / `'not-created'` (also while a reading is in flight), leave, a lease lost by time
 * passing, a holder crashing, a second holder on the same store, `claimAnyway`, usage outside the
 * ledger, the store emptied under its holders (Redis restarted empty; skipped where a store cannot
 * be: in-process, SQLite), a step of the wall clock by hours either way) are played on each backend and on the reference model (`model.ts`); every admission must
 * decide as the model does, with the same `inFlight` and `ahead`, every renewal must answer as the
 * model does, every fencing token must be above all earlier ones, and no admission may take more
 * than the quota. Real parts: a SQLite file, a redis-server this file starts (the Lua scripts and
 * the SQL run through the ledger objects).
 *
 * Runs per backend: `NOVA_GUARD_DIFF_RUNS` (default 300; `.ci/run` may ask for 1000+).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from './backends.js';
import { Divergence, exercised, offByOne, runSequence, sequenceArb } from './sequences.js';

const RUNS = Math.max(1, Number(process.env.NOVA_GUARD_DIFF_RUNS ?? '') || 300);
const SEED = process.env.NOVA_GUARD_DIFF_SEED === undefined ? undefined : Number(process.env.NOVA_GUARD_DIFF_SEED);

describe.each(backends())('differential: $name ledger against the model', (backend) => {
  const run = backend.skip === undefined ? describe : describe.skip;
  if (backend.skip !== undefined) console.warn(`differential ${backend.name}: skipped: ${backend.skip}`);
  run(backend.skip ?? 'on a real store', () => {
    beforeAll(() => backend.setUp());
    afterAll(() => backend.tearDown());

    it(`every admission decides as the model, ${RUNS} sequences`, { timeout: 600_000 }, async () => {
      const started = performance.now();
      for (const k of Object.keys(exercised) as Array<keyof typeof exercised>) exercised[k] = 0;
      await fc.assert(
        fc.asyncProperty(sequenceArb(), async (seq) => {
          const store = await backend.store();
          try {
            await runSequence(store, seq);
          } finally {
            await store.close();
          }
        }),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
      console.info(`differential ${backend.name}: ${RUNS} sequences in ${Math.round(performance.now() - started)} ms; exercised ${JSON.stringify(exercised)}`);
      // The sequences must reach the cases that matter, or a pass proves little.
      expect(exercised.admitted).toBeGreaterThan(0);
      expect(exercised.shortBehindPlaces).toBeGreaterThan(0);
      expect(exercised.countedSubtracted).toBeGreaterThan(0);
      expect(exercised.lapses).toBeGreaterThan(0);
      // A wall-clock step while claims are live, with renewals, lapses or admissions after it.
      expect(exercised.clockStepsWithLiveClaims).toBeGreaterThan(0);
      expect(exercised.actedAfterClockStep).toBeGreaterThan(0);
      if (backend.cannotEmpty === undefined) {
        // A store emptied under its holders: claims dropped (only admitted), claims written back
        // (posting), admissions after it.
        expect(exercised.empties).toBeGreaterThan(0);
        expect(exercised.emptyDropped).toBeGreaterThan(0);
        expect(exercised.emptyRestored).toBeGreaterThan(0);
        expect(exercised.admittedAfterEmpty).toBeGreaterThan(0);
      } else {
        console.info(`differential ${backend.name}: ${exercised.emptySkipped} 'empty' commands skipped: ${backend.cannotEmpty}`);
        expect(exercised.empties).toBe(0);
      }
    });

    it('finds a planted off-by-one in admission (admits when needs <= headroom + 1)', { timeout: 120_000 }, async () => {
      let found: unknown;
      try {
        await fc.assert(
          fc.asyncProperty(sequenceArb(), async (seq) => {
            const store = await backend.store();
            try {
              await runSequence(store, seq, offByOne);
            } finally {
              await store.close();
            }
          }),
          { numRuns: 200, seed: 42, endOnFailure: true },
        );
      } catch (e) {
        found = e;
      }
      expect(found, 'the differential test passed on a ledger with a planted off-by-one').toBeInstanceOf(Error);
      const cause = (found as Error & { cause?: unknown }).cause;
      expect(cause).toBeInstanceOf(Divergence);
      expect(String((cause as Error).message)).toMatch(/admission of call#\d+: backend admitted, model refuses|took more than the quota/);
    });
  });
});
