import type { CidrList } from '@herald/contract';
import type { MatchJobRetries } from '@herald/runtime';
import type { CircuitSettings } from '@herald/store';
import type { RetryPolicy } from './systems/attempt/schedule.js';

/** Everything the delivery workers need, parsed from DeliveryConfig by main.ts. */
export interface DeliverySettings {
  siteId: string;
  userAgent: string;
  allowCidrs: CidrList;
  connectTimeoutMs: number;
  timeoutMs: number;
  connectionsPerOrigin: number;
  responseMaxBytes: number;
  retry: RetryPolicy;
  maxInFlightPerWebhook: number;
  /** The circuit breaker (failures 0: off). */
  circuit: CircuitSettings;
  /** Disable a webhook whose attempts have all failed this long (null: never). */
  disableAfterFailingMs: number | null;
  /** Failed attempts in a row that make a webhook "failing" in a notice (0: never). */
  noticeFailures: number;
  /** How often the process looks for notices to emit. */
  noticePollMs: number;
  /** Bulk jobs this process runs at once (0: none), and how often it looks for one. */
  bulkJobsPerProcess: number;
  bulkJobsPollMs: number;
  deliverConcurrency: number;
  matchConcurrency: number;
  /** The match job's retry budget (also ingest's, which enqueues most match jobs). */
  matchRetries: MatchJobRetries;
  /** BullMQ's job lock; a dead worker's jobs run again within about 1.5 times this. */
  jobLockMs: number;
  /** How long this process's hold on its queued first attempts outlives its last heartbeat. */
  leaseMs: number;
  sweepIntervalMs: number;
  sweepAfterMs: number;
  /** Unmatched events younger than this are left to the ingest request enqueuing them. */
  eventSweepGraceMs: number;
  sweepBatchSize: number;
  /** How long the sweeper's enqueue of events waits for the queues' store. */
  sweepEnqueueTimeoutMs: number;
  indexReloadMs: number;
  /** How long a finished call stays in the delivery log (null: forever). */
  logRetentionMs: number | null;
  /** Time between two prunings of the delivery log. */
  logPruneIntervalMs: number;
}
