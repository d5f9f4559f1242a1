import { BatchConsumer, KafkaAdmin, KafkaProducer } from '@sluice/kafka';
(async () => {
  const brokers = '127.0.0.1:19092'; const topic = 'zz-' + Date.now();
  const admin = new KafkaAdmin({ brokers }); await admin.createTopic({ name: topic, partitions: 3 }); await admin.close();
  const p = new KafkaProducer({ brokers }); await p.connect(); await p.sendBatch([1,2,3,4,5].map((i) => ({ topic, key: 'k' + i, value: 'v' + i }))); await p.close();
  const c = new BatchConsumer({ brokers, groupId: 'rd-' + Date.now(), topics: [topic], maxBatchWaitMs: 200 });
  console.time('connect'); await c.connect(); console.timeEnd('connect');
  let n = 0; const t = Date.now();
  while (n < 5 && Date.now() - t < 20000) { const b = await c.poll(); n += b.length; console.log('poll', b.length, Date.now() - t); }
  console.time('close'); await c.close(); console.timeEnd('close');
})();
