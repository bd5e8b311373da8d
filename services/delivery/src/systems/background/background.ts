import type { DeliverySettings } from '../../settings.js';
import type { SystemResources } from '../resources.js';
import { BulkJobs, type BulkJobsOptions } from './bulk-jobs.js';
import { Notices } from './notices.js';

/** A delivery process's background loops: bulk jobs (resends, replays) and notices. */
export class Background {
  private constructor(
    private readonly bulkJobs: BulkJobs,
    private readonly notices: Notices,
  ) {}

  /** Starts them on the service's settings; `attempt` sends a bulk job's item. */
  static start(
    resources: Pick<SystemResources, 'db' | 'matchQueue' | 'logger' | 'lease' | 'models'> & {
      metrics: Pick<SystemResources['metrics'], 'bulkItems' | 'notices'>;
    },
    settings: Pick<
      DeliverySettings,
      | 'bulkJobsPerProcess'
      | 'bulkJobsPollMs'
      | 'maxInFlightPerWebhook'
      | 'noticeFailures'
      | 'noticePollMs'
      | 'sweepEnqueueTimeoutMs'
    >,
    attempt: BulkJobsOptions['attempt'],
  ): Background {
    const { db, matchQueue, logger, metrics } = resources;
    const bulkJobs = new BulkJobs({
      db,
      logger: logger.child({ module: 'bulk-jobs' }),
      lease: resources.lease,
      pollMs: settings.bulkJobsPollMs,
      maxJobs: settings.bulkJobsPerProcess,
      concurrency: settings.maxInFlightPerWebhook,
      models: resources.models,
      attempt,
      onItems: (outcomes) => {
        for (const outcome of outcomes) metrics.bulkItems.inc({ outcome });
      },
    });
    if (settings.bulkJobsPerProcess > 0) bulkJobs.start();
    const notices = new Notices({
      db,
      matchQueue,
      logger: logger.child({ module: 'notices' }),
      failingAfter: settings.noticeFailures,
      pollMs: settings.noticePollMs,
      enqueueTimeoutMs: settings.sweepEnqueueTimeoutMs,
      emitted: metrics.notices,
    });
    notices.start();
    return new Background(bulkJobs, notices);
  }

  /** Running bulk jobs stop after their batch; they stay held and are taken over later. */
  async stop(): Promise<void> {
    await this.bulkJobs.stop();
    await this.notices.stop();
  }
}
