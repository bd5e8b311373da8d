import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '@herald/contract';
import type { Logger } from '@herald/runtime';
import {
  addReplayItems,
  claimBulkJob,
  dropWebhookCall,
  endBulkJob,
  findBulkJob,
  findEvents,
  findWebhook,
  finishBulkJobItems,
  isBulkJobRunning,
  isDbUnavailableError,
  listReplayCandidates,
  resumeBulkJob,
  selectBulkResendCalls,
  takeBulkJobItems,
  takeReplayCall,
  type BulkItemOutcome,
  type BulkJobItem,
  type BulkJobRecord,
  type BulkResendFilter,
  type Db,
  type ReplayCandidate,
  type ReplayFilter,
  type WebhookRecord,
} from '@herald/store';
import type { ModelCache } from '../../shared/loaders.js';
import { contentFor } from '../match/event-content.js';
import { WebhookIndex } from '../match/webhook-index.js';

/** Events read per page of a replay's selection. */
const SELECT_PAGE = 1000;
/** Items taken per batch at most (a paced job takes about a second's worth). */
const MAX_BATCH = 500;

/**
 * What a bulk job's item came to: sent and succeeded or not, skipped (not sent: its call is on
 * its way, or it, its webhook or its event is gone), or stopped (not sent: the job is stopping).
 */
export type JobItemResult = BulkItemOutcome | 'stopped';

/** What lets a bulk job's item go: see Deliveries.attemptForJob. */
export interface JobItemGate {
  /** True once the job is stopping here (the process stops, its lease is lost): give up waiting. */
  stopping: () => boolean;
  /** Asked just before the request is sent: false when the job was cancelled meanwhile. */
  mayStart: () => Promise<boolean>;
}

export interface BulkJobsOptions {
  db: Db;
  logger: Logger;
  /** This process's lease: the jobs it runs are held by it. */
  lease: { id: string; leaseMs: number; valid: boolean };
  /** How often the process looks for a job to run. */
  pollMs: number;
  /** Jobs run at once by this process. */
  maxJobs: number;
  /**
   * Attempts a bulk resend has in flight at once (the webhooks' in-flight limit: more would only
   * wait for a slot).
   */
  concurrency: number;
  /** Models of the events a replay's field-aware entries read (event-content.ts). */
  models: ModelCache;
  /**
   * Sends one item's call (Deliveries.attemptForJob): `stopping` gives up waiting for the
   * webhook's limits, `mayStart` is asked last, just before the request goes.
   */
  attempt: (
    item: { callId: string; newCall: boolean; trigger: 'bulk_resend' | 'replay' },
    gate: JobItemGate,
  ) => Promise<JobItemResult>;
  /** Hears a job that ended (completed or failed), for the notices. */
  onEnded?: (job: BulkJobRecord) => void;
  /** Hears each item finished. */
  onItems?: (outcomes: readonly BulkItemOutcome[]) => void;
}

/**
 * Runs bulk jobs (bulk resends and replays, docs/api.md, Bulk jobs) in this delivery process:
 * takes a job no live process holds, makes its selection if it has none yet, then sends its
 * items batch by batch at its pace. A bulk resend's batch goes out in parallel (bounded by the
 * delivery pool and the webhook's in-flight limit); a replay's one at a time, each waiting for
 * the previous answer, so the receiver gets the events in the order they occurred.
 */
export class BulkJobs {
  #timer: NodeJS.Timeout | undefined;
  #running = new Map<string, Promise<void>>();
  #stopping = false;
  #polling: Promise<void> | undefined;

  constructor(private readonly options: BulkJobsOptions) {}

