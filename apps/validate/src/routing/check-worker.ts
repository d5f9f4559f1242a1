/**
 * The check worker thread: decodes and checks raw values against their contracts (JSON or Avro
 * in, the latest schema's Avro out) off the main thread, which keeps the Kafka client busy
 * meanwhile. Started by WorkerChecks; answers each CheckRequest with one CheckResponse.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AvroDecoder, CONTRACTS, contractByName } from '@sluice/contracts';
import { answerChecks } from './check-answer';
import { contractsForValidate } from './contracts-adapter';
import { transferablesOf } from './packed';
import type { CheckRefusal, CheckRequest, CheckWorkerSettings } from './check-protocol';

const port = parentPort;
if (!port) throw new Error('check-worker runs as a worker thread only');
const settings = workerData as CheckWorkerSettings;
const decoder = new AvroDecoder(Object.values(CONTRACTS));
/** The clock of the request being answered. */
let now = 0;
const contracts = contractsForValidate({ validTopicPrefix: settings.validTopicPrefix, limits: settings.limits, now: () => now, avro: decoder });

port.on('message', (request: CheckRequest) => {
  try {
    for (const learned of request.learned) {
      const contract = contractByName(learned.contract);
      if (!contract) throw new Error(`schema id ${learned.id} is taught for ${learned.contract}, which is no contract`);
      decoder.addSchemaId(learned.id, contract, learned.schema);
    }
    now = request.now;
    const response = answerChecks(request, contracts, settings.maxEventBytes);
    port.postMessage(response, [response.status.buffer, response.targetOf.buffer, ...transferablesOf(response.values)]);
  } catch (err) {
    const refusal: CheckRefusal = { id: request.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
    port.postMessage(refusal);
  }
});
