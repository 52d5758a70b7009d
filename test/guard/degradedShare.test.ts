// The share rule of degraded mode (src/guard/degradedShare.ts): hosts counted from holder names,
// this process's part of the quota, and the verdict that lets a process run one create at a time
// even when its part is smaller than one create.
import { describe, expect, it } from 'vitest';
import { fleetOf, hostOf, partOf, ShareRule, shareVerdict } from '../../src/guard/degradedShare.js';

const none = { cores: 0, ramMiB: 0, instances: 0 };
const two = { cores: 2, ramMiB: 0, instances: 1 };

describe('hosts from holder names', () => {
  it('<hostname>:<pid> belongs to <hostname>; any other name is a host of its own', () => {
    expect(hostOf('ci-7:4242')).toBe('ci-7');
    expect(hostOf('ci-7.example.org:1')).toBe('ci-7.example.org');
    expect(hostOf('runner-3')).toBe('runner-3');
    expect(hostOf('a:b')).toBe('a:b');
    expect(hostOf(':12')).toBe(':12');
  });

  it('counts distinct hosts and the processes of this one (itself included when the store has not listed it)', () => {
    expect(fleetOf(['a:1', 'a:2', 'b:3', 'c'], 'a:1')).toEqual({ hosts: 3, processesOnHost: 2 });
    expect(fleetOf(['b:3'], 'a:9')).toEqual({ hosts: 2, processesOnHost: 1 });
    expect(fleetOf(['x', 'x'], 'x')).toEqual({ hosts: 1, processesOnHost: 2 });
  });
});

describe("this process's part of the quota", () => {
  it('is quota / hosts / processes of its host, per resource with a quota', () => {
    const absolute = { maxTotalCores: 40, totalCoresUsed: 0, maxTotalRAMSize: -1, maxTotalInstances: 10 };
    expect(partOf(absolute, { hosts: 4, processesOnHost: 2 })).toEqual({ cores: 5, instances: 1.25 });
  });
});

describe('the verdict', () => {
  const absolute = { maxTotalCores: 40, totalCoresUsed: 10, maxTotalInstances: -1, totalInstancesUsed: 5 };
  const fleet = { hosts: 4, processesOnHost: 1 }; // a part of 10 cores

  it('admits within the part when the fresh reading, minus its own claims in flight, leaves room', () => {
    expect(shareVerdict(absolute, fleet, two, none, { cores: 8, ramMiB: 0, instances: 4 }, false)).toEqual({ admits: true });
  });

  it('refuses past the part, with the room left as headroom', () => {
    const v = shareVerdict(absolute, fleet, two, none, { cores: 9, ramMiB: 0, instances: 4 }, false);
    expect(v).toMatchObject({ admits: false, shortfalls: [{ resource: 'cores', needed: 2, headroom: 1 }] });
  });

  it('refuses when the reading minus its claims in flight leaves no room, whatever the part', () => {
    const full = { ...absolute, totalCoresUsed: 39 };
    expect(shareVerdict(full, fleet, two, none, none, true)).toMatchObject({ admits: false, shortfalls: [{ resource: 'cores', headroom: 1 }] });
    expect(shareVerdict(absolute, fleet, two, { cores: 29, ramMiB: 0, instances: 1 }, { cores: 2, ramMiB: 0, instances: 1 }, false)).toMatchObject({ admits: false });
  });

  it('a part smaller than one create still lets a process that holds nothing run one create (speed, never jobs)', () => {
    const crowd = { hosts: 40, processesOnHost: 1 }; // a part of 1 core, creates of 2
    expect(shareVerdict(absolute, crowd, two, none, none, true)).toEqual({ admits: true });
    expect(shareVerdict(absolute, crowd, two, two, two, false)).toMatchObject({ admits: false });
  });
});

describe('what the rule remembers', () => {
  it('the servers this process made until they are freed, its unbound claims, and the fleet as its ledger last saw it', () => {
    let members: string[] = [];
    const rule = new ShareRule({ holder: 'a:1', members: () => members });
    expect(rule.fleet).toBeUndefined();
    members = ['a:1', 'b:2'];
    expect(rule.fleet).toEqual({ hosts: 2, processesOnHost: 1 });
    expect(rule.held([])).toEqual({ held: none, nothing: true });
    rule.hold('s1', two);
    rule.hold('s2', two);
    expect(rule.held([two])).toEqual({ held: { cores: 6, ramMiB: 0, instances: 3 }, nothing: false });
    rule.freed('s1');
    rule.freed('s2');
    expect(rule.held([])).toEqual({ held: none, nothing: true });
  });
});
