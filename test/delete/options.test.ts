/** Bad options fail before any request, where they are given, naming the closest known option. */
import { describe, expect, it } from 'vitest';
import { NovaClient, QuotaGuard, ValidationError, deleteServer, deleteServers, waitForDelete } from '../../src/index.js';

const client = (): NovaClient => new NovaClient({ endpoint: 'http://nova.invalid/v2.1', token: 't', adapter: () => Promise.reject(new Error('no request may be sent')) });

describe('unknown option names', () => {
  it('deleteServer, deleteServers and waitForDelete refuse { wiat: true } and name wait', async () => {
    const c = client();
    for (const p of [
      deleteServer(c, '00000001-0000-4000-8000-000000000000', { wiat: true } as never),
      deleteServers(c, ['00000001-0000-4000-8000-000000000000'], { concurency: 2 } as never),
      waitForDelete(c, '00000001-0000-4000-8000-000000000000', { intervalMS: 5 } as never),
    ]) {
      const e = await p.catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as Error).message).toMatch(/unknown option "(wiat|concurency|intervalMS)" \(did you mean (wait|concurrency|intervalMs)\?\)/);
    }
    expect(c.stats.requests).toBe(0);
  });

  it("a request's misspelt option (getLimits, getServer, listServers) is refused before any request", async () => {
    const c = client();
    for (const p of [c.getLimits({ requestTimout: 5 } as never), c.getServer('00000001-0000-4000-8000-000000000000', { sigal: undefined } as never), c.listServers({}, { requestTimout: 5 } as never)]) {
      const e = await p.catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as Error).message).toMatch(/unknown option "(requestTimout|sigal)" \(did you mean (requestTimeoutMs|signal)\?\)/);
    }
    expect(c.stats.requests).toBe(0);
  });

  it('NovaClient refuses a misspelt option', () => {
    expect(() => new NovaClient({ endpoint: 'http://nova.invalid/v2.1', token: 't', requestTimeout: 5 } as never)).toThrow(/unknown option "requestTimeout" \(did you mean requestTimeoutMs\?\)/);
  });

  it('QuotaGuard calls refuse misspelt options and needs (flavourRef names flavorRef)', async () => {
    const g = new QuotaGuard(client());
    await expect(g.withQuotaGuard({ flavourRef: '1' } as never, async () => 1)).rejects.toThrow(/unknown option "flavourRef" \(did you mean flavorRef\?\)/);
    await expect(g.createServer({ name: 'a', flavorRef: '1' }, { signl: undefined } as never)).rejects.toThrow(/unknown option "signl" \(did you mean signal\?\)/);
    await expect(g.headroom({ sigal: undefined } as never)).rejects.toThrow(ValidationError);
  });

  it("QuotaGuard refuses a misspelt option, and a bad deleteOptions at once (not when it must delete a server)", () => {
    const c = client();
    expect(() => new QuotaGuard(c, { maxWait: 5 } as never)).toThrow(/unknown option "maxWait" \(did you mean maxWaitMs\?\)/);
    expect(() => new QuotaGuard(c, { deleteOptions: { wiat: true } as never })).toThrow(/unknown option "wiat"/);
    expect(() => new QuotaGuard(c, { deleteOptions: { intervalMs: -5 } })).toThrow(ValidationError);
    expect(c.stats.requests).toBe(0);
  });
});
