import type { Express } from 'express';
import { createOpsApp, type ApiAppDeps } from '@herald/runtime';

export type DeliveryDeps = Omit<ApiAppDeps, 'http' | 'environments'> & {
  /** DOCS_URL: the base of `doc_url`; undefined, this process's own /docs/errors. */
  docsUrl: string | undefined;
};

/**
 * The delivery service answers only /healthz, /readyz and /metrics over HTTP (and /docs/errors,
 * where its errors' `doc_url` points).
 */
export function createApp(deps: DeliveryDeps): Express {
  return createOpsApp(deps);
}
