import { runProcess } from '@herald/runtime';
import { loadConfig } from './config.js';
import { ingestRole } from './role.js';

runProcess({ name: 'ingest', loadConfig: () => loadConfig(process.env), roles: [ingestRole] });
