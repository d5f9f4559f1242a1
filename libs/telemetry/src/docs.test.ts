import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHANNELS } from './channels';
import { lookupSeries, metricCatalog } from './catalog';

// The design note is the reference other services read; it must not drift from the code.
describe('docs/design/telemetry.md', () => {
  const doc = readFileSync(join(__dirname, '../../../docs/design/telemetry.md'), 'utf8');

  it('lists every metric of the catalog by its Prometheus name', () => {
    const missing = metricCatalog().filter((e) => !doc.includes(`\`${e.name}\``)).map((e) => e.name);
    expect(missing).toEqual([]);
  });

  it('names no series a service does not produce (a dashboard built from it would stay empty)', () => {
    const named = [...doc.matchAll(/`(sluice_[a-z0-9_]+)`/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((name) => lookupSeries(name) === undefined)).toEqual([]);
  });

  it('documents every channel telemetry subscribes to', () => {
    const missing = Object.values(CHANNELS).filter((c) => !doc.includes(`\`${c}\``));
    expect(missing).toEqual([]);
  });
});
