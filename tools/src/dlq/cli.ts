/**
 * DLQ tool: count, list, show and replay dead-lettered events (usage: args.ts).
 *
 * replay writes each selected record back to the raw topic with its original key, bytes and
 * headers (DLQ headers removed, `sluice-replay-of` added); the event keeps its event_id, so
 * replaying twice is harmless downstream. Replay only after the cause is fixed (a contract
 * change deployed, a producer bug fixed), or the events come straight back to the DLQ, each as
 * a record marked as a failed replay; a replay sends each event once, however many of its DLQ
 * records it selects (ReplayOnce). A record
 * cut to fit a Kafka message (`sluice-dlq-truncated`) is not replayed: the output lists it with
 * its source coordinates, where the original is while the raw topic keeps it. --limit counts
 * the records replayed.
 */
import { KafkaProducer } from '@sluice/kafka';
import { parseDlqArgs } from './args';
import { Counts, describe, matches, ReplayOnce, toReplayRecord, type DlqEntry } from './dlq-record';
import { scanTopic } from './read-dlq';

/** How long a DLQ scan may go without progress before the tool gives up, ms. */
const DLQ_IDLE_TIMEOUT_MS = 60_000;

/** A replay sends at most this many records, or this many bytes, at once. */
const REPLAY_BATCH_RECORDS = 1000;
const REPLAY_BATCH_BYTES = 32 * 1024 * 1024;

