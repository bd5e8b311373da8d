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

interface ConfigData {
  data: Record<string, string | undefined>;
}

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

  it('give each pod more time to stop than its preStop, its requests and its queue workers take', async () => {
    for (const overlay of ['single', 'split']) {
      const manifests = await render(overlay);
      const data = (manifests.find((m) => m.kind === 'ConfigMap') as unknown as ConfigData).data;
      // A setting as the service reads it: the config map's value, else its schema's default.
      const ms = (name: 'SHUTDOWN_GRACE_MS' | 'DELIVERY_TIMEOUT_MS' | 'DELIVERY_JOB_LOCK_MS') =>
        name === 'SHUTDOWN_GRACE_MS'
          ? IngestConfig.shape[name].parse(data[name])
          : DeliveryConfig.shape[name].parse(data[name]);
      for (const manifest of manifests) {
        if (manifest.kind !== 'Deployment') continue;
        const pod = (manifest as unknown as Deployment).spec!.template.spec!;
        for (const container of pod.containers) {
          expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
          expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
          const preStop = container.lifecycle?.preStop?.exec?.command?.join(' ') ?? '';
          const preStopMs = Number(/setTimeout\(\(\) => \{\}, (\d+)\)/.exec(preStop)?.[1]);
          expect(preStopMs).toBeGreaterThan(0);
          // The hooks run one after the other: the server's requests, then (where delivery runs)
          // the queue workers' close, bounded by an attempt's timeout and a job lock.
          const entry = container.command?.find((part) => part.endsWith('main.js')) ?? '';
          const runsDelivery = /services\/(delivery|standalone)\//.test(entry);
          const stopMs =
            preStopMs +
            ms('SHUTDOWN_GRACE_MS') +
            (runsDelivery ? ms('DELIVERY_TIMEOUT_MS') + ms('DELIVERY_JOB_LOCK_MS') : 0);
          expect(
            pod.terminationGracePeriodSeconds! * 1000,
            `${manifest.metadata.name}: ${stopMs} ms to stop`,
          ).toBeGreaterThanOrEqual(stopMs + 2000);
        }
      }
    }
  });
});
