// Benchmark of the contracts hot paths on one core (not a test; see docs/bench/contracts.md):
//   1. JSON bytes → decodeEvent (strict parse + schema + rules) → Avro single-object bytes
//   2. Avro decode: single-object bytes → event (same schema; and v1 writer → v2 reader)
//
//   npx tsx tools/bench/contracts/contracts-bench.ts [--rounds 5] [--seconds 2] [--events 20000] [--json]
//
// The code under test runs as it does in production: workloads.ts is bundled by deploy/bundle.sh
// with the settings the service images are built with, and each workload runs in its own node process, so
// no workload's type feedback shapes another's machine code (a validate process only ever runs
// its own path). Rates are per CPU-second of that process. Every round runs every workload once,
// baselines (JSON.parse + avsc with no checks; avsc alone) beside the paths they bound, so a
// burst of load on the shared machine hits both; the report gives the median over rounds and the
// median of the per-round ratios.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, bundleEntry } from '../../src/bench/service-bundle';
import { WORKLOAD_NAMES } from './workloads';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const ROUNDS = arg('rounds', 5);
const SECONDS = arg('seconds', 2);
const EVENTS = arg('events', 20_000);

interface Sample {
  readonly workload: string;
  readonly opsPerCpuSecond: number;
  readonly avgInputBytes: number;
}

function run(script: string, workload: string): Sample {
  // node_modules resolve from the workspace root, as in the service images.
  const out = execFileSync(process.execPath, [script, workload, String(SECONDS), String(EVENTS)], { cwd: ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim()) as Sample;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main(): Promise<void> {
  // Built by deploy/bundle.sh with the services' esbuild settings.
  const script = await bundleEntry(join(__dirname, 'workloads.ts'), join(ROOT, '.sluice', 'bench', 'contracts'));
  const rates = new Map<string, number[]>(WORKLOAD_NAMES.map((w) => [w, []]));
  const bytes = new Map<string, number>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const workload of WORKLOAD_NAMES) {
      const sample = run(script, workload);
      rates.get(workload)!.push(sample.opsPerCpuSecond);
      bytes.set(workload, sample.avgInputBytes);
    }
    process.stderr.write(`round ${round}/${ROUNDS}: JSON → validate → Avro ${Math.round(rates.get('jsonValidateAvroEncode')!.at(-1)! / 1000)}k/s\n`);
  }
  const ratio = (path: string, baseline: string) => median(rates.get(path)!.map((r, i) => r / rates.get(baseline)![i]));
  const results = {
    events: EVENTS,
    rounds: ROUNDS,
    secondsPerSample: SECONDS,
    avgJsonBytes: bytes.get('jsonValidateAvroEncode'),
    avgAvroBytes: bytes.get('avroDecodeSameSchema'),
    medianOpsPerCpuSecond: Object.fromEntries([...rates].map(([w, r]) => [w, Math.round(median(r))])),
    samples: Object.fromEntries([...rates].map(([w, r]) => [w, r.map(Math.round)])),
    ratios: {
      jsonValidateAvroEncodeVsBaseline: ratio('jsonValidateAvroEncode', 'baselineJsonParseAvroEncode'),
      avroDecodeVsAvsc: ratio('avroDecodeSameSchema', 'baselineAvscFromBuffer'),
    },
  };
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    return;
  }
  const m = results.medianOpsPerCpuSecond;
  const k = (n: number) => `${Math.round(n / 1000)}k/s`;
  const spread = (w: string) => `[${rates.get(w)!.map((r) => Math.round(r / 1000)).join(' ')}]`;
  process.stdout.write(
    [
      `orders events: ${EVENTS} distinct, ~${results.avgJsonBytes} B JSON, ~${results.avgAvroBytes} B Avro single-object; median of ${ROUNDS} rounds, each workload in its own bundled process`,
      `JSON → validate → Avro encode      ${k(m.jsonValidateAvroEncode)} ${spread('jsonValidateAvroEncode')}  (goal ≥ 200k/s; baseline JSON.parse + avsc encode, no checks: ${k(m.baselineJsonParseAvroEncode)} ${spread('baselineJsonParseAvroEncode')}, ratio ${results.ratios.jsonValidateAvroEncodeVsBaseline.toFixed(2)})`,
      `JSON → validate (no encode)        ${k(m.jsonValidateOnly)}`,
      `JSON v1 → validate → Avro v2      ${k(m.jsonV1ValidateAvroEncode)} (an older producer: checked against v1, resolved into v2)`,
      `Avro decode, same schema           ${k(m.avroDecodeSameSchema)}  (goal ≥ 500k/s; baseline avsc fromBuffer: ${k(m.baselineAvscFromBuffer)}, ratio ${results.ratios.avroDecodeVsAvsc.toFixed(2)})`,
      `Avro decode, v1 writer → v2 reader ${k(m.avroDecodeV1WriterV2Reader)}`,
      `Avro decode + validate rules       ${k(m.avroDecodeAndValidate)}`,
    ].join('\n') + '\n',
  );
}

void main();
