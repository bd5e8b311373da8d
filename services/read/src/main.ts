import { runProcess } from '@herald/runtime';
import { loadConfig } from './config.js';
import { readRole } from './role.js';

runProcess({ name: 'read', loadConfig: () => loadConfig(process.env), roles: [readRole] });
