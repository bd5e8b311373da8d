export { createApp, readRouter, type ReadDeps } from './app.js';
export { readEnv, ReadConfig, loadConfig, openReadDb, readLimits } from './config.js';
export { ReadGate, type ReadLimits } from './read-gate.js';
export { IndexManager } from './index-manager.js';
export { compileListQuery, type CompiledList, type IndexSpec } from './query/compile.js';
export { parseListParams, resolveListQuery, type ListQuery } from './query/list-query.js';
export { itemsQueryDuration } from './metrics.js';
export { readRole } from './role.js';
