import { intervalMsOf, parseInterval, tombstoneRetentionMsOf } from './properties';

const DAY = 86_400_000;

describe('Delta duration properties', () => {
  // Spark writes several units in one interval; only `interval <n> <unit>` was read, and the
  // table then failed every call of a handle after its first load.
  it('reads one or several units, with or without `interval`, singular or plural', () => {
    expect(intervalMsOf('interval 7 days')).toBe(7 * DAY);
    expect(intervalMsOf('interval 7 days 12 hours')).toBe(7.5 * DAY);
    expect(intervalMsOf('INTERVAL 1 week 1 day')).toBe(8 * DAY);
    expect(intervalMsOf('  30 days ')).toBe(30 * DAY);
    expect(intervalMsOf('interval 1 hour 30 minutes 15 seconds 5 milliseconds')).toBe(5_415_005);
  });

  it('refuses what it cannot read', () => {
    for (const bad of ['interval', 'interval 7', 'interval 1 fortnight', 'interval -1 day', 'interval 1.5 days', 'seven days', '', 'interval 1 month']) {
      expect(intervalMsOf(bad)).toBeUndefined();
    }
    expect(() => parseInterval('interval 1 fortnight', 'delta.logRetentionDuration')).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
  });

  it('writes only `interval <n> <unit>`, the form delta-rs reads', () => {
    expect(parseInterval('interval 7 days', 'delta.logRetentionDuration')).toBe(7 * DAY);
    expect(() => parseInterval('interval 7 days 12 hours', 'delta.logRetentionDuration')).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(() => parseInterval('7 days', 'delta.logRetentionDuration')).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
  });

  it('keeps tombstones 30 days when the file retention is unreadable, never fewer than set', () => {
    expect(tombstoneRetentionMsOf({})).toBe(7 * DAY);
    expect(tombstoneRetentionMsOf({ 'delta.deletedFileRetentionDuration': 'interval 2 days' })).toBe(2 * DAY);
    expect(tombstoneRetentionMsOf({ 'delta.deletedFileRetentionDuration': 'interval 1 fortnight' })).toBe(30 * DAY);
  });
});
