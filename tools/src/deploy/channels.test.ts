import { KAFKA_CHANNELS } from '@sluice/kafka';
import { LAKE_CHANNELS } from '@sluice/lake';
import { CHANNELS } from '@sluice/telemetry';

// Telemetry subscribes by name because it may not import the adapters; this keeps the names in
// step with what libs/kafka and libs/lake publish.
describe('diagnostics channels', () => {
  const published = new Set<string>([...Object.values(KAFKA_CHANNELS), ...Object.values(LAKE_CHANNELS)]);
  // Channels telemetry already handles but the adapters do not publish yet (docs/design/telemetry.md).
  const proposed = new Set<string>([]);

  it('every channel telemetry listens on is published by an adapter (or is a documented proposal)', () => {
    const unknown = Object.values(CHANNELS).filter((c) => !published.has(c) && !proposed.has(c));
    expect(unknown).toEqual([]);
  });

  it('follows sluice:<lib>:<event>', () => {
    for (const c of [...published, ...Object.values(CHANNELS)]) expect(c).toMatch(/^sluice:(kafka|lake):[a-z]+(-[a-z]+)*$/);
  });

  it('marks as proposed only channels nobody publishes yet', () => {
    for (const c of proposed) expect(published.has(c)).toBe(false);
  });
});
