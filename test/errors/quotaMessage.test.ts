/**
 * parseQuotaMessage: every shape of quota message Nova (and Neutron through Nova) has sent, the
 * permanence rule, and the messages that must NOT be taken as quota (docs/field-cases.md: "Rate limits and the other 413s", "Many ways to say over quota", "Forbidden, but not by quota").
 */
import { describe, expect, it } from 'vitest';
import { parseQuotaMessage } from '../../src/errors/quotaMessage.js';

describe('parseQuotaMessage: many ways to say over quota', () => {
  it('single resource, transient', () => {
    expect(parseQuotaMessage('Quota exceeded for cores: Requested 2, but already used 514 of 515 cores')).toEqual({
      shape: 'legacy',
      resources: [{ name: 'cores', requested: 2, used: 514, allowed: 515 }],
      permanent: false, service: 'compute',
    });
  });

  it('several resources, permanent (32 > 20)', () => {
    expect(
      parseQuotaMessage('Quota exceeded for cores, ram: Requested 32, 98304, but already used 0, 0 of 20, 51200 cores, ram'),
    ).toEqual({
      shape: 'legacy',
      resources: [
        { name: 'cores', requested: 32, used: 0, allowed: 20 },
        { name: 'ram', requested: 98304, used: 0, allowed: 51200 },
      ],
      permanent: true, service: 'compute',
    });
  });

  it('instances, transient', () => {
    expect(parseQuotaMessage('Quota exceeded for instances: Requested 1, but already used 10 of 10 instances')).toEqual({
      shape: 'legacy',
      resources: [{ name: 'instances', requested: 1, used: 10, allowed: 10 }],
      permanent: false, service: 'compute',
    });
  });

  it('Neutron ports through Nova: quota, no numbers, transient', () => {
    expect(parseQuotaMessage('Maximum number of ports exceeded')).toEqual({ shape: 'ports', resources: [], permanent: false, service: 'network' });
  });

  it('bare QuotaError: quota, no numbers, transient', () => {
    expect(parseQuotaMessage('Quota exceeded: code=InstanceLimitExceeded')).toEqual({ shape: 'bare', resources: [], permanent: false, service: 'compute' });
  });
});

describe('parseQuotaMessage: the other shapes', () => {
  it('real Nova 26.2 multi-resource message (docs/nova-behaviour.md#quota-messages): cores over its limit is permanent', () => {
    // "Requested 2 ... of 1 cores": 2 > 1, the request can never fit.
    expect(parseQuotaMessage('Quota exceeded for cores, ram: Requested 2, 2048, but already used 2, 2048 of 1, 2304 cores, ram')).toEqual({
      shape: 'legacy',
      resources: [
        { name: 'cores', requested: 2, used: 2, allowed: 1 },
        { name: 'ram', requested: 2048, used: 2048, allowed: 2304 },
      ],
      permanent: true, service: 'compute',
    });
  });

  it('three resources in Nova order, with min-max instances (upper bound taken)', () => {
    expect(
      parseQuotaMessage(
        'Quota exceeded for cores, instances, ram: Requested 6, 1-3, 6144, but already used 18, 9, 49152 of 20, 10, 51200 cores, instances, ram',
      ),
    ).toEqual({
      shape: 'legacy',
      resources: [
        { name: 'cores', requested: 6, used: 18, allowed: 20 },
        { name: 'instances', requested: 3, used: 9, allowed: 10 },
        { name: 'ram', requested: 6144, used: 49152, allowed: 51200 },
      ],
      permanent: false, service: 'compute',
    });
  });

  it('pre-Liberty: names joined by "," and only the first resource numbers', () => {
    expect(parseQuotaMessage('Quota exceeded for cores,instances: Requested 2, but already used 9 of 10 cores')).toEqual({
      shape: 'pre-liberty',
      resources: [{ name: 'cores', requested: 2, used: 9, allowed: 10 }],
      permanent: false, service: 'compute',
    });
  });

  it('unified limits (oslo.limit ProjectOverLimit), one resource', () => {
    expect(
      parseQuotaMessage(
        'Project 6a3c1b0f9e2d4c8a is over a limit for [Resource class:VCPU is over limit of 515 due to current usage 514 and delta 2]',
      ),
    ).toEqual({ shape: 'unified-limits', resources: [{ name: 'cores', requested: 2, used: 514, allowed: 515 }], permanent: false, service: 'compute' });
  });

  it('unified limits, several resources, names mapped to cores / ram / instances; delta above limit is permanent', () => {
    expect(
      parseQuotaMessage(
        'Project p1 is over a limit for [Resource servers is over limit of 10 due to current usage 10 and delta 1, ' +
          'Resource class:MEMORY_MB is over limit of 2048 due to current usage 0 and delta 4096]',
      ),
    ).toEqual({
      shape: 'unified-limits',
      resources: [
        { name: 'instances', requested: 1, used: 10, allowed: 10 },
        { name: 'ram', requested: 4096, used: 0, allowed: 2048 },
      ],
      permanent: true, service: 'compute',
    });
  });

  it('legacy 413 overLimit quota body message (rate limits and the other 413s) parses as legacy quota', () => {
    expect(parseQuotaMessage('Quota exceeded for cores: Requested 2, but already used 10 of 10 cores')).toEqual({
      shape: 'legacy',
      resources: [{ name: 'cores', requested: 2, used: 10, allowed: 10 }],
      permanent: false, service: 'compute',
    });
  });

  it("conductor's recheck fault (used = limit) is a transient quota", () => {
    expect(parseQuotaMessage('Quota exceeded for cores: Requested 2, but already used 10 of 10 cores')?.permanent).toBe(false);
  });

  it('server-group member quota', () => {
    expect(parseQuotaMessage('Quota exceeded, too many servers in group')).toEqual({ shape: 'server-group', resources: [], permanent: false, service: 'compute' });
  });

  it('keypair quota is the bare shape', () => {
    expect(parseQuotaMessage('Quota exceeded, too many key pairs.')).toEqual({ shape: 'bare', resources: [], permanent: false, service: 'compute' });
  });

  it("build-aborted fault naming another service's quota (nodepool's 'exceeds' + 'quota' rule)", () => {
    expect(
      parseQuotaMessage(
        'Build of instance 11111111-aaaa-4bbb-8ccc-000000000014 aborted: VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota.',
      ),
    ).toEqual({ shape: 'other-quota', resources: [], permanent: false, service: 'volume' });
  });

  it("Nova's VolumeLimitExceeded text ('Volume resource quota exceeded') is a quota (bare shape)", () => {
    expect(parseQuotaMessage('Build of instance x aborted: Volume resource quota exceeded')).toEqual({ shape: 'bare', resources: [], permanent: false, service: 'volume' });
  });

  it("Cinder's 'exceeded for quota' text in a build-aborted fault", () => {
    expect(
      parseQuotaMessage("Build of instance x aborted: Maximum number of volumes allowed (10) exceeded for quota 'volumes'.")?.shape,
    ).toBe('other-quota');
  });
});

