/**
 * OpenTelemetry through the SDK's in-memory exporters: the spans and metrics of a delete-wait and
 * of a guarded create that absorbs a quota 403, and the `X-OpenStack-Request-ID` of each operation.
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { DataPointType, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { AxiosAdapter } from 'axios';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientFor, settle, startNova, useFakeClock } from '../helpers.js';
import { FAST, body, guardFor, quota403 } from '../guard/fixtures.js';

/** A reader collected by hand. */
class ManualReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const spans = new InMemorySpanExporter();
let reader: ManualReader;

beforeAll(() => {
  trace.disable();
  metrics.disable();
  context.disable();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }));
  reader = new ManualReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
});
afterAll(() => {
  context.disable();
  trace.disable();
  metrics.disable();
});
beforeEach(() => spans.reset());
useFakeClock();

async function collect(): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, MetricData>();
  for (const scope of resourceMetrics.scopeMetrics) for (const m of scope.metrics) out.set(m.descriptor.name, m);
  return out;
}
function sum(m: MetricData | undefined, attrs: Record<string, unknown> = {}): number {
  return (m?.dataPoints ?? []).filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).reduce((n, p) => n + (p.value as number), 0);
}
function histogram(m: MetricData | undefined): { count: number; sum: number } {
  expect(m?.dataPointType).toBe(DataPointType.HISTOGRAM);
  const points = (m?.dataPoints ?? []) as Array<{ value: { count: number; sum?: number } }>;
  return { count: points.reduce((n, p) => n + p.value.count, 0), sum: points.reduce((n, p) => n + (p.value.sum ?? 0), 0) };
}
/** The adapter of `inner`, recording each request's X-OpenStack-Request-ID. */
function recording(inner: AxiosAdapter, ids: Array<[string, string | undefined]>): AxiosAdapter {
  return (config) => {
    const h = config.headers as unknown as { get(n: string): unknown };
    ids.push([`${String(config.method).toUpperCase()} ${String(config.url).replace(/^https?:\/\/[^/]+/, '')}`, h.get('X-OpenStack-Request-ID') as string | undefined]);
    return inner(config);
  };
}
const REQ_ID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('telemetry on @opentelemetry/api', () => {
  it('a delete-wait: one request id for its requests, a delete_wait span, request spans, the delete metrics and the pending gauge', async () => {
    const nova = await startNova({ deleteDelayMs: 40 });
    const ids: Array<[string, string | undefined]> = [];
    const client = clientFor(nova, { adapter: recording(nova.adapter, ids) });
    const id = nova.addServer({ status: 'ACTIVE', flavorId: '2' }).id;
    const before = await collect();
    const deletesBefore = sum(before.get('nova_guard.deletes'), { 'nova_guard.outcome': 'deleted' });
    const durationsBefore = before.has('nova_guard.delete.duration') ? histogram(before.get('nova_guard.delete.duration')).count : 0;

    const pending = client.deleteServer(id, { wait: true, intervalMs: 5, jitter: 0 });
    await vi.advanceTimersByTimeAsync(10);
    expect(sum((await collect()).get('nova_guard.deletes.pending'))).toBe(1);
    const r = await settle(pending);
    expect(r.outcome).toBe('deleted');

    // One global request id, in Nova's accepted format, on every request of the call.
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(ids[0]![0]).toBe(`DELETE /v2.1/servers/${id}`);
    const rid = ids[0]![1]!;
    expect(rid).toMatch(REQ_ID);
    expect(new Set(ids.map(([, v]) => v))).toEqual(new Set([rid]));

    const finished = spans.getFinishedSpans();
    const wait = finished.filter((s) => s.name === 'nova_guard.delete_wait');
    expect(wait).toHaveLength(1);
    expect(wait[0]!.attributes).toMatchObject({ 'openstack.server_id': id, 'openstack.global_request_id': rid, 'nova_guard.outcome': 'deleted' });
    const http = finished.filter((s) => s.name !== 'nova_guard.delete_wait');
    // With a context manager, the request spans are children of the delete_wait span.
    expect(new Set(http.map((s) => s.parentSpanContext?.spanId))).toEqual(new Set([wait[0]!.spanContext().spanId]));
    expect(http.map((s) => s.name)).toEqual(['DELETE', ...Array<string>(http.length - 1).fill('GET')]);
    expect(http[0]!.attributes).toMatchObject({
      'http.request.method': 'DELETE',
      'url.full': `${nova.endpoint}/servers/${id}`,
      'server.address': new URL(nova.endpoint).hostname,
      'http.response.status_code': 204,
      'openstack.global_request_id': rid,
      'openstack.server_id': id,
    });
    expect(http[0]!.attributes['openstack.request_id']).toMatch(/^req-/);
    expect(http.at(-1)!.attributes['http.response.status_code']).toBe(404);

    const after = await collect();
    expect(sum(after.get('nova_guard.deletes'), { 'nova_guard.outcome': 'deleted' })).toBe(deletesBefore + 1);
    const d = histogram(after.get('nova_guard.delete.duration'));
    expect(d.count).toBe(durationsBefore + 1);
    expect(d.sum).toBeGreaterThanOrEqual(40); // at least Nova's delete delay, on the fake clock
    expect(sum(after.get('nova_guard.deletes.pending'))).toBe(0);
    expect(histogram(after.get('nova_guard.request.duration')).count).toBeGreaterThanOrEqual(ids.length);
    // Durations are histograms in ms, the unit carried as OpenTelemetry metadata (not in the name,
    // as OpenTelemetry's naming conventions ask); the Prometheus exporter writes it as `# UNIT`.
    for (const name of ['nova_guard.delete.duration', 'nova_guard.request.duration']) expect(after.get(name)?.descriptor.unit, name).toBe('ms');
    const text = new PrometheusSerializer().serialize((await reader.collect()).resourceMetrics);
    expect(text).toContain('# UNIT nova_guard_delete_duration ms\n');
    expect(text).toContain('# UNIT nova_guard_request_duration ms\n');
    expect(text).toMatch(/^nova_guard_delete_duration_bucket\{/m);
  });

  it('a guarded create that absorbs a quota 403: the guarded_create span, one request id, creates and quota_403s_absorbed, the headroom wait', async () => {
    const nova = await startNova();
    const ids: Array<[string, string | undefined]> = [];
    nova.inject({ method: 'POST', path: '/servers', status: 403, body: quota403('Quota exceeded for cores: Requested 2, but already used 19 of 20 cores') });
    const guard = guardFor(nova, { ...FAST, waitForActive: false }, clientFor(nova, { adapter: recording(nova.adapter, ids) }));
    const before = await collect();
    const absorbedBefore = sum(before.get('nova_guard.quota_403s_absorbed'));
    const createsBefore = sum(before.get('nova_guard.creates'), { 'nova_guard.outcome': 'succeeded' });
    const waitsBefore = before.has('nova_guard.headroom_wait.duration') ? histogram(before.get('nova_guard.headroom_wait.duration')).count : 0;
    // The gauge counts every guarded create of the process waiting now; the suite's files share a
    // worker (isolate: false), so another file's create may still wait: this create's own wait is
    // counted down when the gauge is back at (or under) where it was.
    const waitingBefore = sum(before.get('nova_guard.creates.waiting'));

    const server = await settle(guard.createServer(body('otel-1')));
    expect(server.id).toBeTruthy();

    const posts = ids.filter(([what]) => what === 'POST /v2.1/servers');
    expect(posts).toHaveLength(2);
    const rid = posts[0]![1]!;
    expect(rid).toMatch(REQ_ID);
    // The flavor lookup (cached per client) is part of the create: one id for every request of the call.
    expect(ids.map(([what]) => what)).toEqual(['GET /v2.1/flavors/2', 'GET /v2.1/limits', 'POST /v2.1/servers', 'GET /v2.1/limits', 'POST /v2.1/servers']);
    // The flavor read belongs to the create too: every request of the call carries its id.
    expect(new Set(ids.map(([, v]) => v))).toEqual(new Set([rid]));

    const create = spans.getFinishedSpans().filter((s) => s.name === 'nova_guard.guarded_create');
    expect(create).toHaveLength(1);
    expect(create[0]!.attributes).toMatchObject({ 'nova_guard.outcome': 'succeeded', 'nova_guard.quota_403s_absorbed': 1, 'openstack.global_request_id': rid });
    const postSpans = spans.getFinishedSpans().filter((s) => s.name === 'POST');
    expect(postSpans.every((s) => s.parentSpanContext?.spanId === create[0]!.spanContext().spanId)).toBe(true);
    expect(postSpans.map((s) => s.attributes['http.response.status_code'])).toEqual([403, 202]);

    const after = await collect();
    expect(sum(after.get('nova_guard.quota_403s_absorbed'))).toBe(absorbedBefore + 1);
    expect(sum(after.get('nova_guard.creates'), { 'nova_guard.outcome': 'succeeded' })).toBe(createsBefore + 1);
    expect(histogram(after.get('nova_guard.headroom_wait.duration')).count).toBe(waitsBefore + 2);
    expect(after.get('nova_guard.headroom_wait.duration')?.descriptor.unit).toBe('ms');
    expect(sum(after.get('nova_guard.creates.waiting'))).toBeLessThanOrEqual(waitingBefore);
  });

  it('two operations get two request ids; a request outside an operation sends none', async () => {
    const nova = await startNova();
    const ids: Array<[string, string | undefined]> = [];
    const client = clientFor(nova, { adapter: recording(nova.adapter, ids) });
    const a = nova.addServer({ status: 'ACTIVE', flavorId: '1' }).id;
    const b = nova.addServer({ status: 'ACTIVE', flavorId: '1' }).id;
    await settle(client.deleteServer(a));
    await settle(client.deleteServer(b));
    await settle(client.getLimits());
    const [first, second, limits] = [ids.find(([w]) => w.endsWith(a))![1], ids.find(([w]) => w.endsWith(b))![1], ids.at(-1)![1]];
    expect(first).toMatch(REQ_ID);
    expect(second).toMatch(REQ_ID);
    expect(first).not.toBe(second);
    expect(limits).toBeUndefined();
  });
});
