export { createApp, ingestPublicRouters, ingestRouter, type IngestDeps } from './app.js';
export { apiDocument } from './openapi.js';
export { ingestEnv, IngestConfig, loadConfig } from './config.js';
export { ingestMetrics } from './events/metrics.js';
export { ingestRole, openIngestQueues } from './role.js';
