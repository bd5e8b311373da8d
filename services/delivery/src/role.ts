import type { Role } from '@herald/runtime';
import { deliverySettings, openWorkerDb, type DeliveryConfig } from './config.js';
import { startDelivery } from './workers.js';

/**
 * The delivery role (startRoles): the match and deliver workers, the first attempts, the
 * sweeper, bulk jobs and notices. No routes: alone, its process serves health and metrics.
 */
export function deliveryRole(config: DeliveryConfig): Role {
  return {
    name: 'delivery',
    queues: true,
    async start({ db, coordination, logger, metrics, lifecycle, localMatch }) {
      // The workers (and the one sweeper startDelivery runs) use their own pool on Postgres: their
      // commits need not wait for the WAL flush (DELIVERY_SYNCHRONOUS_COMMIT), unlike POST /events.
      const workerDb = openWorkerDb(config, db);
      lifecycle.onShutdown('worker-database', () => workerDb.close());
      const delivery = await startDelivery(
        { db: workerDb.db, coordination, logger, registry: metrics.registry, localMatch },
        deliverySettings(config),
      );
      lifecycle.onShutdown('delivery-workers', () => delivery.close(), delivery.closeWithinMs);
    },
  };
}
