/** The logger option: a pino Logger, or any object with pino's level methods (console included). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { componentLogger, toLogger, type LoggerLike } from '../../src/core/logger.js';
import { NovaClient } from '../../src/nova/client.js';
import { QuotaGuard } from '../../src/guard/index.js';
import { auditQuota } from '../../src/audit/index.js';
import { reapServers } from '../../src/reaper/index.js';
import { silentLogger } from '../../src/core/logger.js';
import { settle, startNova, useFakeClock } from '../helpers.js';

useFakeClock();
afterEach(() => vi.restoreAllMocks());

function recorder(level?: string): { logger: LoggerLike; lines: Array<[string, string, Record<string, unknown>]> } {
  const lines: Array<[string, string, Record<string, unknown>]> = [];
  const at = (name: string) => (msg: string, fields: Record<string, unknown>) => lines.push([name, msg, fields]);
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), ...(level ? { level } : {}) } };
}

describe('logger option', () => {
  it('a pino logger is used as it is; an object with level methods is wrapped (msg, fields), from info up by default', () => {
    expect(toLogger(silentLogger)).toBe(silentLogger);
    const { logger, lines } = recorder();
    const log = componentLogger(logger, 'nova');
    log.debug('hidden');
    log.info({ serverId: 's-1' }, 'hello');
    log.fatal('bad');
    expect(lines).toEqual([
      ['info', 'hello', { component: 'nova', serverId: 's-1' }],
      ['error', 'bad', { component: 'nova' }],
    ]);
    log.warn({ auth: { password: 'pw-secret', user: 'u' }, token: 'tok-secret' }, 'careless');
    expect(lines.at(-1)).toEqual(['warn', 'careless', { component: 'nova', auth: { password: '[REDACTED]', user: 'u' }, token: '[REDACTED]' }]);
    lines.pop();
    const debug = recorder('debug');
    toLogger(debug.logger).trace('t');
    toLogger(debug.logger).debug('d');
    expect(debug.lines).toEqual([['debug', 'd', {}]]);
    expect(() => toLogger({ info: () => undefined } as unknown as LoggerLike)).toThrow("logger must be a pino Logger or an object with pino's level methods (info, warn, error, debug): warn is missing");
  });

  it('logger: console works, and request log lines carry the server id', async () => {
    const info = vi.spyOn(console, 'info').mockImplementation(() => undefined);
    const debug = vi.spyOn(console, 'debug').mockImplementation(() => undefined);
    const nova = await startNova();
    const quiet = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, adapter: nova.adapter, logger: console });
    const id = nova.addServer({ status: 'ACTIVE', flavorId: '1' }).id;
    await settle(quiet.getServer(id));
    expect(debug).not.toHaveBeenCalled(); // console is wrapped at info
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    new NovaClient({ endpoint: 'https://nova.example/v2.1', token: 't', insecure: true, logger: console });
    expect(warn).toHaveBeenCalledWith('TLS verification is turned off (insecure): the server certificate is not checked', { component: 'nova' });

    const { logger, lines } = recorder('debug');
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, adapter: nova.adapter, logger });
    await settle(client.getServer(id));
    const request = lines.find(([, msg]) => msg === 'nova request');
    expect(request?.[2]).toMatchObject({ component: 'nova', method: 'GET', path: `/servers/${id}`, serverId: id, status: 200 });
    expect(info).not.toHaveBeenCalledWith(expect.stringContaining('admin:'), expect.anything());
  });

  it('QuotaGuard, auditQuota and reapServers take an object with level methods as their logger too', async () => {
    const nova = await startNova({ maxTotalCores: 2 });
    nova.addServer({ status: 'ACTIVE', flavorId: '2' });
    const client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, adapter: nova.adapter });
    const { logger, lines } = recorder();
    const guard = new QuotaGuard(client, { logger, maxWaitMs: 3000 });
    const outcome = await settle(guard.createServer({ name: 'w', flavorRef: '2', imageRef: 'img', networks: 'none' }).catch((e: unknown) => e));
    expect((outcome as Error).name).toBe('QuotaWaitTimeoutError');
    expect(lines.find(([, msg]) => msg === 'not enough quota headroom: waiting')?.[2]).toMatchObject({ component: 'quota-guard' });
    const audit = await settle(auditQuota(client, { logger }));
    expect(audit.verdict).toBeDefined();
    const reaped = await settle(reapServers(client, { logger, prefix: 'none-', olderThanMs: 1, dryRun: true }));
    expect(reaped).toBeDefined();
  });
});

