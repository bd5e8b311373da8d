import { deliveryRole } from '@herald/delivery';
import { ingestRole } from '@herald/ingest';
import { readRole } from '@herald/read';
import { runProcess } from '@herald/runtime';
import { loadConfig } from './config.js';
import { SINGLE_PROCESS_ERRORS, singleProcess } from './single-process.js';

/** Single-process mode: ingest + read + delivery on one port, on the embedded defaults. */
runProcess({
  name: 'herald',
  poolName: 'standalone',
  loadConfig: () => loadConfig(process.env),
  roles: [ingestRole, readRole, deliveryRole],
  host: singleProcess,
  expected: SINGLE_PROCESS_ERRORS,
});
