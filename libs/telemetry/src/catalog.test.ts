import { METRICS, SERVICES, lookupSeries, metricCatalog, metricName } from './catalog';

describe('metric catalog', () => {
  const all = metricCatalog();

  it('names every metric sluice_<service>_<thing>_<unit>, uniquely', () => {
    for (const e of all) {
      const service = e.service.replace(/-/g, '_');
      expect(e.name).toBe(`sluice_${service}_${METRICS[e.key].thing}_${e.unit}`);
      expect(e.name).toMatch(/^sluice_[a-z_]+_[a-z_]+$/);
    }
    expect(new Set(all.map((e) => e.name)).size).toBe(all.length);
  });

  it('ends counters in _total and gives other metrics a real unit', () => {
    for (const e of all) {
      if (e.type === 'counter') expect(e.unit).toBe('total');
      else expect(e.unit).not.toBe('total');
    }
  });

  it('declares buckets for every histogram, strictly increasing', () => {
    for (const e of all.filter((x) => x.type === 'histogram')) {
      expect(e.buckets?.length).toBeGreaterThan(3);
      const b = e.buckets as readonly number[];
      for (let i = 1; i < b.length; i++) expect(b[i]).toBeGreaterThan(b[i - 1]);
    }
  });

  it('uses snake_case labels and never a per-event identifier', () => {
    for (const e of all) {
      for (const l of e.labels) {
        expect(l).toMatch(/^[a-z][a-z_]*$/);
        expect(['event_id', 'key', 'entity_key', 'offset', 'url', 'path', 'user']).not.toContain(l);
      }
    }
  });

  it('covers what the operations brief asks for', () => {
    const keys = new Set(all.map((e) => e.key));
    for (const k of [
      'eventsIn', 'eventsOut', 'consumerLag', 'dlqRecords', 'batchDuration', 'commitDuration', 'freshness',
      'tableVersion', 'tableFiles', 'tableSmallFiles', 'compactionBacklog', 'httpRequestDuration',
      'producerQueue', 'pausedPartitions',
    ] as const) {
      expect(keys.has(k)).toBe(true);
    }
    for (const s of SERVICES) expect(metricCatalog(s).length).toBeGreaterThan(2);
  });

  it('resolves histogram series suffixes and nothing else', () => {
    const h = metricName('merge-compaction', 'batchDuration');
    expect(lookupSeries(`${h}_bucket`)?.name).toBe(h);
    expect(lookupSeries(`${h}_count`)?.name).toBe(h);
    expect(lookupSeries(`${h}_sum`)?.name).toBe(h);
    const c = metricName('validate', 'dlqRecords');
    expect(lookupSeries(c)?.type).toBe('counter');
    expect(lookupSeries(`${c}_count`)).toBeUndefined();
    expect(lookupSeries('sluice_validate_nope_total')).toBeUndefined();
    // ingest does not consume, so it has no lag metric.
    expect(lookupSeries('sluice_ingest_consumer_lag_messages')).toBeUndefined();
  });
});
