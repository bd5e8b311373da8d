import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { DeliveryConfig } from '@herald/delivery';
import { IngestConfig } from '@herald/ingest';
import { ReadConfig } from '@herald/read';
import { StandaloneConfig } from './config.js';

// The Kubernetes manifests (infra/k8s): each overlay renders with kubectl's kustomize, every object
// validates against the Kubernetes API's schema (kubernetes-models; ServiceMonitor, the Prometheus
// Operator's), and every variable a container sets is one its service reads.
const K8S = fileURLToPath(new URL('../../../infra/k8s/', import.meta.url));
const run = promisify(execFile);

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: Record<string, unknown>;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/Ingress': Ingress,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

/** The variables each entry point reads: its config schema's keys. */
const keys = (schema: { shape: Record<string, unknown> }): string[] => Object.keys(schema.shape);
const READS: Record<string, Set<string>> = {
  'services/ingest/dist/main.js': new Set(keys(IngestConfig)),
  'services/read/dist/main.js': new Set(keys(ReadConfig)),
  'services/delivery/dist/main.js': new Set(keys(DeliveryConfig)),
  'services/standalone/dist/main.js': new Set([
    ...keys(StandaloneConfig),
    ...keys(IngestConfig),
    ...keys(ReadConfig),
    ...keys(DeliveryConfig),
  ]),
};

async function render(overlay: string): Promise<Manifest[]> {
  const { stdout } = await run('kubectl', ['kustomize', `${K8S}overlays/${overlay}`]);
  return parseAllDocuments(stdout).map((document) => document.toJS() as Manifest);
}

/** Problems of one object against its kind's schema (none: it validates). */
function validate(manifest: Manifest): string[] {
  const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
  if (!Model)
    return [`${manifest.kind} ${manifest.metadata.name}: no schema for ${manifest.apiVersion}`];
  try {
    new Model(manifest as never).validate();
    return [];
  } catch (error) {
    return [`${manifest.kind} ${manifest.metadata.name}: ${(error as Error).message}`];
  }
}

describe('the Kubernetes manifests', () => {
  it.each(['single', 'split'])(
    '%s: render, and validate against the API schemas',
    async (overlay) => {
      const manifests = await render(overlay);
      expect(manifests.length).toBeGreaterThan(3);
      expect(manifests.flatMap(validate)).toEqual([]);
      // The check does refuse what the API would: a Deployment whose replicas is not a number.
      const deployment = manifests.find((m) => m.kind === 'Deployment')!;
      expect(validate({ ...deployment, spec: { ...deployment.spec, replicas: 'two' } })).toEqual([
        expect.stringContaining('replicas must be integer'),
      ]);
    },
  );

  it('set only variables their services read, from the config map and the secret', async () => {
    const manifests = [...(await render('single')), ...(await render('split'))];
    const settings = new Set(
      manifests
        .filter((m) => m.kind === 'ConfigMap')
        .flatMap((m) => Object.keys((m as unknown as { data: object }).data)),
    );
    const unknown: string[] = [];
    for (const deployment of manifests.filter((m) => m.kind === 'Deployment')) {
      const { containers } = (deployment as unknown as Deployment).spec!.template.spec!;
      for (const container of containers) {
        const entry = container.command?.find((part) => part.endsWith('main.js')) ?? '';
        const reads = READS[entry];
        if (!reads) {
          unknown.push(`${deployment.metadata.name}: runs ${entry || 'nothing known'}`);
          continue;
        }
        const names = [
          ...(container.env ?? []).map((variable) => variable.name),
          ...((container.envFrom ?? []).some((from) => from.configMapRef) ? settings : []),
        ];
        for (const name of names) {
          if (!reads.has(name)) unknown.push(`${deployment.metadata.name}: ${name}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });

  it('give each pod more time to stop than its preStop and SHUTDOWN_GRACE_MS take', async () => {
    for (const manifest of [...(await render('single')), ...(await render('split'))]) {
      if (manifest.kind !== 'Deployment') continue;
      const pod = (manifest as unknown as Deployment).spec!.template.spec!;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(5 + 10);
      for (const container of pod.containers) {
        expect(container.lifecycle?.preStop).toBeDefined();
        expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
        expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
      }
    }
  });
});
