/**
 * A {@link Reaper}'s state in a JSON file, so a cron job can run one pass per invocation and still
 * honour the two-pass rule: read the state, run a pass, write the state back.
 *
 * @module
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { ConfigError, ValidationError } from '../errors/index.js';
import { checkState } from './reaper.js';
import { emptyReaperState, type ReaperState } from './plan.js';

/**
 * Read a reaper state file. A missing file gives a fresh state (the first run of a cron job).
 * @throws {@link ConfigError} (naming the file) when it cannot be read or is not a reaper state.
 */
export async function readReaperState(file: string): Promise<ReaperState> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyReaperState();
    throw new ConfigError(`cannot read reaper state file ${file}: ${(e as Error).message}`, { file, cause: e });
  }
  try {
    const state: unknown = JSON.parse(text);
    checkState(state);
    return state;
  } catch (e) {
    const why = e instanceof ValidationError || e instanceof SyntaxError ? e.message : String(e);
    throw new ConfigError(`reaper state file ${file} is not a reaper state: ${why}`, { file, cause: e });
  }
}

/**
 * Write a reaper state file atomically (a temporary file renamed over it), so a crash mid-write never
 * leaves half a state.
 * @throws {@link ConfigError} (naming the file) when it cannot be written.
 */
export async function writeReaperState(file: string, state: ReaperState): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, JSON.stringify(state, null, 2) + '\n', 'utf8');
    await rename(tmp, file);
  } catch (e) {
    throw new ConfigError(`cannot write reaper state file ${file}: ${(e as Error).message}`, { file, cause: e });
  }
}
