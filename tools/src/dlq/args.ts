import { parseArgs } from 'node:util';
import { CONTRACTS, DLQ_TOPIC, RAW_TOPIC, REASON_CODES } from '@sluice/contracts';
import { kafkaSecurityFromEnv, type KafkaSecurity } from '@sluice/kafka';
import type { DlqFilter, ReplaysFilter } from './dlq-record';

export const USAGE = [
  'usage: cli.ts count  [filters] [--json]',
  '       cli.ts list   [filters] [--limit N] [--json]',
  '       cli.ts show   <partition:offset>',
  '       cli.ts replay <filters | --all> [--limit N] [--dry-run]',
  'filters: --reason CODE, --contract NAME, --at P:O (each repeatable), --since TIME (ISO 8601 with a zone),',
  '         --replays include|exclude|only (records that are themselves failed replays; default include)',
  'options: --brokers host:port,... (default $KAFKA_BROKERS), --dlq-topic T, --raw-topic T',
  'a secured cluster: the KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_* and KAFKA_SSL_* variables the services read',
].join('\n');

const COMMANDS = ['count', 'list', 'show', 'replay'] as const;
export type DlqCommand = (typeof COMMANDS)[number];

/** A command line the tool can run. */
export interface DlqInvocation {
  readonly command: DlqCommand;
  readonly brokers: string;
  /** From the KAFKA_SECURITY_* / KAFKA_SASL_* / KAFKA_SSL_* variables the services read. */
  readonly security: KafkaSecurity | undefined;
  readonly dlqTopic: string;
  readonly rawTopic: string;
  readonly filter: DlqFilter;
  /** `show`'s record. */
  readonly position?: { readonly partition: number; readonly offset: number };
  readonly limit: number;
  readonly json: boolean;
  readonly dryRun: boolean;
  /** Values that select nothing this version writes (a typo, or a code from an older version). */
  readonly warnings: readonly string[];
}

const POSITION = /^(\d+):(\d+)$/;
/** An ISO 8601 time with its zone: a zoneless one would be read in the machine's time zone. */
const ZONED_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant of a zoned ISO 8601 time, or NaN when it is not one: Date.parse rolls an impossible
 * day or hour over (2026-02-30 was 2026-03-02, T24:00 the next day) instead of refusing it.
 */
function zonedInstant(text: string): number {
  const m = ZONED_TIME.exec(text);
  if (!m) return NaN;
  const [year, month, day, hour, minute, second = '0', offsetHours = '0', offsetMinutes = '0'] = m.slice(1);
  const daysInMonth = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  const real =
    Number(month) >= 1 && Number(month) <= 12 && Number(day) >= 1 && Number(day) <= daysInMonth &&
    Number(hour) <= 23 && Number(minute) <= 59 && Number(second) <= 59 && Number(offsetHours) <= 23 && Number(offsetMinutes) <= 59;
  return real ? Date.parse(text) : NaN;
}

/**
 * Reads the tool's command line. Every mistake is an answer, never a wider selection: an extra
 * argument (`replay 0:42` meant `replay --at 0:42`) or a replay without any filter would
 * otherwise replay the whole DLQ.
 */
