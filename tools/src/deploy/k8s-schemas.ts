import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * Offline JSON schemas for kubeconform. kubeconform normally downloads them from GitHub; here
 * they are generated from inputs the Go module proxy serves: the Kubernetes OpenAPI v2 spec
 * (k8s.io/kubernetes/api/openapi-spec/swagger.json) and CRD manifests (KEDA's ScaledObject
 * from github.com/kedacore/keda/v2/config/crd/bases). The transformations follow kubeconform's
 * own openapi2jsonschema.py: objects with properties refuse unknown fields (strict), and
 * int-or-string fields accept both. Quantities accept numbers as YAML writes `cpu: 1`.
 */

type Json = Record<string, unknown>;

/** File name kubeconform looks up for a kind: `<kind>[-<group prefix>]-<version>.json`, lower case. */
export function schemaFileName(group: string, version: string, kind: string): string {
  const prefix = group === '' ? '' : `-${group.split('.')[0]}`;
  return `${kind}${prefix}-${version}.json`.toLowerCase();
}

/** The kubeconform `-schema-location` template matching {@link schemaFileName} in `dir`. */
export function schemaLocation(dir: string): string {
  return `${dir}/{{ .ResourceKind }}{{ .KindSuffix }}.json`;
}

const INT_OR_STRING = { oneOf: [{ type: 'string' }, { type: 'integer' }] };
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

/** Makes a schema strict and replaces int-or-string formats, recursively, without mutating it. */
export function strictify(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictify);
  if (node === null || typeof node !== 'object') return node;
  const obj = node as Json;
  if (obj.format === 'int-or-string') return { ...INT_OR_STRING, ...(obj.description ? { description: obj.description } : {}) };
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) {
    // Property names are data, not schema keywords: recurse into their values only.
    out[k] = k === 'properties' && v && typeof v === 'object' ? mapValues(v as Json, strictify) : strictify(v);
  }
  const preserves = obj['x-kubernetes-preserve-unknown-fields'] === true;
  if ('properties' in obj && !('additionalProperties' in obj) && !preserves) out.additionalProperties = false;
  return out;
}

function mapValues(o: Json, f: (v: unknown) => unknown): Json {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));
}

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

/**
 * Writes one standalone schema per kind of the swagger spec (definitions reachable from the
 * kind are embedded under `definitions`, `$ref`s kept) and returns the file names written.
 * `kinds` limits the output (e.g. `['apps/v1/Deployment']`); all kinds when omitted.
 */
export function writeKubernetesSchemas(swagger: Json, outDir: string, kinds?: readonly string[]): string[] {
  const defs = (swagger.definitions ?? {}) as Record<string, Json>;
  const converted = new Map<string, unknown>();
  const convert = (name: string): unknown => {
    if (!converted.has(name)) {
      converted.set(name, name === QUANTITY ? { oneOf: [{ type: 'string' }, { type: 'number' }] } : strictify(defs[name]));
    }
    return converted.get(name);
  };
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const [name, def] of Object.entries(defs)) {
    const gvks = (def['x-kubernetes-group-version-kind'] ?? []) as Gvk[];
    // List kinds and the like carry several GVKs; a kind's own definition carries one.
    if (gvks.length !== 1) continue;
    const { group, version, kind } = gvks[0];
    const id = `${group === '' ? '' : group + '/'}${version}/${kind}`;
    if (kinds && !kinds.includes(id)) continue;
    const reachable = new Set<string>();
    collectRefs(def, defs, reachable);
    const schema = {
      ...(convert(name) as Json),
      definitions: Object.fromEntries([...reachable].sort().map((n) => [n, convert(n)])),
    };
    const file = schemaFileName(group, version, kind);
    writeFileSync(join(outDir, file), JSON.stringify(schema));
    written.push(file);
  }
  return written.sort();
}

function collectRefs(node: unknown, defs: Record<string, Json>, seen: Set<string>): void {
  if (Array.isArray(node)) {
    for (const n of node) collectRefs(n, defs, seen);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/')) {
      const name = v.slice('#/definitions/'.length);
      if (!seen.has(name) && defs[name]) {
        seen.add(name);
        collectRefs(defs[name], defs, seen);
      }
    } else {
      collectRefs(v, defs, seen);
    }
  }
}

/** Writes a strict schema for every served version of every CRD in a YAML stream; returns the file names. */
export function writeCrdSchemas(crdYaml: string, outDir: string): string[] {
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const doc of parseAllDocuments(crdYaml)) {
    const crd = doc.toJS() as {
      kind?: string;
      spec?: { group: string; names: { kind: string }; versions: Array<{ name: string; schema?: { openAPIV3Schema?: Json } }> };
    } | null;
    if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec) continue;
    for (const v of crd.spec.versions) {
      const schema = v.schema?.openAPIV3Schema;
      if (!schema) continue;
      const file = schemaFileName(crd.spec.group, v.name, crd.spec.names.kind);
      writeFileSync(join(outDir, file), JSON.stringify(strictify(schema)));
      written.push(file);
    }
  }
  return written.sort();
}

/** CLI: `tsx k8s-schemas.ts <swagger.json> <out-dir> [crd.yaml ...]`. */
export function main(argv: readonly string[]): number {
  const [swaggerPath, outDir, ...crds] = argv;
  if (!swaggerPath || !outDir) {
    process.stderr.write('usage: k8s-schemas.ts <swagger.json> <out-dir> [crd.yaml ...]\n');
    return 2;
  }
  const k8s = writeKubernetesSchemas(JSON.parse(readFileSync(swaggerPath, 'utf8')) as Json, outDir);
  const custom = crds.flatMap((c) => writeCrdSchemas(readFileSync(c, 'utf8'), outDir));
  process.stdout.write(`wrote ${k8s.length} Kubernetes and ${custom.length} CRD schemas to ${outDir}\n`);
  return k8s.length > 0 ? 0 : 1;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
