/**
 * Parser for every shape of quota message Nova (and Neutron through Nova) has sent.
 *
 * Sources: `nova/exception.py` (`TooManyInstances`, `QuotaError`, `PortLimitExceeded`),
 * `nova/compute/utils.py` `get_over_quota_detail`, oslo.limit `ProjectOverLimit`, and the pre-Liberty
 * form (before nova commit 79fe4d8e07).
 *
 * @module
 */

/** One over-quota resource parsed from Nova's message. Names are Nova's: `cores`, `ram`, `instances`. */
export interface QuotaResource {
  /** Resource name as Nova spells it (`cores`, `ram` in MiB, `instances`, ...). */
  name: string;
  /** What the request asked for (for `instances` the upper bound of `min-max`). */
  requested: number;
  /** What Nova counted as already used (not including the request). */
  used: number;
  /** The limit. */
  allowed: number;
}

/** The result of {@link parseQuotaMessage}. */
export interface ParsedQuotaMessage {
  /** Which message shape matched. */
  shape: 'legacy' | 'pre-liberty' | 'unified-limits' | 'ports' | 'bare' | 'server-group' | 'other-quota';
  /** Resources with numbers, where the message carries them (empty for `ports`, `bare`, ...). */
  resources: QuotaResource[];
  /** True when some resource asks for more than its limit: waiting cannot help. */
  permanent: boolean;
  /**
   * The service whose quota it is: `compute` (Nova's cores, RAM, instances, server groups), `network`
   * (Neutron ports, floating IPs, through Nova), `volume` (Cinder volumes and gigabytes, often as a
   * build fault), or `unknown`.
   */
  service: 'compute' | 'network' | 'volume' | 'unknown';
}

const LEGACY =
  /Quota exceeded for ([a-z_, ]+): Requested ([\d, -]+), but already used ([\d, ]+) of ([\d, ]+) ([a-z_, ]+)/i;
const PRE_LIBERTY = /Quota exceeded for ([a-z_,]+): Requested (\d+), but already used (\d+) of (\d+) ([a-z_]+)/i;
const UNIFIED = /is over a limit for \[(.*)\]/i;
const UNIFIED_ITEM = /Resource ([\w:]+) is over limit of (-?\d+) due to current usage (\d+) and delta (\d+)/gi;

const UNIFIED_NAMES: Record<string, string> = {
  'class:VCPU': 'cores',
  'class:MEMORY_MB': 'ram',
  servers: 'instances',
};

/**
 * The whole numbers of a comma-separated list (`"2, 2048"`, `"1-3"` for min-max instance counts,
 * whose upper bound is what Nova checks first); undefined when any item is not one (`"1 000"`,
 * `"2.5"`, `"-2"`): a message nova-guard cannot read never yields NaN numbers.
 */
function splitNumbers(text: string): number[] | undefined {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const out: number[] = [];
  for (const item of items) {
    const m = /^(?:\d+-)?(\d+)$/.exec(item);
    if (!m) return undefined;
    out.push(Number(m[1]));
  }
  return out;
}

function isPermanent(resources: QuotaResource[]): boolean {
  return resources.some((r) => r.allowed >= 0 && r.requested > r.allowed);
}

/**
 * Unified limits: a limit of 0 with usage above it is a resource with no registered limit (Keystone
 * answers 0 for it), not a project with no room: unknown, never permanent.
 */
function isPermanentUnified(resources: QuotaResource[]): boolean {
  return isPermanent(resources.filter((r) => !(r.allowed === 0 && r.used > 0)));
}

/** The service a quota message is about. */
function serviceOf(message: string, fallback: ParsedQuotaMessage['service']): ParsedQuotaMessage['service'] {
  if (/\bports?\b|floating ?ips?\b|floatingip|\bnetworks?\b|\bsecurity.?groups?\b/i.test(message)) return 'network';
  if (/\bvolumes?\b|gigabytes|snapshots?\b|VolumeSize|backup/i.test(message)) return 'volume';
  return fallback;
}

