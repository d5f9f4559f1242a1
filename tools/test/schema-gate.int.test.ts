import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRegistryClient, orders, registerContract } from '@sluice/contracts';
import { CANDIDATES, type CandidateName } from '../src/schema-gate/candidates';
import { checkContract } from '../src/schema-gate/gate';
import { testRegistryUrl } from '@sluice/testing';

// The schema gate CLI as CI runs it, on real breaking changes, and the real registry's verdict on
// the same changes (they must agree).
const run = promisify(execFile);
const root = join(__dirname, '..', '..');
const cli = join(root, 'tools', 'src', 'schema-gate', 'cli.ts');
const dir = mkdtempSync(join(process.env.SLUICE_TEST_DIR ?? tmpdir(), 'schema-gate-'));

const registryUrl = testRegistryUrl();

async function gate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('npx', ['tsx', cli, ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function candidateFile(name: CandidateName): string {
  const file = join(dir, `${name}.avsc`);
  writeFileSync(file, JSON.stringify(CANDIDATES[name], null, 2));
  return file;
}

describe('schema-gate CLI', () => {
  it('passes the repository history of every contract', async () => {
    const result = await gate();
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('schema-gate: 3 checked, 0 broken');
    expect(result.stdout).toContain('orders: versions 1, 2; declared FULL_TRANSITIVE — OK');
  });

  it('accepts a candidate that adds an optional field', async () => {
    const result = await gate('--contract', 'orders', '--candidate', candidateFile('addOptionalField'));
    expect(result.code).toBe(0);
  });

  it.each([
    ['removeRequiredField', 'field "payload.currency" is not in the writer\'s schema and has no default'],
    ['changeType', 'type of "payload.total_cents" changed from long to string'],
    ['renameWithoutAlias', 'it looks renamed from "customer_id"'],
    ['removeEnumSymbol', 'the writer may write "cancelled"'],
    ['removeOptionalField', 'field "payload.coupon_code" of version 2 is not in version 3'],
  ] as [CandidateName, string][])('rejects %s with exit 1 and says what breaks where', async (name, words) => {
    const result = await gate('--contract', 'orders', '--candidate', candidateFile(name));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('BROKEN');
    expect(result.stdout).toContain(words);
    expect(result.stdout).toContain('schema-gate: 1 checked, 1 broken');
  });

  it('prints machine-readable reports with --json', async () => {
    const result = await gate('--contract', 'orders', '--candidate', candidateFile('changeType'), '--json');
    expect(result.code).toBe(1);
    const [report] = JSON.parse(result.stdout) as { ok: boolean; levels: { level: string; findings: unknown[] }[] }[];
    expect(report.ok).toBe(false);
    expect(report.levels.find((l) => l.level === 'BACKWARD')?.findings.length).toBeGreaterThan(0);
  });

  it('exits 2 on usage errors and unknown contracts', async () => {
    expect((await gate('--candidate', 'x.avsc')).code).toBe(2);
    expect((await gate('--contract', 'users')).code).toBe(2);
    expect((await gate('--contract', 'orders', '--candidate', join(dir, 'missing.avsc'))).code).toBe(2);
  });
});

// The gate's Avro verdict must be the registry's. Beyond Avro it refuses more: a version that drops
// a field an earlier version had (Avro lets an optional one go; validate would drop its values).
const STRICTER_THAN_AVRO: ReadonlySet<CandidateName> = new Set(['removeOptionalField']);

describe('the gate and the real registry agree', () => {
  const client = createRegistryClient({ url: registryUrl, fetch });

  it.each(Object.keys(CANDIDATES) as CandidateName[])('on %s under FULL_TRANSITIVE', async (name) => {
    const subject = `sluice-test-gate-${randomUUID()}-value`;
    await registerContract(client, orders, subject); // sets FULL_TRANSITIVE, registers v1 and v2
    const registry = await client.checkCompatibility(subject, CANDIDATES[name]);
    const report = checkContract(orders, CANDIDATES[name]);
    const avroFindings = report.levels.find((l) => l.level === 'FULL_TRANSITIVE')?.findings;
    expect(avroFindings).toBeDefined();
    expect(registry.compatible).toBe(avroFindings?.length === 0);
    if (STRICTER_THAN_AVRO.has(name)) {
      expect(registry.compatible).toBe(true);
      expect(report.ok).toBe(false);
      expect(report.problems).toEqual([expect.stringContaining('is not in version 3')]);
    } else {
      expect(report.ok).toBe(registry.compatible);
    }
  });
});
