import { runProcess } from '@herald/runtime';
import { loadConfig } from './config.js';
import { deliveryRole } from './role.js';

runProcess({ name: 'delivery', loadConfig: () => loadConfig(process.env), roles: [deliveryRole] });