  start(): void {
    this.#timer = setInterval(() => {
      this.#polling ??= this.poll().finally(() => (this.#polling = undefined));
    }, this.options.pollMs);
    this.#timer.unref();
  }

  /** Stops taking jobs; the ones running stop after their batch, still held (then taken over). */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#timer);
    await this.#polling;
    await Promise.all(this.#running.values());
  }

  /** Takes jobs while this process runs fewer than maxJobs. */
  async poll(): Promise<void> {
    const { db, lease, logger } = this.options;
    while (!this.#stopping && lease.valid && this.#running.size < this.options.maxJobs) {
      let job: BulkJobRecord | null;
      try {
        job = await claimBulkJob(db, lease.id, lease.leaseMs, [...this.#running.keys()]);
      } catch (error) {
        if (!isDbUnavailableError(error))
          logger.warn({ err: errorMessage(error) }, 'bulk job claim failed');
        return;
      }
      if (!job) return;
      const id = job.id;
      const run = this.#run(job)
        .catch((error: unknown) => {
          // The job stays held: this process takes it again at a next poll (or another process
          // once this one's lease runs out), and carries on from its items' states.
          logger.warn({ err: errorMessage(error), bulkJobId: id }, 'bulk job interrupted');
        })
        .finally(() => this.#running.delete(id));
      this.#running.set(id, run);
    }
  }

  async #run(job: BulkJobRecord): Promise<void> {
    const { db, lease, logger } = this.options;
    logger.info({ bulkJobId: job.id, kind: job.kind }, 'bulk job started');
    await resumeBulkJob(db, job.id, job.kind);
    if (job.matched === null) {
      if (job.kind === 'replay') {
        if (!(await this.#selectReplay(job))) return;
      } else {
        const matched = await selectBulkResendCalls(db, job.id, job.filter as BulkResendFilter);
        logger.info({ bulkJobId: job.id, matched }, 'bulk resend selected its calls');
      }
    }
    const perSecond = job.ratePerSecond;
    const batchSize = perSecond
      ? Math.max(1, Math.min(MAX_BATCH, Math.round(perSecond)))
      : MAX_BATCH;
    const spacingMs = perSecond ? 1000 / perSecond : 0;
    let nextStart = performance.now();
    const stopping = (): boolean => this.#stopping || !lease.valid;
    const rate = new RateWindow();
    rate.add(0);
    for (;;) {
      if (stopping()) return;
      if (job.kind === 'replay' && !(await this.#replayWebhook(job))) return;
      const items = await takeBulkJobItems(db, job.id, lease.id, batchSize);
      if (items === null) return; // cancelled, or taken over
      if (items.length === 0) return this.#end(job, { state: 'completed' });
      const paced = async (item: BulkJobItem): Promise<JobItemResult> => {
        const at = nextStart;
        nextStart = Math.max(performance.now(), nextStart) + spacingMs;
        const wait = at - performance.now();
        if (wait > 0) await sleep(wait);
        return this.#send(job, item, stopping);
      };
      // Lanes take the batch's items in order: a bulk resend `concurrency` of them, a replay
      // one, so that each of its items waits for the previous answer.
      const results: JobItemResult[] = [];
      let next = 0;
      const lane = async (): Promise<void> => {
        for (let i = next++; i < items.length; i = next++) results[i] = await paced(items[i]!);
      };
      const lanes = job.kind === 'replay' ? 1 : Math.min(this.options.concurrency, items.length);
      await Promise.all(Array.from({ length: lanes }, lane));
      // Items not sent because the job is stopping stay `sending`: the next holder settles them.
      const finished: { position: string; outcome: BulkItemOutcome }[] = [];
      items.forEach((item, i) => {
        const outcome = results[i]!;
        if (outcome !== 'stopped') finished.push({ position: item.position, outcome });
      });
      rate.add(finished.length);
      await finishBulkJobItems(db, job.id, lease.id, finished, rate.perSecond());
      this.options.onItems?.(finished.map((o) => o.outcome));
    }
  }

  async #send(
    job: BulkJobRecord,
    item: BulkJobItem,
    stopping: () => boolean,
  ): Promise<JobItemResult> {
    let callId = item.callId;
    let newCall = item.newCall;
    if (job.kind === 'replay' && callId === null) {
      const taken = await takeReplayCall(
        this.options.db,
        job.id,
        item.position,
        item.eventId!,
        job.webhookId!,
      );
      if (!taken) return 'skipped';
      ({ callId, newCall } = taken);
    }
    if (callId === null) return 'skipped';
    const { db, lease } = this.options;
    const mayStart = (): Promise<boolean> => isBulkJobRunning(db, job.id, lease.id);
    const result = await this.options.attempt(
      { callId, newCall, trigger: job.kind },
      { stopping, mayStart },
    );
    // A replay's new call that will not go (the job was cancelled or taken over meanwhile): the
    // cancel could not end it if it was made after the cancel; a takeover's holder sends it.
    if (result === 'stopped' && newCall && !stopping() && job.kind === 'replay') {
      const cancelled = await findBulkJob(db, job.id);
      if (cancelled?.state === 'cancelled') {
        await dropWebhookCall(db, callId, 'the replay was cancelled');
      }
    }
    return result;
  }

  /**
   * A replay's webhook, if it is still there and enabled; otherwise the job cannot go on: it
   * ends as failed, and null.
   */
  async #replayWebhook(job: BulkJobRecord): Promise<WebhookRecord | null> {
    const webhook = await findWebhook(this.options.db, job.webhookId!);
    if (webhook?.enabled) return webhook;
    const reason = webhook ? 'the webhook was disabled' : 'the webhook was deleted';
    await this.#end(job, { state: 'failed', reason });
    return null;
  }

  /**
   * A replay's selection: the range's events, page by page in occurrence order, matched against
   * the webhook's entries as they are now. Each page is stored with the place it ends at, so a
   * job taken over carries on from there.
   */
  async #selectReplay(job: BulkJobRecord): Promise<boolean> {
    const { db, lease } = this.options;
    const webhook = await this.#replayWebhook(job);
    if (!webhook) return false;
    const index = new WebhookIndex();
    index.replaceAll([webhook]);
    const entityTypes = [...new Set(webhook.events.map((entry) => entry.entity_type))];
    const range = (job.filter as ReplayFilter).occurred_at;
    let after = job.selectAfter;
    for (;;) {
      if (this.#stopping || !lease.valid) return false;
      const page = await listReplayCandidates(db, {
        range,
        after,
        entityTypes,
        limit: SELECT_PAGE,
      });
      const last = page.at(-1);
      const matching = await this.#matchReplayPage(index, page);
      const complete = page.length < SELECT_PAGE;
      const place = last ? { occurredAt: last.occurredAt, seq: last.seq } : after;
      if (!(await addReplayItems(db, job.id, lease.id, matching, place, complete))) return false;
      after = place;
      if (complete) return true;
    }
  }

  /** The ids of a page's events the webhook matches; those it matches on content read in full. */
  async #matchReplayPage(index: WebhookIndex, page: readonly ReplayCandidate[]): Promise<string[]> {
    const needing = page.filter((event) => index.needsContent(event)).map((event) => event.id);
    const full = new Map(
      (needing.length > 0 ? await findEvents(this.options.db, needing) : []).map((e) => [e.id, e]),
    );
    const matching: string[] = [];
    for (const candidate of page) {
      const event = full.get(candidate.id);
      const content = event && (await contentFor(index, this.options.models, event));
      if (index.match(candidate, content).length > 0) matching.push(candidate.id);
    }
    return matching;
  }

  async #end(
    job: BulkJobRecord,
    end: { state: 'completed' } | { state: 'failed'; reason: string },
  ): Promise<void> {
    const ended = await endBulkJob(this.options.db, job.id, this.options.lease.id, end);
    if (!ended) return;
    this.options.logger.info(
      {
        bulkJobId: ended.id,
        state: ended.state,
        succeeded: ended.succeeded,
        failed: ended.failed,
        skipped: ended.skipped,
      },
      'bulk job ended',
    );
    this.options.onEnded?.(ended);
  }
}

/** Items finished per second over about the last minute. */
class RateWindow {
  #marks: { at: number; count: number }[] = [];

  add(count: number): void {
    const now = performance.now();
    this.#marks.push({ at: now, count });
    while (this.#marks.length > 1 && now - this.#marks[0]!.at > 60_000) this.#marks.shift();
  }

  perSecond(): number | null {
    const first = this.#marks[0];
    const last = this.#marks.at(-1);
    if (!first || !last || last === first) return null;
    const counted = this.#marks.slice(1).reduce((sum, mark) => sum + mark.count, 0);
    return counted / ((last.at - first.at) / 1000);
  }
}
