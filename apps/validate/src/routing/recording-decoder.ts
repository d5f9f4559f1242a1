import { AvroDecoder, type AnyContract, type AvroSchema } from '@sluice/contracts';
import type { LearnedSchema } from './check-protocol';

/**
 * An AvroDecoder that lists the schema ids it is taught (by the registry learner), so the check
 * worker's own decoder can be taught the same ones.
 */
export class RecordingDecoder extends AvroDecoder {
  readonly learned: LearnedSchema[] = [];

  override addSchemaId(schemaId: number, contract: AnyContract, writerSchema: AvroSchema | object | string): void {
    super.addSchemaId(schemaId, contract, writerSchema);
    this.learned.push({ id: schemaId, contract: contract.name, schema: writerSchema });
  }
}
