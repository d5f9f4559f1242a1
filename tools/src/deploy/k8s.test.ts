import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTRACT_NAMES, DLQ_TOPIC, RAW_TOPIC, goldTableName, tableName, validTopic, CONTRACTS } from '@sluice/contracts';
import { parse } from 'yaml';
import { type K8sObject, type K8sTools, REPO_ROOT, k8sTools, kubeconform, parseManifests, renderOverlay } from './k8s-render';
import { envProblems } from './service-env';
import { PINNED_OVERSHOOT } from '@sluice/lake';

// kustomize + kubeconform come from tools/setup/steps.d/40-k8s-tools.sh; a missing tool fails here.
const tools: K8sTools = k8sTools();
const OVERLAYS = ['dev', 'prod'] as const;
const rendered = Object.fromEntries(OVERLAYS.map((o) => [o, renderOverlay(tools, o)])) as Record<(typeof OVERLAYS)[number], string>;
const objects = Object.fromEntries(OVERLAYS.map((o) => [o, parseManifests(rendered[o])])) as Record<(typeof OVERLAYS)[number], K8sObject[]>;

const SERVICE_OF: Record<string, 'ingest' | 'validate' | 'merge-compaction' | 'query-api'> = {
  'sluice-ingest': 'ingest',
  'sluice-validate': 'validate',
  'sluice-merge-compaction': 'merge-compaction',
  'sluice-merge-folder': 'merge-compaction',
  'sluice-query-api': 'query-api',
};

