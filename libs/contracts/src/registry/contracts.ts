import type { AvroDecoder } from '../avro/codec';
import type { AnyContract } from '../contract';
import { CONTRACTS } from '../contracts';
import { RegistryError, type RegistryClient } from './client';

/**
 * Registers every schema version of `contract` under its subject, oldest first, after setting
 * the subject's compatibility level — so the registry's history mirrors the repository's and
 * refuses what the schema gate would refuse. Idempotent. Returns schema version → registry id.
 */
export async function registerContract(client: RegistryClient, contract: AnyContract, subject = contract.subject): Promise<Map<number, number>> {
  await client.setCompatibility(contract.compatibility, subject);
  const ids = new Map<number, number>();
  for (const v of contract.versions) ids.set(v.version, await client.register(subject, v.schema));
  return ids;
}

/** The contract whose schemas carry this record full name (names are unique across contracts). */
export function contractForSchema(schema: string | object): AnyContract | undefined {
  let parsed: unknown = schema;
  if (typeof schema === 'string') {
    try {
      parsed = JSON.parse(schema);
    } catch {
      return undefined;
    }
  }
  const name = (parsed as { name?: unknown; namespace?: unknown })?.name;
  if (typeof name !== 'string') return undefined;
  const namespace = (parsed as { namespace?: unknown }).namespace;
  const full = name.includes('.') || typeof namespace !== 'string' ? name : `${namespace}.${name}`;
  return Object.values(CONTRACTS).find((c) => c.latest.schema.name === full);
}

/**
 * Fetches the writer schema of a Confluent schema id from the registry and teaches it to the
 * decoder, so the next `decode` of such bytes succeeds. Call it on `AVRO_WRITER_UNKNOWN`.
 * Throws REGISTRY_SCHEMA_NOT_FOUND when the schema belongs to no known contract, and
 * REGISTRY_SCHEMA_INVALID when the contract's latest schema cannot read data written with it.
 */
export async function learnSchemaId(decoder: AvroDecoder, client: RegistryClient, id: number): Promise<AnyContract> {
  const schema = await client.getSchemaById(id);
  const contract = contractForSchema(schema);
  if (contract === undefined) throw new RegistryError('REGISTRY_SCHEMA_NOT_FOUND', `schema id ${id} is not the schema of any known contract`);
  try {
    decoder.addSchemaId(id, contract, schema);
  } catch (err) {
    // The registry holds a schema under this contract's name that the latest reader cannot
    // resolve (or that is not valid Avro): events written with it cannot be read.
    throw new RegistryError('REGISTRY_SCHEMA_INVALID', `schema id ${id} cannot be read as ${contract.name}: ${(err as Error).message}`, { cause: err });
  }
  return contract;
}
