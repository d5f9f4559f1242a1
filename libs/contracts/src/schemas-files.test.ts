import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTRACTS } from './contracts';

// libs/contracts/schemas/<contract>/v<N>.avsc are the schemas for tools outside TypeScript
// (Spark, avro-tools, other registries). The TypeScript objects are the source; the files must
// match them exactly. Regenerate: npx tsx tools/src/schema-gate/cli.ts --export-avsc libs/contracts/schemas
const dir = join(__dirname, '..', 'schemas');

describe('exported .avsc files', () => {
  it('exist for every version of every contract, and only for those', () => {
    const expected = Object.values(CONTRACTS).flatMap((c) => c.versions.map((v) => `${c.name}/v${v.version}.avsc`)).sort();
    const actual = readdirSync(dir).flatMap((name) => readdirSync(join(dir, name)).map((f) => `${name}/${f}`)).sort();
    expect(actual).toEqual(expected);
  });

  it.each(Object.values(CONTRACTS).flatMap((c) => c.versions.map((v) => [c.name, v.version, v.schema] as const)))('%s v%i matches its TypeScript schema', (name, version, schema) => {
    const file = JSON.parse(readFileSync(join(dir, name, `v${version}.avsc`), 'utf8')) as unknown;
    expect(file).toEqual(JSON.parse(JSON.stringify(schema)));
  });
});
