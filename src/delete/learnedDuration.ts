/**
 * A duration this cloud takes, learned from what one delete engine has seen (how long its deletes
 * take from the DELETE to Nova's 404, how long its builds take to leave BUILD): a quantile of the
 * last {@link LEARNED_WINDOW} samples. Until {@link MIN_SAMPLES} samples are in, it knows nothing
 * (`ms` is undefined) and the engine looks as it did without it (`lookPlan.ts`): that is the prior.
 *
 * @module
 */

/** Samples kept (the most recent ones): a cloud's speed changes with its load over minutes. */
export const LEARNED_WINDOW = 32;

/** Samples needed before the estimate is used. */
export const MIN_SAMPLES = 3;

/** A duration learned from samples (see the module); every value in ms. */
export class LearnedDuration {
  readonly #samples: number[] = [];

  /** @param quantile - Which quantile of the samples {@link ms} gives, in [0, 1] (0.25: the lower quartile). */
  constructor(readonly quantile: number) {}

  /** Samples kept now. */
  get samples(): number {
    return this.#samples.length;
  }

  /** Add one measured duration, in ms (a negative or non-finite one is ignored). */
  add(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.#samples.push(ms);
    if (this.#samples.length > LEARNED_WINDOW) this.#samples.shift();
  }

  /** The {@link quantile} of the kept samples, in ms; undefined before {@link MIN_SAMPLES} samples. */
  get ms(): number | undefined {
    if (this.#samples.length < MIN_SAMPLES) return undefined;
    const sorted = [...this.#samples].sort((a, b) => a - b);
    return sorted[Math.floor(this.quantile * (sorted.length - 1))];
  }
}