describe('parseQuotaMessage: not quota (forbidden but not by quota: never retried as quota)', () => {
  it.each([
    ["Policy doesn't allow os_compute_api:servers:create to be performed."],
    ["Policy doesn't allow os_compute_api:os-hypervisors to be performed."],
    ['<html><body><h1>403 Forbidden</h1>Request forbidden by administrative rules.</body></html>'],
    ['This request was rate-limited.'],
    ['Request is too large.'],
    ['Flavor 42 could not be found.'],
    ['Exceeded maximum number of retries. Exhausted all hosts available for retrying build failures for instance x.'],
    [''],
  ])('%j → undefined', (msg) => {
    expect(parseQuotaMessage(msg)).toBeUndefined();
  });

  it('undefined and null → undefined', () => {
    expect(parseQuotaMessage(undefined)).toBeUndefined();
    expect(parseQuotaMessage(null)).toBeUndefined();
  });
});

describe('parseQuotaMessage: unified limits and the quotas of other services', () => {
  it('a resource class /limits does not show is kept by name; delta within the limit is transient', () => {
    expect(parseQuotaMessage('Project 1f2e is over a limit for [Resource class:DISK_GB is over limit of 100 due to current usage 80 and delta 80]')).toEqual({
      shape: 'unified-limits',
      resources: [{ name: 'class:DISK_GB', requested: 80, used: 80, allowed: 100 }],
      permanent: false,
      service: 'compute',
    });
  });

  it('a limit of 0 with usage above it is a limit not registered in Keystone: unknown, never permanent', () => {
    const p = parseQuotaMessage('Project 1f2e is over a limit for [Resource class:VCPU is over limit of 0 due to current usage 12 and delta 2]');
    expect(p?.permanent).toBe(false);
    // A real limit the request is over stays permanent.
    expect(parseQuotaMessage('Project 1f2e is over a limit for [Resource class:VCPU is over limit of 4 due to current usage 0 and delta 8]')?.permanent).toBe(true);
  });

  it.each([
    ['Maximum number of ports exceeded', 'network'],
    ["Maximum number of floating IP's exceeded", 'network'],
    ['No more floating IPs in pool public', 'network'],
    ['Build of instance x aborted: VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota. Requested 80G, quota is 100G and 80G has been consumed.', 'volume'],
    ['Quota exceeded for cores: Requested 2, but already used 514 of 515 cores', 'compute'],
    ['Quota exceeded, too many servers in group', 'compute'],
  ])('%s is a transient quota error of the %s service', (message, service) => {
    expect(parseQuotaMessage(message)).toMatchObject({ permanent: false, service });
  });
});

describe('QuotaExceededError says whose quota it is', () => {
  it('service: network for Neutron ports, volume for Cinder gigabytes, compute for cores', async () => {
    const { QuotaExceededError } = await import('../../src/index.js');
    expect(new QuotaExceededError({ status: 403, message: 'Maximum number of ports exceeded' }).service).toBe('network');
    expect(new QuotaExceededError({ status: 403, message: 'Quota exceeded for cores: Requested 2, but already used 514 of 515 cores' }).service).toBe('compute');
    expect(new QuotaExceededError({ status: 403, message: 'Requested volume or snapshot exceeds allowed gigabytes quota' }).service).toBe('volume');
  });
});
