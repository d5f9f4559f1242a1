import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schemaFileName, strictify, writeCrdSchemas, writeKubernetesSchemas } from './k8s-schemas';

describe('kubeconform schema generation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-schemas-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names files the way kubeconform looks them up', () => {
    expect(schemaFileName('', 'v1', 'Service')).toBe('service-v1.json');
    expect(schemaFileName('apps', 'v1', 'StatefulSet')).toBe('statefulset-apps-v1.json');
    expect(schemaFileName('keda.sh', 'v1alpha1', 'ScaledObject')).toBe('scaledobject-keda-v1alpha1.json');
    expect(schemaFileName('autoscaling', 'v2', 'HorizontalPodAutoscaler')).toBe('horizontalpodautoscaler-autoscaling-v2.json');
  });

  it('closes objects, keeps maps and preserve-unknown-fields open, widens int-or-string', () => {
    const out = strictify({
      type: 'object',
      properties: {
        properties: { type: 'object', properties: { a: { type: 'string' } } }, // a field literally named "properties"
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        raw: { type: 'object', properties: { x: { type: 'string' } }, 'x-kubernetes-preserve-unknown-fields': true },
        port: { type: 'string', format: 'int-or-string', description: 'p' },
      },
    }) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(out.additionalProperties).toBe(false);
    expect(out.properties.properties.additionalProperties).toBe(false);
    expect(out.properties.labels.additionalProperties).toEqual({ type: 'string' });
    expect(out.properties.raw.additionalProperties).toBeUndefined();
    expect(out.properties.port).toEqual({ oneOf: [{ type: 'string' }, { type: 'integer' }], description: 'p' });
  });

  it('embeds the definitions a kind reaches and lets quantities be numbers', () => {
    const swagger = {
      definitions: {
        'x.Pod': {
          type: 'object',
          properties: { spec: { $ref: '#/definitions/x.PodSpec' } },
          'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Pod' }],
        },
        'x.PodSpec': { type: 'object', properties: { cpu: { $ref: '#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity' }, self: { $ref: '#/definitions/x.PodSpec' } } },
        'io.k8s.apimachinery.pkg.api.resource.Quantity': { type: 'string' },
        'x.Unrelated': { type: 'object', properties: {} },
        'x.DeleteOptions': { type: 'object', 'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'DeleteOptions' }, { group: 'apps', version: 'v1', kind: 'DeleteOptions' }] },
      },
    };
    expect(writeKubernetesSchemas(swagger, dir)).toEqual(['pod-v1.json']);
    const pod = JSON.parse(readFileSync(join(dir, 'pod-v1.json'), 'utf8'));
    expect(Object.keys(pod.definitions).sort()).toEqual(['io.k8s.apimachinery.pkg.api.resource.Quantity', 'x.PodSpec']);
    expect(pod.definitions['io.k8s.apimachinery.pkg.api.resource.Quantity']).toEqual({ oneOf: [{ type: 'string' }, { type: 'number' }] });
    expect(pod.additionalProperties).toBe(false);
  });

  it('turns every version of a CRD into a schema', () => {
    const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: keda.sh
  names: { kind: ScaledObject }
  versions:
    - name: v1alpha1
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: { type: object, properties: { maxReplicaCount: { type: integer } } }
---
kind: ConfigMap
`;
    expect(writeCrdSchemas(crd, dir)).toEqual(['scaledobject-keda-v1alpha1.json']);
    const s = JSON.parse(readFileSync(join(dir, 'scaledobject-keda-v1alpha1.json'), 'utf8'));
    expect(s.properties.spec.additionalProperties).toBe(false);
  });
});