function workloads(objs: K8sObject[]): K8sObject[] {
  return objs.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
}
function find(objs: K8sObject[], kind: string, name: string): K8sObject {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind} ${name} not rendered`);
  return o;
}
/** Env of a container resolved through its envFrom ConfigMaps (secret refs shown as "<secret>"). */
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { configMapKeyRef?: { name: string; key: string }; secretKeyRef?: { name: string; key: string } };
}
function envOf(objs: K8sObject[], container: { envFrom?: Array<{ configMapRef?: { name: string } }>; env?: EnvVar[] }): Map<string, string> {
  const env = new Map<string, string>();
  for (const src of container.envFrom ?? []) {
    const cm = find(objs, 'ConfigMap', src.configMapRef?.name as string);
    for (const [k, v] of Object.entries(cm.data ?? {})) env.set(k, v);
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef;
    const fromMap = ref ? find(objs, 'ConfigMap', ref.name).data?.[ref.key] : undefined;
    if (ref && fromMap === undefined) throw new Error(`${e.name} refers to a missing key ${ref.name}/${ref.key}`);
    env.set(e.name, e.value ?? fromMap ?? '<secret>');
  }
  return env;
}
/** Bytes of a Kubernetes quantity in Mi or Gi (the only units the manifests use). */
function bytesOf(quantity: unknown): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(String(quantity ?? ''));
  if (m === null) throw new Error(`not a Mi/Gi quantity: ${String(quantity)}`);
  return Number(m[1]) * (m[2] === 'Mi' ? 1024 ** 2 : 1024 ** 3);
}

function matches(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

describe.each(OVERLAYS)('kubernetes overlay %s', (overlay) => {
  const objs = objects[overlay];

  it('renders and validates strictly against the Kubernetes 1.34 and KEDA schemas, offline', () => {
    const r = kubeconform(tools, rendered[overlay]);
    expect(r.output).toMatch(/Invalid: 0, Errors: 0, Skipped: 0/);
    expect(r.ok).toBe(true);
    expect(objs.map((o) => o.kind).sort()).toEqual(
      expect.arrayContaining(['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Namespace', 'PodDisruptionBudget', 'ScaledObject', 'Service', 'StatefulSet']),
    );
    for (const o of objs) if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe(overlay === 'dev' ? 'sluice-dev' : 'sluice');
  });

  it('runs every workload non-root on a read-only root filesystem with a tmp emptyDir and resources', () => {
    expect(workloads(objs).map((w) => w.metadata.name).sort()).toEqual(Object.keys(SERVICE_OF).sort());
    for (const w of workloads(objs)) {
      const pod = w.spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.enableServiceLinks).toBe(false);
      for (const c of pod.containers) {
        expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        const tmp = c.volumeMounts.find((m: { mountPath: string }) => m.mountPath === '/tmp');
        expect(pod.volumes.find((v: { name: string }) => v.name === tmp?.name)?.emptyDir).toBeDefined();
        expect(c.resources.requests.cpu).toBeDefined();
        expect(c.resources.requests.memory).toBeDefined();
        expect(c.resources.limits.memory).toBeDefined();
        // Without a request the scheduler may place the pod on a node whose disk cannot hold its
        // emptyDirs; a container limit under their sizes would evict before a sizeLimit names the volume.
        const emptyDirBytes = pod.volumes.reduce((sum: number, v: { emptyDir?: { sizeLimit: string } }) => sum + (v.emptyDir ? bytesOf(v.emptyDir.sizeLimit) : 0), 0);
        expect(bytesOf(c.resources.requests['ephemeral-storage'])).toBeGreaterThan(0);
        expect(bytesOf(c.resources.limits['ephemeral-storage'])).toBeGreaterThan(emptyDirBytes);
        expect(c.image).toMatch(overlay === 'dev' ? /:dev$/ : /:\d+\.\d+\.\d+$/);
      }
    }
  });

  it('probes /healthz and /readyz on a declared port, and Prometheus scrapes the ops port, which an API Service does not expose', () => {
    for (const w of workloads(objs)) {
      const pod = w.spec.template.spec;
      const c = pod.containers[0];
      const ports = new Map<string, number>(c.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]));
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      expect(ports.has(c.livenessProbe.httpGet.port)).toBe(true);
      expect(ports.has(c.readinessProbe.httpGet.port)).toBe(true);
      const probed = ports.get(c.readinessProbe.httpGet.port);
      const env = envOf(objs, c);
      // /metrics is served on OPS_PORT only (an API port is what the load balancer exposes).
      const ann = w.spec.template.metadata.annotations;
      expect(ann['prometheus.io/scrape']).toBe('true');
      expect(ann['prometheus.io/path']).toBe('/metrics');
      expect(Number(ann['prometheus.io/port'])).toBe(ports.get('ops'));
      expect(Number(env.get('OPS_PORT'))).toBe(ports.get('ops'));
      expect(env.get('OPS_HOST')).toBe('0.0.0.0');
      // The Service of an API (ingest, query-api) exposes its http port alone; validate's and
      // tier 1's expose ops (query-api's DLQ panel reads validate's /metrics); the folder has none.
      const services = objs.filter((o) => o.kind === 'Service' && matches(o.spec.selector, w.spec.template.metadata.labels));
      if (ports.has('http')) expect(services.length).toBe(1);
      for (const svc of services) expect(svc.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual(ports.has('http') ? ['http'] : ['ops']);
      // The app must listen where the probe looks.
      const listen = env.get('INGEST_PORT') ?? env.get('QUERY_API_PORT') ?? env.get('OPS_PORT');
      expect(Number(listen)).toBe(probed);
      // The variable of the server the probe reaches: the HTTP server for ingest and query-api
      // (OPS_HOST, in the common ConfigMap, would have hidden a missing INGEST_HOST).
      const hostVar = { ingest: 'INGEST_HOST', 'query-api': 'QUERY_API_HOST' }[SERVICE_OF[w.metadata.name] as string] ?? 'OPS_HOST';
      expect({ hostVar, host: env.get(hostVar) }).toEqual({ hostVar, host: '0.0.0.0' });
    }
  });

  it("gives each pod more termination grace than its preStop plus the moment the app exits hard, with 5 s to spare", () => {
    for (const w of workloads(objs)) {
      const pod = w.spec.template.spec;
      const c = pod.containers[0];
      const env = envOf(objs, c);
      // When each main.ts gives up on a clean shutdown after SIGTERM (its hard-exit timer).
      const hardExitMs: Record<string, () => number> = {
        ingest: () => Number(env.get('INGEST_SHUTDOWN_TIMEOUT_MS') ?? 20_000) + 5000,
        validate: () => 30_000,
        'merge-compaction': () => Number(env.get('SLUICE_SHUTDOWN_TIMEOUT_MS') ?? 20_000),
        'query-api': () => Number(env.get('QUERY_API_SHUTDOWN_TIMEOUT_MS') ?? 20_000),
      };
      const preStop = c.lifecycle?.preStop?.sleep?.seconds ?? 0;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStop + hardExitMs[SERVICE_OF[w.metadata.name]]() / 1000 + 5);
    }
  });

  it('sets exactly the environment each service reads, from ConfigMaps and Secret references', () => {
    const problems: string[] = [];
    for (const w of workloads(objs)) {
      const c = w.spec.template.spec.containers[0];
      problems.push(...envProblems(SERVICE_OF[w.metadata.name], envOf(objs, c).keys()));
      for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) expect(['sluice-ingest', 'sluice-kafka', 'sluice-query-api', 'sluice-s3']).toContain(e.valueFrom.secretKeyRef.name);
    }
    expect(problems).toEqual([]);
    // Secrets never sit in a ConfigMap.
    for (const cm of objs.filter((o) => o.kind === 'ConfigMap')) {
      for (const k of Object.keys(cm.data ?? {})) expect(k).not.toMatch(/SECRET|PASSWORD|API_KEYS|TOKENS/);
    }
  });

  it('gives every Kafka client the security settings: the protocol, optional SASL Secret references and the optional TLS Secret volume', () => {
    for (const name of ['sluice-ingest', 'sluice-validate', 'sluice-merge-compaction']) {
      const w = workloads(objs).find((o) => o.metadata.name === name) as K8sObject;
      const c = w.spec.template.spec.containers[0];
      expect(envOf(objs, c).get('KAFKA_SECURITY_PROTOCOL')).toBe('plaintext');
      const secretRefs = (c.env ?? []).filter((e: EnvVar) => e.valueFrom?.secretKeyRef?.name === 'sluice-kafka');
      expect(secretRefs.map((e: EnvVar) => [e.name, (e.valueFrom?.secretKeyRef as { optional?: boolean }).optional])).toEqual([
        ['KAFKA_SASL_USERNAME', true],
        ['KAFKA_SASL_PASSWORD', true],
      ]);
      expect(c.volumeMounts).toContainEqual({ name: 'kafka-tls', mountPath: '/etc/sluice/kafka-tls', readOnly: true });
      expect(w.spec.template.spec.volumes).toContainEqual(expect.objectContaining({ name: 'kafka-tls', secret: expect.objectContaining({ secretName: 'sluice-kafka-tls', optional: true }) }));
    }
  });

  it('protects every workload with a PodDisruptionBudget that never blocks a drain', () => {
    for (const w of workloads(objs)) {
      const labels = w.spec.template.metadata.labels;
      const pdbs = objs.filter((o) => o.kind === 'PodDisruptionBudget' && matches(o.spec.selector.matchLabels, labels));
      expect(pdbs).toHaveLength(1);
      expect(pdbs[0].spec.maxUnavailable).toBe(1);
      // The default (IfHealthyBudget) keeps unready pods while the budget is spent: a storage or
      // Kafka outage that makes every pod unready would block every node drain.
      expect(pdbs[0].spec.unhealthyPodEvictionPolicy).toBe('AlwaysAllow');
      expect(matches(w.spec.selector.matchLabels, labels)).toBe(true);
    }
  });

  it('routes every Service to pods and a named container port', () => {
    for (const svc of objs.filter((o) => o.kind === 'Service')) {
      const targets = workloads(objs).filter((w) => matches(svc.spec.selector, w.spec.template.metadata.labels));
      expect(targets.length).toBeGreaterThan(0);
      for (const p of svc.spec.ports) {
        for (const t of targets) expect(t.spec.template.spec.containers[0].ports.map((x: { name: string }) => x.name)).toContain(p.targetPort);
      }
    }
  });

  it('autoscales HTTP tiers on CPU and consumer tiers on lag, capped at the partition count', () => {
    for (const name of ['sluice-ingest', 'sluice-query-api']) {
      const hpa = find(objs, 'HorizontalPodAutoscaler', name);
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name });
      expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    }
    const kafka = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('sluice-kafka-')) as K8sObject;
    const groupOf = (svc: string) => {
      const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith(`${svc}-`)) as K8sObject;
      return cm.data?.VALIDATE_GROUP_ID ?? cm.data?.SLUICE_MERGE_GROUP_ID;
    };
    const expected = {
      'sluice-validate': { kind: 'StatefulSet', topics: [RAW_TOPIC] },
      'sluice-merge-compaction': { kind: 'Deployment', topics: CONTRACT_NAMES.map((c) => validTopic(c)) },
    };
    for (const [name, want] of Object.entries(expected)) {
      const so = find(objs, 'ScaledObject', name);
      expect(so.spec.scaleTargetRef).toMatchObject({ kind: want.kind, name });
      expect(so.spec.triggers.map((t: { metadata: { topic: string } }) => t.metadata.topic).sort()).toEqual(want.topics.map((t) => t.name).sort());
      const partitions = Math.min(...want.topics.map((t) => t.partitions));
      expect(so.spec.maxReplicaCount).toBeLessThanOrEqual(partitions);
      expect(so.spec.minReplicaCount).toBeLessThanOrEqual(so.spec.maxReplicaCount);
      for (const t of so.spec.triggers) {
        expect(t.type).toBe('kafka');
        expect(t.metadata.bootstrapServers).toBe(kafka.data?.KAFKA_BROKERS);
        expect(t.metadata.consumerGroup).toBe(groupOf(name));
        expect(t.metadata.allowIdleConsumers).toBe('false');
      }
    }
    // Every service gets the same brokers the scaler watches.
    for (const w of workloads(objs)) {
      const env = envOf(objs, w.spec.template.spec.containers[0]);
      const brokers = env.get('KAFKA_BROKERS') ?? env.get('SLUICE_KAFKA_BROKERS');
      if (SERVICE_OF[w.metadata.name] !== 'query-api') expect(brokers).toBe(kafka.data?.KAFKA_BROKERS);
    }
  });

  it('leaves the replica count of every autoscaled workload to its autoscaler', () => {
    // A replica count in the manifest is applied again at every `kubectl apply` (every config
    // change: ConfigMap names carry a hash): validate dropped from 8 replicas to 2 in one step.
    const targets = objs.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject').map((o) => o.spec.scaleTargetRef as { kind: string; name: string });
    expect(targets.length).toBe(4);
    for (const target of targets) expect({ ...target, replicas: find(objs, target.kind, target.name).spec.replicas }).toEqual({ ...target, replicas: undefined });
  });
});

describe('topic and table settings', () => {
  const cm = objects.prod.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('sluice-topics-')) as K8sObject;
  const settings = parse(cm.data?.['topics.yaml'] as string) as { topics: Array<{ name: string; partitions: number; retentionMs: number }>; tables: Record<string, number> };

  it('match libs/contracts exactly', () => {
    const expected = [RAW_TOPIC, DLQ_TOPIC, ...CONTRACT_NAMES.map((c) => validTopic(c))].map((t) => ({
      name: t.name,
      partitions: t.partitions,
      retentionMs: t.retentionMs,
      cleanupPolicy: t.cleanupPolicy,
      timestampType: t.timestampType,
    }));
    expect([...settings.topics].sort((a, b) => a.name.localeCompare(b.name))).toEqual(expected.sort((a, b) => a.name.localeCompare(b.name)));
  });

  it('agree with the merge-compaction ConfigMap and query-api tables', () => {
    const merge = objects.prod.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('sluice-merge-compaction-')) as K8sObject;
    expect(Number(merge.data?.SLUICE_COMPACTION_TARGET_FILE_BYTES)).toBe(settings.tables.compactionTargetFileBytes);
    expect(Number(merge.data?.SLUICE_COMPACTION_SMALL_FILE_BYTES)).toBe(settings.tables.compactionSmallFileBytes);
    expect(Number(merge.data?.SLUICE_COMPACTION_MIN_FILES)).toBe(settings.tables.compactionMinFiles);
    expect(Number(merge.data?.SLUICE_VACUUM_RETENTION_MS)).toBe(settings.tables.vacuumRetentionMs);
    const query = objects.prod.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('sluice-query-api-')) as K8sObject;
    const known = new Set(
      CONTRACT_NAMES.flatMap((c) => [tableName('silver', c), tableName('bronze', c), ...(CONTRACTS[c].aggregates ?? []).map((a) => goldTableName(c, a.name))]),
    );
    for (const t of (query.data?.QUERY_API_TABLES ?? '').split(',')) expect(known.has(t)).toBe(true);
  });

  it("serve the dashboard's tables, and the S3 file cache of every table fits query-api's cache volume", () => {
    const deployment = find(objects.prod, 'Deployment', 'sluice-query-api');
    const pod = deployment.spec.template.spec;
    const env = envOf(objects.prod, pod.containers[0]);
    const tables = (env.get('QUERY_API_TABLES') ?? '').split(',');
    // The dashboard reads these by default (apps/query-api/src/config.ts): a table not served is a 404 panel.
    expect(tables).toEqual(expect.arrayContaining(['bronze_orders', 'silver_orders']));
    const perTable = Number(env.get('QUERY_API_S3_CACHE_BYTES_PER_TABLE'));
    expect(perTable).toBeGreaterThan(0); // unset means 2 GiB per table
    const mount = pod.containers[0].volumeMounts.find((m: { mountPath: string }) => m.mountPath === env.get('QUERY_API_CACHE_DIR'));
    const limit = String(pod.volumes.find((v: { name: string }) => v.name === mount?.name)?.emptyDir?.sizeLimit ?? '');
    // Over the limit the kubelet evicts the pod; files running queries hold may take a cache past its size, up to PINNED_OVERSHOOT times.
    expect(perTable * PINNED_OVERSHOOT * tables.length).toBeLessThanOrEqual(bytesOf(limit));
  });
});

describe('the validation bites', () => {
  it('rejects an unknown field, a wrong type and a bad KEDA spec', () => {
    const bad = rendered.prod
      .replace('terminationGracePeriodSeconds: 30', 'terminationGracePeriodSecond: 30')
      .replace(/maxReplicaCount: (\d+)/, 'maxReplicaCount: "$1"')
      .replace(/pollingInterval: 15/, 'pollingInterval: 15\n  pollingIntervall: 15');
    const r = kubeconform(tools, bad);
    expect(r.ok).toBe(false);
    expect(r.output).toContain("additional properties 'terminationGracePeriodSecond' not allowed");
    expect(r.output).toContain("additional properties 'pollingIntervall' not allowed");
    expect(r.output).toMatch(/maxReplicaCount': got string, want integer/);
  });

  it('fails the CI check script on a broken overlay file tree, and passes it on this one', () => {
    // deploy.sh is what CI runs: it is run here on a copy of deploy/ whose base (so every
    // overlay) has one unknown field, and on the copy before the break.
    const tree = mkdtempSync(join(tmpdir(), 'deploy-check-'));
    try {
      for (const dir of ['deploy/k8s', 'deploy/prometheus', 'deploy/grafana', 'tools/checks.d', 'tools/setup/steps.d']) cpSync(join(REPO_ROOT, dir), join(tree, dir), { recursive: true });
      const run = () => spawnSync('bash', [join(tree, 'tools/checks.d/deploy.sh')], { encoding: 'utf8', timeout: 60_000 });
      const clean = run();
      expect({ status: clean.status, stderr: clean.stderr }).toMatchObject({ status: 0, stderr: expect.stringContaining('ok: prod') });
      const statefulset = join(tree, 'deploy/k8s/base/validate/statefulset.yaml');
      writeFileSync(statefulset, readFileSync(statefulset, 'utf8').replace(/^spec:\n/m, 'spec:\n  replicaz: 2\n'));
      const broken = run();
      expect(broken.status).not.toBe(0);
      expect(broken.stderr).toContain('invalid: dev');
      expect(broken.stderr).toContain('invalid: prod');
      expect(broken.stderr).toContain("additional properties 'replicaz' not allowed");
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});
