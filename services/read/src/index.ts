export { createApp, readRouter, type ReadDeps } from './app.js';
export { readEnv, ReadConfig, loadConfig } from './config.js';
export { IndexManager } from './index-manager.js';
