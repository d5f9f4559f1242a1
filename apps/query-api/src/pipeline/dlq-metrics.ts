import { metricName, parseExposition } from '@sluice/telemetry';
import { queryError } from '../errors';

/** Dead-letter counts by reason, summed over every validate instance that answered. */
export interface DlqCounts {
  /** When the counters were read (ISO-8601). */
  at: string;
  /** Cumulative records sent to the DLQ since each instance started, by reason code. */
  reasons: Record<string, number>;
  /** Each scraped endpoint and whether it answered. */
  sources: { url: string; ok: boolean; error?: string }[];
}

const DLQ_METRIC = metricName('validate', 'dlqRecords');

/**
 * Reads the DLQ counters validate exposes on its ops `/metrics` (the DLQ itself is a Kafka topic,
 * not a lake table). The dashboard turns two readings into a rate per reason.
 */
export class DlqMetricsSource {
  constructor(
    private readonly urls: readonly string[],
    private readonly timeoutMs = 2000,
  ) {}

  get configured(): boolean {
    return this.urls.length > 0;
  }

  /** Throws QUERY_UPSTREAM_UNAVAILABLE when no endpoint answered. */
  async read(): Promise<DlqCounts> {
    const reasons: Record<string, number> = {};
    const sources = await Promise.all(
      this.urls.map(async (url) => {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
          if (!res.ok) return { url, ok: false, error: `HTTP ${res.status}` };
          for (const s of parseExposition(await res.text()).samples) {
            if (s.name !== DLQ_METRIC || !Number.isFinite(s.value)) continue;
            const reason = s.labels.reason ?? 'unknown';
            reasons[reason] = (reasons[reason] ?? 0) + s.value;
          }
          return { url, ok: true };
        } catch (err) {
          return { url, ok: false, error: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
    if (!sources.some((s) => s.ok)) {
      throw queryError('QUERY_UPSTREAM_UNAVAILABLE', 'no validate metrics endpoint answered', { sources, retryAfterSeconds: 5 });
    }
    return { at: new Date().toISOString(), reasons, sources };
  }
}
