import { metricName, parseExposition } from '@sluice/telemetry';
import { queryError } from '../errors';

/** Dead-letter counts by reason, summed over every validate instance that answered. */
export interface DlqCounts {
  /** When the counters were read (ISO-8601). */
  at: string;
  /** Cumulative records sent to the DLQ since each instance started, by reason code. */
  reasons: Record<string, number>;
  /**
   * Each scraped endpoint, by its position in QUERY_API_DLQ_METRICS_URLS (from 1), whether it
   * answered and, if not, why in a word: any token may read this, so no internal address or
   * network error text.
   */
  sources: { source: number; ok: boolean; error?: 'timeout' | 'unreachable' | `HTTP ${number}` }[];
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
      this.urls.map(async (url, i): Promise<DlqCounts['sources'][number]> => {
        const source = i + 1;
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
          if (!res.ok) return { source, ok: false, error: `HTTP ${res.status}` };
          for (const s of parseExposition(await res.text()).samples) {
            if (s.name !== DLQ_METRIC || !Number.isFinite(s.value)) continue;
            const reason = s.labels.reason ?? 'unknown';
            reasons[reason] = (reasons[reason] ?? 0) + s.value;
          }
          return { source, ok: true };
        } catch (err) {
          return { source, ok: false, error: err instanceof Error && err.name === 'TimeoutError' ? 'timeout' : 'unreachable' };
        }
      }),
    );
    if (!sources.some((s) => s.ok)) {
      throw queryError('QUERY_UPSTREAM_UNAVAILABLE', 'no validate metrics endpoint answered', { sources, retryAfterSeconds: 5 });
    }
    return { at: new Date().toISOString(), reasons, sources };
  }
}