export function parseDlqArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): { ok: true; invocation: DlqInvocation } | { ok: false; message: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        reason: { type: 'string', multiple: true },
        contract: { type: 'string', multiple: true },
        at: { type: 'string', multiple: true },
        since: { type: 'string' },
        replays: { type: 'string' },
        all: { type: 'boolean', default: false },
        limit: { type: 'string' },
        json: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        brokers: { type: 'string' },
        'dlq-topic': { type: 'string' },
        'raw-topic': { type: 'string' },
      },
    });
  } catch (err) {
    return { ok: false, message: `${(err as Error).message}\n${USAGE}` };
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (!isCommand(command)) return { ok: false, message: command === undefined ? USAGE : `unknown command "${command}"\n${USAGE}` };

  let position: DlqInvocation['position'];
  if (command === 'show') {
    const at = rest.length === 1 ? POSITION.exec(rest[0]) : null;
    if (!at) return { ok: false, message: 'show takes one partition:offset, e.g. show 0:42' };
    position = { partition: Number(at[1]), offset: Number(at[2]) };
    const given = values as Record<string, unknown>;
    if ([...FILTER_OPTIONS, 'limit'].some((k) => given[k] !== undefined) || values.all) return { ok: false, message: 'show takes no filters, --limit or --all' };
  } else if (rest.length > 0) {
    return { ok: false, message: `${command} takes no argument "${rest[0]}"${POSITION.test(rest[0]) ? ` (for one record: --at ${rest[0]})` : ''}` };
  }

  const positions: string[] = [];
  for (const p of values.at ?? []) {
    const at = POSITION.exec(p);
    if (!at) return { ok: false, message: `--at takes partition:offset, e.g. 0:42 (got "${p}")` };
    positions.push(`${Number(at[1])}:${Number(at[2])}`);
  }
  let sinceMs: number | undefined;
  if (values.since !== undefined) {
    sinceMs = zonedInstant(values.since);
    if (Number.isNaN(sinceMs)) return { ok: false, message: `--since takes an ISO 8601 time with its zone, e.g. 2026-11-29T10:00:00Z (got "${values.since}")` };
  }
  const replays = values.replays ?? 'include';
  if (!isReplaysFilter(replays)) return { ok: false, message: `--replays takes include, exclude or only (got "${replays}")` };

  let limit = Infinity;
  if (values.limit !== undefined) {
    if (command !== 'list' && command !== 'replay') return { ok: false, message: `--limit applies to list and replay, not ${command}` };
    limit = /^\d+$/.test(values.limit) ? Number(values.limit) : NaN;
    if (!(limit > 0)) return { ok: false, message: `--limit takes a positive integer (got "${values.limit}")` };
  }
  const filter: DlqFilter = { reasons: values.reason, contracts: values.contract, positions, sinceMs, replays };
  if (command === 'replay' && values.all && selects(filter)) return { ok: false, message: 'replay takes filters or --all, not both' };
  if (command === 'replay' && !values.all && !selects(filter)) return { ok: false, message: 'replay needs a filter (--reason, --contract, --at, --since), or --all for the whole DLQ' };
  if (values.all && command !== 'replay') return { ok: false, message: `--all applies to replay only (${command} without filters takes every record)` };

  const dlqTopic = values['dlq-topic'] ?? DLQ_TOPIC.name;
  const rawTopic = values['raw-topic'] ?? RAW_TOPIC.name;
  if (dlqTopic === '' || rawTopic === '') return { ok: false, message: '--dlq-topic and --raw-topic take a topic name' };
  // Replayed copies carry no DLQ headers: written to the DLQ itself they would read as garbage there.
  if (command === 'replay' && rawTopic === dlqTopic) return { ok: false, message: `replay writes to --raw-topic, which is the DLQ itself ("${dlqTopic}")` };

  const brokers = values.brokers ?? env.KAFKA_BROKERS;
  if (!brokers) return { ok: false, message: 'no brokers: pass --brokers or set KAFKA_BROKERS' };
  let security: KafkaSecurity | undefined;
  try {
    security = kafkaSecurityFromEnv(env);
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
  return {
    ok: true,
    invocation: {
      command,
      brokers,
      security,
      dlqTopic,
      rawTopic,
      filter,
      position,
      limit,
      json: values.json,
      dryRun: values['dry-run'],
      warnings: unknownValues(values.reason, values.contract),
    },
  };
}

const FILTER_OPTIONS = new Set(['reason', 'contract', 'at', 'since', 'replays']);

function isCommand(c: string | undefined): c is DlqCommand {
  return (COMMANDS as readonly (string | undefined)[]).includes(c);
}

function isReplaysFilter(r: string): r is ReplaysFilter {
  return r === 'include' || r === 'exclude' || r === 'only';
}

/** Whether `f` narrows the selection by what went wrong, where or when (`--replays` alone does not: it spans every reason). */
function selects(f: DlqFilter): boolean {
  return (f.reasons?.length ?? 0) > 0 || (f.contracts?.length ?? 0) > 0 || (f.positions?.length ?? 0) > 0 || f.sinceMs !== undefined;
}

/** Reason codes and contracts this version does not write. Not refused: a 30-day DLQ can hold older codes. */
function unknownValues(reasons: readonly string[] | undefined, contracts: readonly string[] | undefined): string[] {
  // merge-compaction's own code for a valid-topic record it cannot decode (tier1/dead-letters.ts).
  const knownReasons = new Set<string>([...REASON_CODES, 'MERGE_RECORD_UNDECODABLE', 'unknown']);
  const knownContracts = new Set<string>([...Object.keys(CONTRACTS), 'unknown']);
  return [
    ...(reasons ?? []).filter((r) => !knownReasons.has(r)).map((r) => `--reason ${r} is not a reason code this version writes`),
    ...(contracts ?? []).filter((c) => !knownContracts.has(c)).map((c) => `--contract ${c} is not a contract this version knows`),
  ];
}
