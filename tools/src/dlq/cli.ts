/**
 * DLQ tool: count, list, show and replay dead-lettered events.
 *
 *   npx tsx tools/src/dlq/cli.ts count  [filters] [--json]
 *   npx tsx tools/src/dlq/cli.ts list   [filters] [--limit N] [--json]
 *   npx tsx tools/src/dlq/cli.ts show   <partition:offset>
 *   npx tsx tools/src/dlq/cli.ts replay [filters] [--dry-run]
 *
 * filters: --reason CODE (repeatable), --contract NAME (repeatable), --at P:O (repeatable),
 *          --since ISO-TIME (dead-lettered at or after)
 * options: --brokers host:port,... (default $KAFKA_BROKERS), --dlq-topic, --raw-topic
 *          (default the @sluice/contracts constants)
 *
 * replay writes each selected record back to the raw topic with its original key, bytes and
 * headers (DLQ headers removed, `sluice-replay-of` added); the event keeps its event_id, so
 * replaying twice is harmless downstream. Replay only after the cause is fixed (a contract
 * change deployed, a producer bug fixed), or the events come straight back to the DLQ. A record
 * cut to fit a Kafka message (`sluice-dlq-truncated`) is not replayed: the output lists it with
 * its source coordinates, where the original is while the raw topic keeps it. --limit counts
 * the records replayed.
 */
import { parseArgs } from 'node:util';
import { DLQ_TOPIC, RAW_TOPIC } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import { countBy, describe, matches, toReplayRecord, type DlqEntry, type DlqFilter } from './dlq-record';
import { readDlq } from './read-dlq';

const USAGE = 'usage: cli.ts count|list|show|replay [--reason R] [--contract C] [--at P:O] [--since ISO] [--limit N] [--json] [--dry-run] [--brokers B] [--dlq-topic T] [--raw-topic T]';

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      reason: { type: 'string', multiple: true },
      contract: { type: 'string', multiple: true },
      at: { type: 'string', multiple: true },
      since: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      brokers: { type: 'string' },
      'dlq-topic': { type: 'string' },
      'raw-topic': { type: 'string' },
    },
  });
  const [command, position] = positionals;
  const brokers = values.brokers ?? process.env.KAFKA_BROKERS;
  if (!brokers) return fail('no brokers: pass --brokers or set KAFKA_BROKERS');
  const dlqTopic = values['dlq-topic'] ?? DLQ_TOPIC.name;
  const rawTopic = values['raw-topic'] ?? RAW_TOPIC.name;
  const filter: DlqFilter = { reasons: values.reason, contracts: values.contract, positions: values.at, since: values.since };
  if (values.at?.some((p) => !/^\d+:\d+$/.test(p))) return fail('--at takes partition:offset, e.g. 0:42');
  const limit = values.limit === undefined ? Infinity : Number(values.limit);
  if (!(limit > 0)) return fail('--limit must be a positive number');

  const select = async (): Promise<DlqEntry[]> => (await readDlq(brokers, dlqTopic)).map(describe).filter((e) => matches(e, filter));

  switch (command) {
    case 'count': {
      const entries = await select();
      const rows = countBy(entries);
      if (values.json) print({ total: entries.length, groups: rows });
      else {
        console.log(`total ${entries.length}`);
        for (const r of rows) console.log(`${String(r.count).padStart(8)}  ${r.reason.padEnd(28)} ${r.contract}`);
      }
      return 0;
    }
    case 'list': {
      const entries = (await select()).slice(0, limit);
      for (const e of entries) {
        if (values.json) print(summary(e));
        else console.log(`${e.partition}:${e.offset}\t${e.time}\t${e.reason}\t${e.contract}\t${e.producer}\t${e.eventId ?? '-'}`);
      }
      return 0;
    }
    case 'show': {
      if (!position || !/^\d+:\d+$/.test(position)) return fail('show takes partition:offset, e.g. show 0:42');
      const [entry] = (await readDlq(brokers, dlqTopic)).map(describe).filter((e) => matches(e, { positions: [position] }));
      if (!entry) return fail(`no DLQ record at ${position}`);
      const value = entry.message.value;
      print({
        ...summary(entry),
        key: entry.message.key?.toString('utf8') ?? null,
        headers: Object.fromEntries(Object.entries(entry.message.headers).map(([k, v]) => [k, v.toString('utf8')])),
        value: value === null ? null : isUtf8Text(value) ? value.toString('utf8') : { base64: value.toString('base64') },
      });
      return 0;
    }
    case 'replay': {
      const selected = await select();
      // A record cut to fit the DLQ no longer holds the original bytes: replaying it would send a
      // broken event. Its original is at its source coordinates, which are listed instead.
      const entries = selected.filter((e) => e.truncated === undefined).slice(0, limit);
      const notReplayed = selected
        .filter((e) => e.truncated !== undefined)
        .slice(0, limit)
        .map((e) => ({ at: `${e.partition}:${e.offset}`, source: e.source, truncated: e.truncated }));
      const skipped = notReplayed.length > 0 ? { truncatedNotReplayed: notReplayed } : {};
      if (values['dry-run']) {
        print({ wouldReplay: entries.length, to: rawTopic, groups: countBy(entries), ...skipped });
        return 0;
      }
      const producer = new KafkaProducer({ brokers, clientId: 'sluice-dlq-replay' });
      await producer.connect();
      try {
        const records = entries.map((e) => ({ topic: rawTopic, ...toReplayRecord(e, dlqTopic) }));
        for (let i = 0; i < records.length; i += 1000) await producer.sendBatch(records.slice(i, i + 1000));
      } finally {
        await producer.close();
      }
      print({ replayed: entries.length, to: rawTopic, groups: countBy(entries), ...skipped });
      return 0;
    }
    default:
      return fail(USAGE);
  }
}

function summary(e: DlqEntry): Record<string, unknown> {
  return { at: `${e.partition}:${e.offset}`, time: e.time, reason: e.reason, contract: e.contract, producer: e.producer, eventId: e.eventId ?? null, source: e.source, detail: e.detail };
}

function isUtf8Text(b: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(b);
    return !b.includes(0);
  } catch {
    return false;
  }
}

function print(value: unknown): void {
  console.log(JSON.stringify(value));
}

function fail(message: string): number {
  console.error(message);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? `${(err as { code?: string }).code ?? 'ERROR'}: ${err.message}` : err);
    process.exit(1);
  },
);
