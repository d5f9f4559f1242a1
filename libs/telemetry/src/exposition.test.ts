import { checkExposition, parseExposition, sampleValue } from './exposition';

describe('checkExposition', () => {
  it('parses labels with escapes and special values', () => {
    const e = parseExposition('# TYPE a counter\na{x="q\\"uote",y="b\\\\s"} 1\nb +Inf\nc NaN 123\n');
    expect(e.problems).toEqual([]);
    expect(e.samples[0]).toEqual({ name: 'a', labels: { x: 'q"uote', y: 'b\\s' }, value: 1 });
    expect(e.samples[1].value).toBe(Infinity);
    expect(Number.isNaN(e.samples[2].value)).toBe(true);
  });

  it('flags unknown metrics, another service’s metrics, wrong types and wrong labels', () => {
    const text = [
      '# TYPE sluice_validate_events_in_total gauge',
      'sluice_validate_events_in_total{outcome="consumed"} 1',
      'sluice_validate_made_up_total 1',
      'sluice_ingest_events_in_total{outcome="accepted"} 1',
      'sluice_validate_dlq_records_total{reason="X"} 1',
      'sluice_validate_events_out_total{outcome="valid",pod="p-1"} 1',
      'sluice_validate_transaction_duration_seconds_bucket{outcome="committed"} 1',
      'target_info{service_name="validate"} 1',
      'not a sample line',
    ].join('\n');
    const r = checkExposition(text, 'validate');
    expect(r.problems).toEqual(
      expect.arrayContaining([
        'sluice_validate_events_in_total has TYPE gauge, catalog says counter',
        'sluice_validate_made_up_total is not in the telemetry catalog',
        'sluice_ingest_events_in_total belongs to ingest, not validate',
        'sluice_validate_dlq_records_total lacks label "contract"',
        'sluice_validate_events_out_total has label "pod" the catalog does not declare',
        'sluice_validate_events_out_total lacks label "contract"',
        'sluice_validate_transaction_duration_seconds_bucket lacks label "le"',
        'unparseable line: not a sample line',
      ]),
    );
    expect(r.problems).toHaveLength(8);
    expect(r.notSeen).toContain('sluice_validate_consumer_lag_messages');
  });
});

describe('sampleValue', () => {
  const text = '# TYPE a counter\na{t="x",o="ok"} 3\na{t="x",o="retry"} 1\na{t="y",o="ok"} 5\nb 7\n';
  it('finds the one series whose labels include the given ones', () => {
    expect(sampleValue(text, 'a', { t: 'x', o: 'ok' })).toBe(3);
    expect(sampleValue(text, 'a', { t: 'y' })).toBe(5);
    expect(sampleValue(text, 'b')).toBe(7);
  });
  it('is undefined when none matches and throws when several do', () => {
    expect(sampleValue(text, 'a', { t: 'z' })).toBeUndefined();
    expect(() => sampleValue(text, 'a', { t: 'x' })).toThrow(/several series of a/);
  });
});
