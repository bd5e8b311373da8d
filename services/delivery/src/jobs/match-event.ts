import type { Job } from 'bullmq';
import { EventMatchJobData, MATCH_EVENT_JOB, QUEUE_EVENT_MATCH } from '@herald/contract';
import { findEventsToMatch, isDbUnavailableError, type Db } from '@herald/store';
import type { DeliveryMetrics } from '../metrics.js';
import type { NewCall } from '../shared/calls.js';
import { putOffUntilDatabaseReturns, type DatabaseReturns } from '../shared/outage.js';
import type { FirstAttempts } from '../systems/attempt/first-attempts.js';
import type { Matcher } from '../systems/match/match.js';
import type { Lease } from '../systems/recovery/lease.js';

interface MatchJobContext {
  db: Db;
  matcher: Pick<Matcher, 'match'>;
  metrics: Pick<DeliveryMetrics, 'eventsMissing' | 'jobsWaitingForDatabase'>;
  /** This process's lease: while it is not valid, nothing new is held by it. */
  lease: Pick<Lease, 'valid'>;
  /** This process's first attempts, where the new calls start. */
  firstAttempts: Pick<FirstAttempts<NewCall>, 'add' | 'below'>;
  /** Matching waits while this many first attempts are queued or in flight (back-pressure). */
  maxFirstAttempts: number;
  /** Brings the job back once the database is (after an outage). */
  databaseReturns: DatabaseReturns;
}

/**
 * Some events of a match job are not in this database. Events are never deleted, so they are
 * either not visible yet (a replica behind) or the job was enqueued by another deployment sharing
 * this Redis prefix. Either way the job must not complete as if it had matched them: it is
 * retried, then kept in the failed set with this message.
 */
class EventsNotFoundError extends Error {
  constructor(missing: number, total: number) {
    super(
      `${missing} of the job's ${total} events are not in this database (not visible yet, or ` +
        `the job comes from another deployment sharing REDIS_PREFIX); will retry`,
    );
    this.name = 'EventsNotFoundError';
  }
}

/**
 * Turns events stored together into one webhook_call per (event, matching webhook) (Matcher),
 * then starts the calls' first attempts here, holding them under this process's lease. Safe to
 * run twice: calls are unique per (event, webhook) and events already matched are skipped; the
 * calls a dead run made are taken over by the sweeper once its lease runs out. While Postgres is
 * unreachable the job waits for it without spending attempts.
 */
async function handler(
  ctx: MatchJobContext,
  data: EventMatchJobData,
  job: Job,
  token: string | undefined,
): Promise<void> {
  await ctx.firstAttempts.below(ctx.maxFirstAttempts);
  // A lease that could not be renewed may be taken over at any moment: hold nothing new by it.
  if (!ctx.lease.valid) return waitForDatabase(ctx, job, token);
  let missing: number;
  let started: readonly NewCall[];
  try {
    const found = await findEventsToMatch(ctx.db, data.eventIds);
    missing = new Set(data.eventIds).size - found.events.length;
    started = await ctx.matcher.match(found.events, found.webhooksGeneration);
  } catch (error) {
    if (isDbUnavailableError(error)) return waitForDatabase(ctx, job, token);
    throw error;
  }
  ctx.firstAttempts.add(started);
  if (missing > 0) {
    ctx.metrics.eventsMissing.inc(missing);
    throw new EventsNotFoundError(missing, data.eventIds.length);
  }
}

function waitForDatabase(
  ctx: MatchJobContext,
  job: Job,
  token: string | undefined,
): Promise<never> {
  ctx.metrics.jobsWaitingForDatabase.inc({ queue: QUEUE_EVENT_MATCH });
  return putOffUntilDatabaseReturns(job, token, ctx.databaseReturns);
}

export const matchEvent = { name: MATCH_EVENT_JOB, schema: EventMatchJobData, handler };
