/**
 * Exporting nova-guard's metrics to Prometheus with the OpenTelemetry SDK.
 *
 * nova-guard records its metrics (`nova_guard.*`: quota 403s absorbed, creates and deletes by
 * outcome, re-authentications, delete latency, time waited for headroom, request latency, pending
 * deletes and waiting creates) through `@opentelemetry/api` only. An application turns them on by
 * registering a meter provider; here one whose reader is the Prometheus exporter, which serves
 * `http://<host>:9464/metrics` for Prometheus to scrape:
 *
 * ```ts
 * import { startPrometheusMetrics } from './prometheus.js';
 * const metrics = await startPrometheusMetrics({ port: 9464 });
 * // ... NovaClient, QuotaGuard, deleteServer as usual ...
 * await metrics.shutdown();
 * ```
 *
 * Run on its own (`node build/examples/prometheus.js`; `PROMETHEUS_PORT` sets the port), it serves the
 * (empty) metrics until Ctrl-C or SIGTERM, then shuts the exporter down.
 * Dependencies of the application (not of nova-guard): `@opentelemetry/sdk-metrics`,
 * `@opentelemetry/exporter-prometheus`.
 */
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/** A registered meter provider with a Prometheus reader. */
export interface PrometheusMetrics {
  /** The exporter (a MetricReader that can also serve `/metrics`). */
  exporter: PrometheusExporter;
  /** The metrics now, in the Prometheus text format. */
  text(): Promise<string>;
  /** Stop the server (if any) and unregister the provider. */
  shutdown(): Promise<void>;
}

/**
 * Register a global meter provider whose reader is a Prometheus exporter. With `port`, the
 * exporter serves `/metrics` on it; without, nothing listens and {@link PrometheusMetrics.text}
 * gives the text (as `npm run demo -- --metrics` prints it).
 */
export async function startPrometheusMetrics(options: { port?: number } = {}): Promise<PrometheusMetrics> {
  const exporter = new PrometheusExporter({ port: options.port ?? 9464, preventServerStart: options.port === undefined });
  if (options.port !== undefined) await exporter.startServer();
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.setGlobalMeterProvider(provider);
  const serializer = new PrometheusSerializer();
  return {
    exporter,
    async text() {
      const { resourceMetrics } = await exporter.collect();
      return serializer.serialize(resourceMetrics);
    },
    async shutdown() {
      await provider.shutdown();
      metrics.disable();
    },
  };
}

/**
 * Resolve on the first SIGINT or SIGTERM, keeping the process alive until then. The exporter's HTTP
 * server is unref()'d by `@opentelemetry/exporter-prometheus` (it never keeps an application
 * alive by itself; an application has its own work that does), so a process that only serves
 * metrics holds a ref'd timer of its own while it waits.
 */
export function untilSignal(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {}, 2 ** 31 - 1);
    const on = (signal: NodeJS.Signals): void => {
      clearInterval(keepAlive);
      for (const s of signals) process.off(s, on);
      resolve(signal);
    };
    for (const s of signals) process.once(s, on);
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env['PROMETHEUS_PORT'] ?? 9464);
  const m = await startPrometheusMetrics({ port });
  console.log(`nova-guard metrics on http://localhost:${port}/metrics (Ctrl-C to stop)`);
  const signal = await untilSignal();
  await m.shutdown();
  console.log(`${signal}: metrics server stopped`);
}
