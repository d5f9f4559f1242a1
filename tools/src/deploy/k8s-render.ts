import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { schemaLocation } from './k8s-schemas';

/** Repository root. */
export const REPO_ROOT = join(__dirname, '../../..');

/** Where tools/setup/steps.d/40-k8s-tools.sh put kustomize, kubeconform, the schemas and promql-check. */
export interface K8sTools {
  readonly kustomize: string;
  readonly kubeconform: string;
  readonly schemas: string;
  /** deploy/prometheus/promql-check, built: Prometheus' rule-file and PromQL parsers. */
  readonly promqlCheck: string;
}

/** Reads the tool paths from the setup step; throws a message naming the step when one is missing. */
export function k8sTools(): K8sTools {
  const out = execFileSync('bash', [join(REPO_ROOT, 'tools/setup/steps.d/40-k8s-tools.sh'), '--paths'], { encoding: 'utf8' });
  const paths = Object.fromEntries(out.trim().split('\n').map((l) => l.split('=', 2) as [string, string]));
  const tools = { kustomize: paths.kustomize, kubeconform: paths.kubeconform, schemas: paths.schemas, promqlCheck: paths.promqlcheck };
  for (const p of [tools.kustomize, tools.kubeconform, join(tools.schemas, '.complete'), tools.promqlCheck]) {
    if (!p || !existsSync(p)) throw new Error(`${p} is missing: run bash tools/setup/steps.d/40-k8s-tools.sh`);
  }
  return tools;
}

/** A rendered Kubernetes object (loosely typed: tests read what they check). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: any; data?: Record<string, string> };

/** `kustomize build deploy/k8s/overlays/<overlay>`: the YAML text. */
export function renderOverlay(tools: K8sTools, overlay: string): string {
  return execFileSync(tools.kustomize, ['build', join(REPO_ROOT, 'deploy/k8s/overlays', overlay)], { encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** Parses a YAML stream into objects. */
export function parseManifests(yaml: string): K8sObject[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** Runs kubeconform (strict, offline schemas) on a YAML stream; `ok` and its output. */
export function kubeconform(tools: K8sTools, yaml: string): { ok: boolean; output: string } {
  const r = spawnSync(tools.kubeconform, ['-strict', '-summary', '-schema-location', schemaLocation(tools.schemas), '-'], {
    input: yaml,
    encoding: 'utf8',
  });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}
