// schema-gate: checks every contract's schema history (or a candidate next version) for Avro
// compatibility under BACKWARD / FORWARD / FULL and their transitive forms, explains each break
// in plain words, and exits 1 when a contract's declared level breaks (2 on usage errors).
//
//   npx tsx tools/src/schema-gate/cli.ts                       every contract's history
//   npx tsx tools/src/schema-gate/cli.ts --contract orders --candidate next.avsc
//   npx tsx tools/src/schema-gate/cli.ts --json                machine-readable reports
//   npx tsx tools/src/schema-gate/cli.ts --export-avsc libs/contracts/schemas
//                                     writes <dir>/<contract>/v<N>.avsc for tools outside TypeScript
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTRACT_NAMES, CONTRACTS, contractByName } from '@sluice/contracts';
import { checkContract, renderReport, type HistoryReport } from './gate';

interface Args {
  contract?: string;
  candidate?: string;
  exportAvsc?: string;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--contract') args.contract = argv[++i];
    else if (a === '--candidate') args.candidate = argv[++i];
    else if (a === '--export-avsc') args.exportAvsc = argv[++i];
    else if (a === '--help' || a === '-h') throw new UsageError('');
    else throw new UsageError(`unknown argument: ${a}`);
  }
  if (args.candidate !== undefined && args.contract === undefined) throw new UsageError('--candidate needs --contract');
  return args;
}

class UsageError extends Error {}

const USAGE = 'usage: schema-gate [--contract NAME [--candidate FILE.avsc]] [--json] | --export-avsc DIR';

/** Writes every schema version as pretty JSON, the form libs/contracts/schemas keeps. */
function exportAvsc(dir: string): void {
  for (const contract of Object.values(CONTRACTS)) {
    mkdirSync(join(dir, contract.name), { recursive: true });
    for (const v of contract.versions) {
      writeFileSync(join(dir, contract.name, `v${v.version}.avsc`), `${JSON.stringify(v.schema, null, 2)}\n`);
    }
  }
}

function main(argv: string[]): number {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      if (err.message !== '') process.stderr.write(`schema-gate: ${err.message}\n`);
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  if (args.exportAvsc !== undefined) {
    exportAvsc(args.exportAvsc);
    process.stdout.write(`schema-gate: wrote .avsc files under ${args.exportAvsc}\n`);
    return 0;
  }
  const names = args.contract === undefined ? [...CONTRACT_NAMES] : [args.contract];
  const reports: HistoryReport[] = [];
  for (const name of names) {
    const contract = contractByName(name);
    if (contract === undefined) {
      process.stderr.write(`schema-gate: no contract named "${name}" (known: ${CONTRACT_NAMES.join(', ')})\n`);
      return 2;
    }
    let candidate: object | undefined;
    if (args.candidate !== undefined) {
      try {
        candidate = JSON.parse(readFileSync(args.candidate, 'utf8')) as object;
      } catch (err) {
        process.stderr.write(`schema-gate: cannot read candidate ${args.candidate}: ${(err as Error).message}\n`);
        return 2;
      }
    }
    reports.push(checkContract(contract, candidate));
  }
  const broken = reports.filter((r) => !r.ok);
  if (args.json) process.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
  else {
    for (const r of reports) process.stdout.write(`${renderReport(r)}\n`);
    process.stdout.write(`schema-gate: ${reports.length} checked, ${broken.length} broken\n`);
  }
  return broken.length === 0 ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
