import { httpSettings, type Role } from '@herald/runtime';
import { readRouter } from './app.js';
import { openReadDb, readLimits, type ReadConfig } from './config.js';
import { IndexManager } from './index-manager.js';

/** The read role (startRoles): GET /items and GET /items/:id, on read pools of their own. */
export function readRole(config: ReadConfig): Role {
  return {
    name: 'read',
    queues: false,
    api: {
      http: httpSettings(config),
      routers({ poolName, db, logger, lifecycle }, api) {
        // GET /items runs on a pool of its own with a time budget (Postgres only), and one on the
        // replica of READ_DATABASE_URL if set.
        const readDb = openReadDb(config, db, `herald-${poolName}-items`);
        lifecycle.onShutdown('read-database', () => readDb.close());
        const router = readRouter({
          ...api,
          indexes: new IndexManager(db, logger, config.READ_EXPRESSION_INDEXES),
          readDb: readDb.db,
          readReplicaDb: readDb.replica,
          readAfterWaitMs: config.READ_AFTER_WAIT_MS,
          readLimits: readLimits(config, readDb.db),
        });
        return { routers: [router] };
      },
    },
  };
}
