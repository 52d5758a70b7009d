/** One error base: every error class of the library derives from NovaGuardError, and names itself. */
import { describe, expect, it } from 'vitest';
import * as lib from '../../src/index.js';
import { AbortError, AuthError, ConfigError, DeleteFailedError, DeleteTimeoutError, EndpointNotFoundError, NovaApiError, NovaGuardError, ValidationError, isAbortError } from '../../src/index.js';

describe('NovaGuardError', () => {
  it('is the base of every exported error class', () => {
    const classes = Object.entries(lib).filter(([name, v]) => typeof v === 'function' && /^[A-Z]\w*Error$/.test(name) && name !== 'NovaGuardError');
    expect(classes.length).toBeGreaterThanOrEqual(20);
    for (const [name, cls] of classes) {
      expect((cls as { prototype: unknown }).prototype instanceof NovaGuardError, name).toBe(true);
      expect((cls as { prototype: unknown }).prototype instanceof Error, name).toBe(true);
    }
  });

  it('every instance names its class; HTTP errors stay under NovaApiError', () => {
    expect(new ValidationError('x').name).toBe('ValidationError');
    expect(new ConfigError('x').name).toBe('ConfigError');
    expect(new AbortError().name).toBe('AbortError');
    expect(new AbortError().message).toBe('The operation was aborted');
    expect(new AbortError().serverId).toBeUndefined();
    expect(new AbortError('x', { serverId: 's-1' }).serverId).toBe('s-1');
    const auth = new AuthError({ status: 401, message: 'no' });
    expect(auth).toBeInstanceOf(NovaApiError);
    expect(auth).toBeInstanceOf(NovaGuardError);
    expect(auth.name).toBe('AuthError');
    expect(new EndpointNotFoundError('compute', 'public', undefined, 'none')).toBeInstanceOf(ConfigError);
    expect(new DeleteTimeoutError({ serverId: 's', lastStatus: 'ACTIVE', lastTaskState: 'deleting', polls: 3, elapsedMs: 10, timeoutMs: 10 })).toBeInstanceOf(NovaGuardError);
    expect(new DeleteFailedError({ serverId: 's', faultMessage: undefined, deleteAttempts: 1 }).cause).toBeUndefined();
  });

  it('isAbortError knows ours, the platform\'s and axios\'s aborts, and nothing else', () => {
    expect(isAbortError(new AbortError())).toBe(true);
    const ac = new AbortController();
    ac.abort();
    expect(isAbortError(ac.signal.reason)).toBe(true);
    expect(isAbortError(Object.assign(new Error('canceled'), { code: 'ERR_CANCELED' }))).toBe(true);
    expect(isAbortError(AbortSignal.timeout(0).reason)).toBe(false);
    expect(isAbortError(new Error('AbortError'))).toBe(false);
    expect(isAbortError(new ValidationError('x'))).toBe(false);
  });
});
