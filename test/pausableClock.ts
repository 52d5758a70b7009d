// A clock whose timers can be frozen: a stopped or paused process, as its timers see it (the fleet
// watcher's lease lapses while its holder is paused, and its late publications must be refused).
import { systemClock, type Clock, type TimerHandle } from '../src/core/clock.js';

/** The system clock, with `pause()` holding every timer that fires until `resume()`. */
export function pausableClock(): Clock & { pause(): void; resume(): void } {
  let paused = false;
  const held: Array<() => void> = [];
  return {
    ...systemClock,
    setTimeout: (fn: () => void, ms: number): TimerHandle =>
      systemClock.setTimeout(() => {
        if (paused) held.push(fn);
        else fn();
      }, ms),
    pause: () => void (paused = true),
    resume: () => {
      paused = false;
      for (const fn of held.splice(0)) fn();
    },
  };
}
