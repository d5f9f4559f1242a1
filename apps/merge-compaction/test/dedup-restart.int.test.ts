import { CONTRACTS, HEADERS } from '@sluice/contracts';
import type { MergeApp } from '../src/app';
import type { OracleEvent, Send } from '../src/oracle/oracle';
import { produce, readRows, startApp, TestEnv, waitFor } from './support/harness';

// The same event_id arriving again after a restart (a producer retry, a DLQ replay, a
// redelivery) lands once: the dedup window is not process memory but rebuilt from bronze when
// the partition is assigned. With the watermark at 0 (dedup off) the same scenario lands the
// copy twice, which shows the check can fail.
describe('a duplicate event_id arriving after a restart', () => {
  const apps: MergeApp[] = [];
  const envs: TestEnv[] = [];
  const order = (id: string, eventId: string, eventTimeMs = Date.now()): Send => {
    const event: OracleEvent = {
      event_id: eventId,
      event_time: eventTimeMs,
      producer: 'test',
      schema_version: 1,
      version: 1,
      op: 'upsert',
      order_id: id,
      payload: { customer_id: 'c1', status: 'paid', total_cents: 100, currency: 'EUR', item_count: 1 },
    };
    return { contract: 'orders', key: id, event, duplicate: false };
  };

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    for (const env of envs) await env.close();
  });

  const start = (env: TestEnv, watermarkMs: number) => startApp(env, apps, { SLUICE_ROLES: 'tier1', SLUICE_DEDUP_WATERMARK_MS: String(watermarkMs) });

  /** Writes A, restarts, sends A's exact event again and then A2; returns bronze's rows per event_id and the second process. */
  async function scenario(label: string, watermarkMs: number): Promise<{ counts: Record<string, number>; second: MergeApp }> {
    const env = new TestEnv(label, [CONTRACTS.orders]);
    envs.push(env);
    await env.createTopics();
    const bronzeCount = async (where: string) => Number((await readRows(env, 'bronze_orders', `SELECT count(*) AS n FROM t WHERE ${where}`))[0]?.n ?? 0);
    const a = order('A', `${label}-evt-A`);
    const first = await start(env, watermarkMs);
    await produce(env, [a]);
    await waitFor('A in bronze', async () => (await bronzeCount(`order_id = 'A'`)) === 1, 60_000, 300);
    await first.stop();
    const second = await start(env, watermarkMs);
    // A second event of the same entity follows the copy on the same partition: once it is in
    // bronze, tier 1 has read (and judged) the copy too.
    await produce(env, [{ ...a, duplicate: true }, order('A', `${label}-evt-A2`)]);
    await waitFor('the record after the copy in bronze', async () => (await bronzeCount(`event_id = '${label}-evt-A2'`)) === 1, 60_000, 300);
    const rows = await readRows(env, 'bronze_orders', 'SELECT event_id, count(*) AS n FROM t GROUP BY event_id');
    return { counts: Object.fromEntries(rows.map((r) => [String(r.event_id), Number(r.n)])), second };
  }

  it('lands once with dedup on (the window is rebuilt from bronze), twice with it off', async () => {
    const on = await scenario('dedup-on', 24 * 3600_000);
    expect(on.counts).toEqual({ 'dedup-on-evt-A': 1, 'dedup-on-evt-A2': 1 });
    expect(on.second.tier1!.stats.duplicates).toBe(1);

    const off = await scenario('dedup-off', 0);
    expect(off.counts).toEqual({ 'dedup-off-evt-A': 2, 'dedup-off-evt-A2': 1 });
  }, 180_000);

  // A DLQ replay comes after a fix, hours or days after the event: far behind the watermark,
  // where tier 1 keeps records unchecked. A replay may also be run twice. validate carries the
  // DLQ tool's `sluice-replay-of` marker onto the valid record, and tier 1 then asks bronze.
  it('a DLQ replay older than the watermark lands once however often it is replayed; an unmarked late copy is not checked', async () => {
    const env = new TestEnv('replay-late', [CONTRACTS.orders]);
    envs.push(env);
    await env.createTopics();
    const count = async (eventId: string) => Number((await readRows(env, 'bronze_orders', `SELECT count(*) AS n FROM t WHERE event_id = '${eventId}'`))[0]?.n ?? 0);
    const app = await start(env, 10 * 60_000);
    const twoHoursAgo = Date.now() - 2 * 3600_000;
    // A fresh event of the entity moves the partition's watermark to now.
    await produce(env, [order('R', 'replay-late-fresh')]);
    await waitFor('the fresh event in bronze', async () => (await count('replay-late-fresh')) === 1, 60_000, 300);
    const replayed = order('R', 'replay-late-old', twoHoursAgo);
    const marker = { headers: { [HEADERS.replayOf]: 'sluice.dlq/0/1' } };
    await produce(env, [replayed], marker);
    await waitFor('the first replay in bronze', async () => (await count('replay-late-old')) === 1, 60_000, 300);
    await produce(env, [{ ...replayed, duplicate: true }], marker);
    // Without the marker, a late copy is kept unchecked (at-least-once behind the watermark).
    const late = order('R', 'replay-late-unmarked', twoHoursAgo);
    await produce(env, [late]);
    await waitFor('the unmarked late event in bronze', async () => (await count('replay-late-unmarked')) === 1, 60_000, 300);
    await produce(env, [{ ...late, duplicate: true }, order('R', 'replay-late-after')]);
    await waitFor('the record after the copies in bronze', async () => (await count('replay-late-after')) === 1, 60_000, 300);
    expect(await count('replay-late-old')).toBe(1);
    expect(await count('replay-late-unmarked')).toBe(1 + 1);
    expect(app.tier1!.stats.dedupBronzeDuplicates).toBe(1);
  }, 120_000);
});

