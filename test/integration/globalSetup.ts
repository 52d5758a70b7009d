/**
 * Runs once before the integration suites: refuses to run without a real Nova (the suites are never
 * skipped silently) and prints which Nova they run against.
 */
import { realNova } from './support/realNova.js';

export default async function setup(): Promise<void> {
  const nova = realNova();
  let version: { version?: { version?: string; min_version?: string } };
  try {
    const res = await fetch(`${nova.endpoint.replace(/\/+$/, '')}/`, { signal: AbortSignal.timeout(10_000) });
    version = (await res.json()) as typeof version;
  } catch (error) {
    throw new Error(`No Nova answers at NOVA_ENDPOINT=${nova.endpoint}: ${String(error)}. Start one with scripts/real-nova/start.sh.`, {
      cause: error,
    });
  }
  const v = version.version;
  console.log(
    `[real-nova] ${nova.endpoint}: microversions ${v?.min_version ?? '?'}..${v?.version ?? '?'}, auth ${nova.auth}, project ${nova.project}`,
  );
}