async function main(argv: string[]): Promise<number> {
  const parsed = parseDlqArgs(argv, process.env);
  if (!parsed.ok) return fail(parsed.message);
  const { command, brokers, security, dlqTopic, rawTopic, filter, position, limit, warnings } = parsed.invocation;
  for (const w of warnings) console.error(`note: ${w}`);

  // Every command scans the DLQ once, holding only what it prints (a DLQ of millions of records
  // would not fit in memory), and fails only when the scan stops making progress.
  const found = new Set<string>();
  let cutShort = false;
  // --at reads only the partitions it names, from the lowest offset named to the highest.
  const ranges = filter.positions?.length ? rangesOf(filter.positions) : undefined;
  const scan = (onEntry: (e: DlqEntry) => boolean | void | Promise<boolean | void>) =>
    scanTopic(brokers, dlqTopic, { isolation: 'read_committed', idleTimeoutMs: DLQ_IDLE_TIMEOUT_MS, ranges, security }, async (m) => {
      const e = describe(m);
      if (!matches(e, filter)) return undefined;
      if (filter.positions?.length) found.add(`${e.partition}:${e.offset}`);
      const more = await onEntry(e);
      if (more === false) cutShort = true;
      return more;
    });
  // An --at that selected nothing is an answer too: a replay of a mistyped position printed
  // {"replayed":0} and exited 0, as if it had done what was asked.
  const missing = (): number => {
    const absent = cutShort ? [] : (filter.positions ?? []).filter((p) => !found.has(p));
    if (absent.length > 0) console.error(`no DLQ record matching the filters at ${absent.join(', ')}`);
    return absent.length > 0 ? 1 : 0;
  };

  switch (command) {
    case 'count': {
      const counts = new Counts();
      await scan((e) => counts.add(e));
      if (parsed.invocation.json) print({ total: counts.total, groups: counts.rows() });
      else {
        console.log(`total ${counts.total}`);
        for (const r of counts.rows()) console.log(`${String(r.count).padStart(8)}  ${r.reason.padEnd(28)} ${r.contract}`);
      }
      return missing();
    }
    case 'list': {
      let listed = 0;
      await scan((e) => {
        if (parsed.invocation.json) print(summary(e));
        else console.log(`${e.partition}:${e.offset}\t${e.time}\t${e.reason}\t${printable(e.contract)}\t${printable(e.producer)}\t${printable(e.eventId ?? '-')}${e.replayOf ? `\treplay of ${printable(e.replayOf)}` : ''}`);
        return ++listed < limit;
      });
      return missing();
    }
    case 'show': {
      const { partition, offset } = position!;
      let entry: DlqEntry | undefined;
      // Only that partition, from that offset: the first record read is the one, or it is gone.
      await scanTopic(brokers, dlqTopic, { isolation: 'read_committed', idleTimeoutMs: DLQ_IDLE_TIMEOUT_MS, ranges: new Map([[partition, { from: offset, to: offset }]]), security }, (m) => {
        if (m.offset === offset) entry = describe(m);
        return false;
      });
      if (!entry) return fail(`no DLQ record at ${partition}:${offset}`);
      const { message } = entry;
      const value = message.value;
      print({
        ...summary(entry),
        key: message.key?.toString('utf8') ?? null,
        // A repeated name shows every value, in order.
        headers: Object.fromEntries(Object.entries(message.headers).map(([k, v]) => [k, message.repeatedHeaders?.[k]?.map((one) => one.toString('utf8')) ?? v.toString('utf8')])),
        value: value === null ? null : isUtf8Text(value) ? value.toString('utf8') : { base64: value.toString('base64') },
      });
      return 0;
    }
    case 'replay': {
      // A record cut to fit the DLQ no longer holds the original bytes: replaying it would send a
      // broken event. Its original is at its source coordinates, which are listed instead.
      // Records go out in batches as the scan finds them (memory stays bounded); a scan that fails
      // halfway has replayed part of the selection, which running it again makes whole (replays
      // land once downstream).
      const replayed = new Counts();
      const notReplayed: Record<string, unknown>[] = [];
      const once = new ReplayOnce<DlqEntry>(dlqTopic);
      let alreadyReplayed = 0;
      const dryRun = parsed.invocation.dryRun;
      const producer = dryRun ? undefined : new KafkaProducer({ brokers, security, clientId: 'sluice-dlq-replay' });
      await producer?.connect();
      try {
        let pending: ReturnType<typeof toReplayRecord>[] = [];
        let pendingBytes = 0;
        const flush = async () => {
          if (producer && pending.length > 0) await producer.sendBatch(pending.map((r) => ({ topic: rawTopic, ...r })));
          pending = [];
          pendingBytes = 0;
        };
        const replay = async (e: DlqEntry) => {
          replayed.add(e);
          const record = toReplayRecord(e, dlqTopic);
          pending.push(record);
          pendingBytes += (record.key?.length ?? 0) + (record.value?.length ?? 0) + headerBytes(record.headers);
          // Bounded by bytes too, headers included: a thousand DLQ records of up to 900 kB each
          // (up to ~450 kB of it headers) were held here at once.
          if (pending.length >= REPLAY_BATCH_RECORDS || pendingBytes >= REPLAY_BATCH_BYTES) await flush();
        };
        await scan(async (e) => {
          if (e.truncated !== undefined) {
            if (notReplayed.length < limit) notReplayed.push({ at: `${e.partition}:${e.offset}`, source: e.source, truncated: e.truncated });
            return true;
          }
          const verdict = once.take(e);
          if (verdict === 'skip') alreadyReplayed++;
          else if (verdict === 'replay') await replay(e);
          const decided = once.released();
          alreadyReplayed += decided.skipped;
          for (const d of decided.replay) await replay(d);
          // Waiting records may still be replayed: they count toward the limit until decided.
          return replayed.total + once.waitingRecords < limit;
        });
        for (const e of once.settle()) if (replayed.total < limit) await replay(e);
        await flush();
      } finally {
        await producer?.close();
      }
      const skipped = {
        ...(notReplayed.length > 0 ? { truncatedNotReplayed: notReplayed } : {}),
        // Failed replays of records this run replays: the same events, sent once.
        ...(alreadyReplayed > 0 ? { failedReplaysOfReplayedRecords: alreadyReplayed } : {}),
      };
      if (dryRun) print({ wouldReplay: replayed.total, to: rawTopic, groups: replayed.rows(), ...skipped });
      else print({ replayed: replayed.total, to: rawTopic, groups: replayed.rows(), ...skipped });
      return missing();
    }
  }
}

/** Per partition, the lowest and highest offset of `positions` (`partition:offset`). */
function rangesOf(positions: readonly string[]): Map<number, { from: number; to: number }> {
  const ranges = new Map<number, { from: number; to: number }>();
  for (const position of positions) {
    const [partition, offset] = position.split(':').map(Number);
    const range = ranges.get(partition);
    ranges.set(partition, range === undefined ? { from: offset, to: offset } : { from: Math.min(range.from, offset), to: Math.max(range.to, offset) });
  }
  return ranges;
}

/** Bytes of a record's headers: names and values, every value of a repeated name. */
function headerBytes(headers: Readonly<Record<string, Buffer | string | readonly Buffer[]>>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) bytes += Buffer.byteLength(name) + (typeof one === 'string' ? Buffer.byteLength(one) : one.length);
  }
  return bytes;
}

function summary(e: DlqEntry): Record<string, unknown> {
  return { at: `${e.partition}:${e.offset}`, time: e.time, reason: e.reason, contract: e.contract, producer: e.producer, eventId: e.eventId ?? null, source: e.source, replayOf: e.replayOf ?? null, detail: e.detail };
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

/** Text from a record (a producer may put anything there) with control characters escaped, for a terminal. */
function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

