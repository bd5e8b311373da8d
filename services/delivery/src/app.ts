import type { Express } from 'express';
import { createOpsApp, type ApiAppDeps } from '@herald/runtime';

export type DeliveryDeps = Omit<ApiAppDeps, 'http' | 'environments'> & {
  docsUrl: string;
};

/** The delivery service answers only /healthz, /readyz and /metrics over HTTP. */
export function createApp(deps: DeliveryDeps): Express {
  return createOpsApp(deps);
}
