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
 * Run on its own (`node build/examples/prometheus.js`), it serves the (empty) metrics until Ctrl-C.
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

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env['PROMETHEUS_PORT'] ?? 9464);
  const m = await startPrometheusMetrics({ port });
  console.log(`nova-guard metrics on http://localhost:${port}/metrics (Ctrl-C to stop)`);
  process.once('SIGINT', () => void m.shutdown().then(() => process.exit(0)));
}
