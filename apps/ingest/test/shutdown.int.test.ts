import { KEYS, createTopics, order, randomName, readTopic, testBrokers, startIngest } from './support';

const brokers = testBrokers();

it('graceful shutdown: stops accepting, answers every request in flight, and every 200 is in Kafka', async () => {
  const rawTopic = randomName('raw-shutdown');
  await createTopics(brokers, [rawTopic]);
  const { ingest, url: baseUrl } = await startIngest(brokers, rawTopic);

  const acked = new Set<string>();
  const statuses: number[] = [];
  const send = async () => {
    const events = Array.from({ length: 100 }, () => order());
    try {
      const res = await fetch(`${baseUrl}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson' },
        body: events.map((e) => JSON.stringify(e)).join('\n'),
      });
      statuses.push(res.status);
      if (res.status === 200) for (const e of events) acked.add(e.event_id as string);
      await res.arrayBuffer();
    } catch {
      statuses.push(-1); // refused or reset before a request was read: nothing was accepted
    }
  };
  await send(); // warm the HTTP client up, so the requests below are on the wire at once
  const inFlight = Array.from({ length: 30 }, (_, i) => new Promise((r) => setTimeout(r, i * 5)).then(send));
  // Shut down while requests hold budget, i.e. are being read, checked or produced.
  const until = Date.now() + 20_000;
  while (ingest.budget.inUse === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
  const busyAtShutdown = ingest.budget.inUse > 0;
  await Promise.all([ingest.close(), ...inFlight]);

  expect(busyAtShutdown).toBe(true);
  expect(statuses.length).toBe(31);
  for (const s of statuses) expect([200, 503, -1]).toContain(s);
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(1);
  const records = await readTopic(brokers, rawTopic, acked.size);
  const inKafka = new Set(records.map((r) => JSON.parse(r.value!.toString()).event_id as string));
  expect([...acked].filter((id) => !inKafka.has(id))).toEqual([]);
}, 60_000);
