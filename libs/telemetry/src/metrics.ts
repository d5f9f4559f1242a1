import type { Attributes } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { Resource } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { METRICS, type MetricKey, type MetricSpec, type ServiceId, emits, metricName } from './catalog';

/** Content type of the Prometheus text exposition format served on `/metrics`. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Spec<K extends MetricKey> = (typeof METRICS)[K];
/** The label object a metric takes: exactly its catalog labels, values stringified. */
export type LabelsOf<K extends MetricKey> = { readonly [L in Spec<K>['labels'][number]]: string | number };
type LabelArgs<K extends MetricKey> = Spec<K>['labels'] extends readonly [] ? [labels?: Record<string, never>] : [labels: LabelsOf<K>];

/** A monotonic counter; `value` must be ≥ 0. */
export interface CounterOf<K extends MetricKey> {
  add(value: number, ...labels: LabelArgs<K>): void;
}
/** A gauge holding the last value set per label set. */
export interface GaugeOf<K extends MetricKey> {
  set(value: number, ...labels: LabelArgs<K>): void;
}
/** A histogram; values in the metric's unit (seconds for durations). */
export interface HistogramOf<K extends MetricKey> {
  record(value: number, ...labels: LabelArgs<K>): void;
}
/** The recording interface of catalog entry `K`, by its type. */
export type InstrumentOf<K extends MetricKey> = Spec<K>['type'] extends 'counter'
  ? CounterOf<K>
  : Spec<K>['type'] extends 'gauge'
    ? GaugeOf<K>
    : HistogramOf<K>;

/**
 * Every catalog metric as a typed instrument. Metrics the service does not emit (per the
 * catalog's `services`) are no-ops, so a stray call cannot invent a series no alert knows.
 */
export type SluiceMetrics = { readonly [K in MetricKey]: InstrumentOf<K> };

/** The meter side of a telemetry instance. */
export interface MetricsRuntime {
  readonly metrics: SluiceMetrics;
  /** Collects and renders every metric in the Prometheus text format. */
  metricsText(): Promise<string>;
  shutdown(): Promise<void>;
}

/** Builds a meter provider whose only reader renders Prometheus text on demand (no server). */
export function createMetricsRuntime(service: ServiceId, resource: Resource): MetricsRuntime {
  // preventServerStart: each service mounts /metrics itself (fastify route or ops server).
  const reader = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({ resource, readers: [reader] });
  const meter = provider.getMeter('@sluice/telemetry');
  const serializer = new PrometheusSerializer(undefined, false, undefined, false, true);

  const metrics = {} as Record<MetricKey, unknown>;
  for (const key of Object.keys(METRICS) as MetricKey[]) {
    const spec: MetricSpec = METRICS[key];
    if (!emits(service, key)) {
      metrics[key] = NOOP;
      continue;
    }
    const name = metricName(service, key);
    const options = { description: spec.help, unit: spec.unit === 'total' ? '' : spec.unit };
    const attrs = (labels?: Record<string, string | number>) => pickLabels(spec.labels, labels);
    if (spec.type === 'counter') {
      const c = meter.createCounter(name, options);
      metrics[key] = { add: (v: number, l?: Record<string, string | number>) => finite(v) && v >= 0 && c.add(v, attrs(l)) };
    } else if (spec.type === 'gauge') {
      const g = meter.createGauge(name, options);
      metrics[key] = { set: (v: number, l?: Record<string, string | number>) => finite(v) && g.record(v, attrs(l)) };
    } else {
      const h = meter.createHistogram(name, {
        ...options,
        advice: spec.buckets ? { explicitBucketBoundaries: [...spec.buckets] } : undefined,
      });
      metrics[key] = { record: (v: number, l?: Record<string, string | number>) => finite(v) && v >= 0 && h.record(v, attrs(l)) };
    }
  }

  return {
    metrics: Object.freeze(metrics) as unknown as SluiceMetrics,
    async metricsText() {
      // Read at scrape time, so the value is as fresh as the scrape and costs nothing between.
      const memory = process.memoryUsage();
      const gauge = (metrics as unknown as SluiceMetrics).processMemory;
      gauge.set(memory.rss, { kind: 'rss' });
      gauge.set(memory.heapUsed, { kind: 'heap_used' });
      gauge.set(memory.heapTotal, { kind: 'heap_total' });
      gauge.set(memory.external, { kind: 'external' });
      gauge.set(memory.arrayBuffers, { kind: 'array_buffers' });
      const { resourceMetrics } = await reader.collect();
      return serializer.serialize(resourceMetrics);
    },
    shutdown: () => provider.shutdown(),
  };
}

const NOOP = Object.freeze({ add() {}, set() {}, record() {} });

function finite(v: number): boolean {
  return typeof v === 'number' && Number.isFinite(v);
}

// Only catalog labels pass, so an accidental high-cardinality attribute never reaches a series.
function pickLabels(names: readonly string[], labels: Record<string, string | number> | undefined): Attributes {
  const out: Attributes = {};
  for (const n of names) {
    const v = labels?.[n];
    out[n] = v === undefined || v === '' ? 'unknown' : String(v);
  }
  return out;
}
