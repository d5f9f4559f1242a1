import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTRACT_NAMES, DLQ_TOPIC, RAW_TOPIC, validTopic } from '@sluice/contracts';
import type { ServiceId } from '@sluice/telemetry';
import { parse } from 'yaml';
import { REPO_ROOT } from './k8s-render';
import { envProblems } from './service-env';

// No Docker engine here: the compose file is checked structurally, against the Dockerfile, the
// services' config, the contracts and the Prometheus/Grafana files it mounts.
interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string };
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  configs?: Array<{ source: string; target: string }>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] | string; interval?: string };
  restart?: string;
  read_only?: boolean;
  user?: string;
  cap_drop?: string[];
  tmpfs?: string[];
  command?: string | string[];
}
const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  configs?: Record<string, { content?: string; file?: string }>;
};
const services = compose.services;
const SLUICE: ServiceId[] = ['ingest', 'validate', 'merge-compaction', 'query-api'];
const oneShot = (s: ComposeService) => s.restart === 'no';
const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');

describe('docker-compose.yml', () => {
  it('runs the whole stack', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['kafka', 'seaweedfs', 'schema-registry', ...SLUICE, 'prometheus', 'grafana']),
    );
    expect(services.kafka.image).toMatch(/^apache\/kafka:\d/);
    expect(services.seaweedfs.image).toMatch(/seaweedfs/);
    expect(services.kafka.environment?.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(services.kafka.environment?.KAFKA_AUTO_CREATE_TOPICS_ENABLE).toBe('false');
  });

  it('gives every service an image or a build of an existing Dockerfile target', () => {
    const targets = new Set([...dockerfile.matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((m) => m[1]));
    for (const [name, s] of Object.entries(services)) {
      expect(s.image ?? s.build).toBeDefined();
      if (s.image) expect(s.image).toMatch(/:[\w.-]+$/); // pinned tag, never implicit latest
      if (s.build) {
        expect(existsSync(join(REPO_ROOT, s.build.context, s.build.dockerfile))).toBe(true);
        expect(targets.has(s.build.target as string)).toBe(true);
        expect(s.build.target).toBe(name);
      }
    }
    for (const svc of SLUICE) expect(services[svc].build).toBeDefined();
  });

  it('health-checks every long-running service and orders start-up on health or completion', () => {
    for (const [name, s] of Object.entries(services)) {
      if (!oneShot(s)) expect({ name, healthcheck: Boolean(s.healthcheck?.test) }).toEqual({ name, healthcheck: true });
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        expect(services[dep]).toBeDefined();
        if (condition === 'service_healthy') expect(services[dep].healthcheck).toBeDefined();
        else expect({ dep, condition }).toEqual({ dep, condition: 'service_completed_successfully' });
        if (condition === 'service_completed_successfully') expect(oneShot(services[dep])).toBe(true);
      }
    }
    // No dependency cycles.
    const visiting = new Set<string>();
    const done = new Set<string>();
    const visit = (n: string) => {
      if (done.has(n)) return;
      if (visiting.has(n)) throw new Error(`dependency cycle through ${n}`);
      visiting.add(n);
      for (const d of Object.keys(services[n].depends_on ?? {})) visit(d);
      visiting.delete(n);
      done.add(n);
    };
    for (const n of Object.keys(services)) visit(n);
  });

  it('publishes ports on 127.0.0.1 only, without collisions, where the apps listen', () => {
    const host = new Set<string>();
    for (const [name, s] of Object.entries(services)) {
      for (const p of s.ports ?? []) {
        const m = /^127\.0\.0\.1:(\d+):(\d+)$/.exec(p);
        expect({ name, port: p, loopback: Boolean(m) }).toEqual({ name, port: p, loopback: true });
        expect(host.has(m![1])).toBe(false);
        host.add(m![1]);
      }
    }
    const listen: Record<ServiceId, string | undefined> = {
      ingest: services.ingest.environment?.INGEST_PORT,
      validate: services.validate.environment?.OPS_PORT,
      'merge-compaction': services['merge-compaction'].environment?.OPS_PORT,
      'query-api': services['query-api'].environment?.QUERY_API_PORT,
    };
    for (const svc of SLUICE) {
      expect(services[svc].ports?.[0]?.endsWith(`:${listen[svc]}`)).toBe(true);
      const hostVar = services[svc].environment?.INGEST_HOST ?? services[svc].environment?.QUERY_API_HOST ?? services[svc].environment?.OPS_HOST;
      expect(hostVar).toBe('0.0.0.0');
      expect(JSON.stringify(services[svc].healthcheck?.test)).toContain(`127.0.0.1:${listen[svc]}/readyz`);
    }
  });

  it('sets the environment each service reads, and nothing it does not', () => {
    const problems = SLUICE.flatMap((svc) => envProblems(svc, Object.keys(services[svc].environment ?? {})));
    expect(problems).toEqual([]);
    for (const svc of ['ingest', 'validate']) expect(services[svc].environment?.KAFKA_BROKERS).toBe('kafka:9092');
    expect(services['merge-compaction'].environment?.SLUICE_KAFKA_BROKERS).toBe('kafka:9092');
    expect(services['merge-compaction'].environment?.SLUICE_LAKE_ROOT).toBe(services['query-api'].environment?.QUERY_API_LAKE_ROOT);
  });

  it('hardens the Sluice containers like the Kubernetes manifests', () => {
    for (const svc of SLUICE) {
      const s = services[svc];
      expect(s.read_only).toBe(true);
      expect(s.user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
      expect(s.cap_drop).toEqual(['ALL']);
      expect(s.tmpfs?.some((t) => t.startsWith('/tmp'))).toBe(true);
    }
  });

  it('declares every named volume and config, and bind-mounts only files in the repository', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const v of s.volumes ?? []) {
        const [src] = v.split(':');
        if (src.startsWith('./')) expect({ name, exists: existsSync(join(REPO_ROOT, src)) }).toEqual({ name, exists: true });
        else expect(compose.volumes).toHaveProperty([src]);
      }
      for (const c of s.configs ?? []) expect(compose.configs).toHaveProperty([c.source]);
    }
    // The S3 identity the services use is the one SeaweedFS accepts.
    const identities = compose.configs?.['seaweedfs-s3']?.content as string;
    expect(identities).toContain(services['query-api'].environment?.QUERY_API_S3_ACCESS_KEY_ID as string);
    expect(identities).toContain(services['query-api'].environment?.QUERY_API_S3_SECRET_ACCESS_KEY as string);
  });

  it('runs a SeaweedFS whose conditional writes hold under concurrent writers (seaweedfs#8800, fixed after 4.16)', () => {
    const seaweed = Object.keys(services).filter((n) => services[n].image?.includes('seaweedfs'));
    expect(seaweed).toEqual(['seaweedfs', 's3-init']);
    for (const name of seaweed) {
      const [major, minor] = (/:(\d+)\.(\d+)$/.exec(services[name].image as string) ?? []).slice(1).map(Number);
      expect(major > 4 || (major === 4 && minor >= 17)).toBe(true);
    }
  });

  it('keeps the S3 file caches on disk volumes, not in the RAM-backed /tmp', () => {
    const caches: Array<[ServiceId, string]> = [
      ['merge-compaction', 'SLUICE_S3_CACHE_DIR'],
      ['query-api', 'QUERY_API_CACHE_DIR'],
    ];
    for (const [svc, name] of caches) {
      const dir = services[svc].environment?.[name] as string;
      expect(dir).toBeDefined();
      expect(dir.startsWith('/tmp')).toBe(false);
      expect(services[svc].volumes?.some((v) => v.endsWith(`:${dir}`))).toBe(true);
    }
    expect(dockerfile).toMatch(/mkdir \/cache && chown 10001:10001 \/cache/);
  });

  it('serves query-api the tables the Kubernetes deployment serves (the dashboard reads bronze_orders)', () => {
    const k8s = /^QUERY_API_TABLES=(.*)$/m.exec(readFileSync(join(REPO_ROOT, 'deploy/k8s/base/config/query-api.env'), 'utf8'))?.[1];
    expect(services['query-api'].environment?.QUERY_API_TABLES?.split(',').sort()).toEqual(k8s?.split(',').sort());
  });

  it('creates the topics of libs/contracts', () => {
    const script = (services['kafka-init'].command as string[]).join('\n');
    const created = [...script.matchAll(/^\s*create (\S+) (\d+) (\d+) (\S+)$/gm)].map((m) => ({ name: m[1], partitions: Number(m[2]), retentionMs: Number(m[3]), timestampType: m[4] }));
    const expected = [RAW_TOPIC, DLQ_TOPIC, ...CONTRACT_NAMES.map((c) => validTopic(c))].map((t) => ({ name: t.name, partitions: t.partitions, retentionMs: t.retentionMs, timestampType: t.timestampType }));
    expect(script).toMatch(/--config message\.timestamp\.type="\$\$4"/);
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(created.sort(byName)).toEqual(expected.sort(byName));
  });

  it('points Prometheus at the services and Grafana at Prometheus and the dashboards', () => {
    const prom = parse(readFileSync(join(REPO_ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    };
    const promMount = services.prometheus.volumes?.find((v) => v.startsWith('./deploy/prometheus:')) as string;
    const [, promTarget] = promMount.split(':');
    for (const rule of prom.rule_files) expect(existsSync(join(REPO_ROOT, 'deploy/prometheus', rule.replace(`${promTarget}/`, '')))).toBe(true);
    for (const svc of SLUICE) {
      // Every service serves /metrics on its ops port (OPS_PORT), never on an API port.
      const job = prom.scrape_configs.find((j) => j.job_name === svc);
      const ops = services[svc].environment?.OPS_PORT;
      expect(ops).toBeDefined();
      expect(services[svc].environment?.OPS_HOST).toBe('0.0.0.0');
      expect(job?.static_configs[0].targets).toEqual([`${svc}:${ops}`]);
    }
    const ds = parse(readFileSync(join(REPO_ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as { datasources: Array<{ url: string }> };
    expect(ds.datasources[0].url).toBe('http://prometheus:9090');
    const provider = parse(readFileSync(join(REPO_ROOT, 'deploy/grafana/provisioning/dashboards/sluice.yml'), 'utf8')) as { providers: Array<{ options: { path: string } }> };
    expect(services.grafana.volumes).toContain(`./deploy/grafana/dashboards:${provider.providers[0].options.path}:ro`);
    expect(services.grafana.volumes).toContain('./deploy/grafana/provisioning:/etc/grafana/provisioning:ro');
  });
});

describe('deploy/Dockerfile', () => {
  it('builds non-root images with production dependencies and a dynamically linked librdkafka', () => {
    expect(dockerfile).toMatch(/CKJS_LINKING=dynamic npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    for (const lib of ['libsasl2-2', 'libzstd1', 'liblz4-1', 'libssl3', 'zlib1g']) expect(dockerfile).toContain(lib);
    for (const svc of SLUICE) expect(dockerfile).toMatch(new RegExp(`^FROM runtime AS ${svc}$`, 'm'));
    // The final stages copy no sources, only bundles and node_modules.
    const finals = dockerfile.split(/^FROM runtime AS /m).slice(1);
    for (const f of finals) for (const copy of f.match(/^COPY .*$/gm) ?? []) expect(copy).toMatch(/--from=(bundle|modules-\w+)/);
  });

  it('keeps the build context small and free of secrets', () => {
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['.git', '**/node_modules', '.sluice', '**/.env']) expect(ignore).toContain(p);
  });

  it('copies only what the build context holds', () => {
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(?:--\S+ )*(.+) \S+$/gm)].flatMap((m) => m[1].split(' '));
    expect(sources).toContain('deploy/bundle.sh');
    for (const src of sources) {
      const top = src.split('/')[0];
      // an ignored top-level directory is only usable through an explicit `!` exception
      if (ignore.includes(top)) expect(ignore).toContain(`!${src}`);
    }
  });
});