/**
 * Recognise a quota message and parse its numbers. Returns `undefined` for any message that is not a
 * quota message (a policy denial, an HTML page, ...), which callers must never retry as quota.
 *
 * Shapes recognised:
 * - legacy (Liberty and later): `Quota exceeded for cores, ram: Requested 2, 2048, but already used 2, 2048 of 1, 2304 cores, ram`
 * - pre-Liberty: `Quota exceeded for cores,instances: Requested 2, but already used 9 of 10 cores`
 * - unified limits: `Project <id> is over a limit for [Resource class:VCPU is over limit of 515 due to current usage 514 and delta 2]`
 * - Neutron ports through Nova: `Maximum number of ports exceeded`
 * - bare: `Quota exceeded: code=InstanceLimitExceeded`, `Quota exceeded, too many servers in group`
 *
 * @param message - Nova's fault message (the `message` of the error body, or a server's `fault.message`).
 */
export function parseQuotaMessage(message: string | undefined | null): ParsedQuotaMessage | undefined {
  if (!message) return undefined;
  const legacy = LEGACY.exec(message);
  if (legacy) {
    const names = legacy[1]!.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
    const req = splitNumbers(legacy[2]!) ?? [];
    const used = splitNumbers(legacy[3]!) ?? [];
    const allowed = splitNumbers(legacy[4]!) ?? [];
    if (names.length > 1 && req.length === 1 && used.length === 1 && allowed.length >= 1) {
      // Pre-Liberty: several names joined by ',' but only the first resource's numbers.
      const resources = [{ name: names[0]!, requested: req[0]!, used: used[0]!, allowed: allowed[0]! }];
      return { shape: 'pre-liberty', resources, permanent: isPermanent(resources), service: 'compute' };
    }
    if (req.length === names.length && used.length === names.length && allowed.length === names.length) {
      const resources = names.map((name, i) => ({
        name,
        requested: req[i]!,
        used: used[i]!,
        allowed: allowed[i]!,
      }));
      return { shape: 'legacy', resources, permanent: isPermanent(resources), service: 'compute' };
    }
  }
  const pre = PRE_LIBERTY.exec(message);
  if (pre) {
    const resources = [
      { name: pre[1]!.split(',')[0]!.trim().toLowerCase(), requested: Number(pre[2]), used: Number(pre[3]), allowed: Number(pre[4]) },
    ];
    return { shape: 'pre-liberty', resources, permanent: isPermanent(resources), service: 'compute' };
  }
  const unified = UNIFIED.exec(message);
  if (unified) {
    const resources: QuotaResource[] = [];
    for (const m of unified[1]!.matchAll(UNIFIED_ITEM)) {
      resources.push({
        name: UNIFIED_NAMES[m[1]!] ?? m[1]!,
        requested: Number(m[4]),
        used: Number(m[3]),
        allowed: Number(m[2]),
      });
    }
    return { shape: 'unified-limits', resources, permanent: isPermanentUnified(resources), service: 'compute' };
  }
  if (/Maximum number of ports exceeded/i.test(message)) {
    return { shape: 'ports', resources: [], permanent: false, service: 'network' };
  }
  if (/too many servers in group/i.test(message)) {
    return { shape: 'server-group', resources: [], permanent: false, service: 'compute' };
  }
  if (/Maximum number of floating ?IP'?s exceeded|No more floating IPs? (?:available )?in (?:the )?pool/i.test(message)) {
    return { shape: 'other-quota', resources: [], permanent: false, service: 'network' };
  }
  if (/^\s*Quota exceeded\b/i.test(message) || /\bQuota exceeded\b/i.test(message)) {
    return { shape: 'bare', resources: [], permanent: false, service: serviceOf(message, 'compute') };
  }
  if (/\bexceed(?:s|ed)?\b.*\bquota\b|\bquota\b.*\bexceed/i.test(message)) {
    // Build-aborted faults naming another service's quota, e.g. "... exceeds allowed gigabytes
    // quota" (nodepool's 'exceeds' + 'quota' rule) or Cinder's "... exceeded for quota 'volumes'".
    return { shape: 'other-quota', resources: [], permanent: false, service: serviceOf(message, 'unknown') };
  }
  return undefined;
}
