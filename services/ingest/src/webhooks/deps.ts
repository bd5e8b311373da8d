import type { CidrList } from '@herald/contract';
import type { Coordination, Logger } from '@herald/runtime';
import type { Db } from '@herald/store';

/** What the /webhooks routes need. */
export interface WebhookRouteDeps {
  db: Db;
  coordination: Coordination;
  logger: Logger;
  /** CIDRs exempt from the blocked address ranges at creation (SSRF_ALLOW_CIDRS). */
  ssrfAllowCidrs: CidrList;
  /** The replica for GET /webhook_stats (EventsDeps.replicaDb); default `db`. */
  replicaDb?: Db | undefined;
}
