import { parseDlqArgs } from './args';

const env = { KAFKA_BROKERS: '127.0.0.1:9092' };
const parse = (...argv: string[]) => parseDlqArgs(argv, env);
const refusal = (...argv: string[]) => {
  const r = parse(...argv);
  return r.ok ? 'accepted' : r.message;
};

describe('the DLQ tool command line', () => {
  it('refuses an argument a command does not take: `replay 0:42` replayed the whole DLQ', () => {
    expect(refusal('replay', '0:42')).toBe('replay takes no argument "0:42" (for one record: --at 0:42)');
    expect(refusal('count', 'orders')).toBe('count takes no argument "orders"');
    expect(refusal('show', '0:42', '0:43')).toMatch(/^show takes one partition:offset/);
    expect(refusal('show')).toMatch(/^show takes one partition:offset/);
    expect(refusal('show', '0:42', '--reason', 'RULE_RANGE')).toBe('show takes no filters, --limit or --all');
    const show = parse('show', '0:042', '--json');
    expect(show.ok && show.invocation.position).toEqual({ partition: 0, offset: 42 });
  });

  it('replays the whole DLQ only when asked in so many words', () => {
    expect(refusal('replay')).toBe('replay needs a filter (--reason, --contract, --at, --since), or --all for the whole DLQ');
    expect(refusal('replay', '--dry-run')).toMatch(/^replay needs a filter/);
    expect(refusal('replay', '--all', '--reason', 'RULE_RANGE')).toBe('replay takes filters or --all, not both');
    expect(refusal('count', '--all')).toMatch(/^--all applies to replay only/);
    const all = parse('replay', '--all');
    expect(all.ok && all.invocation.filter).toEqual({ positions: [], replays: 'include' });
  });

  it('reads --since as an instant and refuses what is not one', () => {
    const since = (value: string) => {
      const r = parse('count', '--since', value);
      return r.ok ? r.invocation.filter.sinceMs : r.message;
    };
    expect(since('2026-11-29T10:00:00+01:00')).toBe(Date.parse('2026-11-29T09:00:00Z'));
    expect(since('2026-11-29T10:00Z')).toBe(Date.parse('2026-11-29T10:00:00Z'));
    expect(since('2028-02-29T23:59:59.5-00:30')).toBe(Date.parse('2028-03-01T00:29:59.5Z'));
    // Date.parse rolls these over (2026-02-30 is 2026-03-02) instead of refusing them.
    for (const bad of ['yesterday', '1764403200000', '2026-11-29 10:00', '2026-11-29T10:00:00', '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-11-29T24:00Z', '2026-11-29T10:60:00Z', '2026-11-29T10:00:00+24:00']) {
      expect(since(bad)).toBe(`--since takes an ISO 8601 time with its zone, e.g. 2026-11-29T10:00:00Z (got "${bad}")`);
    }
  });

  it('refuses an empty topic, and a replay into the DLQ itself', () => {
    expect(refusal('replay', '--all', '--raw-topic', 'sluice.dlq', '--dlq-topic', 'sluice.dlq')).toBe('replay writes to --raw-topic, which is the DLQ itself ("sluice.dlq")');
    expect(refusal('count', '--raw-topic', '')).toBe('--dlq-topic and --raw-topic take a topic name');
    expect(refusal('list', '--dlq-topic', '')).toBe('--dlq-topic and --raw-topic take a topic name');
    expect(refusal('count', '--raw-topic', 'sluice.dlq', '--dlq-topic', 'sluice.dlq')).toBe('accepted'); // count writes nothing
  });

  it('normalises positions, so 0:042 selects offset 42', () => {
    const r = parse('list', '--at', '0:042', '--at', '01:7');
    expect(r.ok && r.invocation.filter.positions).toEqual(['0:42', '1:7']);
    expect(refusal('list', '--at', '0-42')).toBe('--at takes partition:offset, e.g. 0:42 (got "0-42")');
  });

  it('takes --limit where it means something, as a positive integer', () => {
    expect(refusal('count', '--limit', '5')).toBe('--limit applies to list and replay, not count');
    expect(refusal('list', '--limit', '0')).toBe('--limit takes a positive integer (got "0")');
    expect(refusal('list', '--limit', '2.5')).toBe('--limit takes a positive integer (got "2.5")');
    const r = parse('replay', '--reason', 'RULE_RANGE', '--limit', '10');
    expect(r.ok && r.invocation.limit).toBe(10);
  });

  it('includes failed replays by default, and does not take --replays for a filter', () => {
    const replay = parse('replay', '--reason', 'RULE_RANGE');
    expect(replay.ok && replay.invocation.filter.replays).toBe('include');
    const only = parse('list', '--replays', 'only');
    expect(only.ok && only.invocation.filter.replays).toBe('only');
    // Every failed replay of every reason: as wide as --all, so it needs it.
    expect(refusal('replay', '--replays', 'only')).toMatch(/^replay needs a filter/);
    expect(parse('replay', '--all', '--replays', 'only').ok).toBe(true);
    expect(refusal('list', '--replays', 'some')).toBe('--replays takes include, exclude or only (got "some")');
  });

  it('answers usage mistakes before asking for brokers, and an unknown option with the usage', () => {
    expect(parseDlqArgs(['replya'], {})).toMatchObject({ ok: false, message: expect.stringMatching(/^unknown command "replya"\nusage:/) });
    expect(parseDlqArgs([], {})).toMatchObject({ ok: false, message: expect.stringMatching(/^usage:/) });
    expect(refusal('count', '--reasons', 'X')).toMatch(/Unknown option '--reasons'[\s\S]*usage:/);
    expect(parseDlqArgs(['count'], {})).toEqual({ ok: false, message: 'no brokers: pass --brokers or set KAFKA_BROKERS' });
  });

  it('warns of a reason or contract this version never writes (a typo selects nothing)', () => {
    const r = parse('count', '--reason', 'RULE_RANGES', '--reason', 'RULE_RANGE', '--contract', 'order', '--contract', 'unknown');
    expect(r.ok && r.invocation.warnings).toEqual([
      '--reason RULE_RANGES is not a reason code this version writes',
      '--contract order is not a contract this version knows',
    ]);
  });
});
