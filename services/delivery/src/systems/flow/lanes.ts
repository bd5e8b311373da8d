import { errorMessage } from '@herald/contract';
import { callContent, type CallContent } from '@herald/payload';
import { enqueueDueCalls } from '@herald/runtime';
import {
  claimFlowCall,
  isSequential,
  type ReleasedLaneCall,
  type StoredEvent,
  type WebhookRecord,
} from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { DeliverySettings } from '../../settings.js';
import type { NewCall } from '../../shared/calls.js';
import type { SystemResources } from '../resources.js';

/** What a lane call's claim came to: it goes with this content, waits until then, or not. */
export type Claimed =
  | { kind: 'go'; content: CallContent }
  | { kind: 'wait'; until: Date }
  | { kind: 'stop' }
  | { kind: 'free' };

/**
 * `lease` holds the released calls this process attempts and lets go of the others;
 * `deliverQueue` gets the jobs of released batches whose window is still open.
 */
export type LanesDeps = Pick<
  SystemResources,
  'db' | 'loaders' | 'lease' | 'deliverQueue' | 'logger'
> & {
  metrics: Pick<DeliveryMetrics, 'flowClaims'>;
};

/**
 * Flow control (docs/api.md, Flow control): a lane call's claim before its attempt, the events a
 * call carries, and the lane calls an outcome released (recorded by OutcomeRecorder, which
 * returns them).
 */
export class Lanes {
  /**
   * How long an attempt's claim of a lane call keeps another attempt of it waiting (longer than
   * any attempt lasts; a dead process's claim lapses so).
   */
  readonly #claimBusyMs: number;

  constructor(
    private readonly deps: LanesDeps,
    settings: Pick<DeliverySettings, 'timeoutMs'>,
  ) {
    // An attempt lasts at most the timeout: a claim older than twice that is a dead process's.
    this.#claimBusyMs = 2 * settings.timeoutMs + 1000;
  }

  /**
   * Claims a lane call for its attempt (claimFlowCall) and reads the events it carries. Parked
   * (an earlier call of its lane is unfinished) or finished: nothing to do here (the release by
   * that earlier call's outcome enqueues it).
   */
  async claim(callId: string, webhook: WebhookRecord, known?: StoredEvent): Promise<Claimed> {
    const { db, metrics } = this.deps;
    const claimed = await claimFlowCall(db, callId, isSequential(webhook), this.#claimBusyMs);
    metrics.flowClaims.inc({ state: claimed.state });
    switch (claimed.state) {
      case 'go': {
        const content = await this.contentOf(webhook, claimed.eventIds, known, claimed.batch);
        return content ? { kind: 'go', content } : { kind: 'stop' };
      }
      case 'busy':
      case 'window':
        return { kind: 'wait', until: claimed.waitUntil };
      case 'free':
        return { kind: 'free' };
      case 'parked':
      case 'done':
        return { kind: 'stop' };
    }
  }

  /**
   * What a call carrying `eventIds` sends (callContent); null when none of them is stored. `batch`:
   * the call is a batch (its lane says so, whatever the webhook's settings now: a batch made
   * before a PUT removed `batch` still lists its entries).
   */
  async contentOf(
    webhook: WebhookRecord,
    eventIds: readonly string[],
    known: StoredEvent | undefined,
    batch: boolean,
  ): Promise<CallContent | null> {
    const settings = { coalesceEvents: webhook.coalesceEvents, batch: batch ? true : null };
    if (known && eventIds.length === 1 && eventIds[0] === known.id) {
      return callContent(settings, [known]);
    }
    const events = await Promise.all(
      eventIds.map((id) =>
        id === known?.id ? Promise.resolve(known) : this.deps.loaders.events.load(id),
      ),
    );
    const found = events.filter(
      (event): event is StoredEvent => event !== null && event !== undefined,
    );
    return found.length > 0 ? callContent(settings, found) : null;
  }

  /**
   * The lane calls an outcome released: a batch whose window is still open gets a job due when
   * it ends; those due now are returned with their event and webhook, for the caller to attempt
   * here as first attempts (held by this process's lease). A call that cannot start here is let
   * go, as due, for the sweeper.
   */
  async takeReleased(calls: readonly ReleasedLaneCall[]): Promise<NewCall[]> {
    const { lease, loaders } = this.deps;
    const now = Date.now();
    const later = calls.filter((call) => call.dueAt !== null && call.dueAt.getTime() > now);
    lease.letGo(later.map((call) => call.id));
    await enqueueDueCalls(this.deps.deliverQueue, later, true);
    const due = calls.filter((call) => !later.includes(call));
    if (due.length === 0) return [];
    try {
      const loaded = await Promise.all(
        // A released call is pending (parked calls were never attempted): its event and webhook
        // are what its attempt reads.
        due.map(async (released): Promise<NewCall | null> => {
          const { id, webhookId, eventId } = released;
          const [webhook, event] = await Promise.all([
            loaders.webhooks.load(webhookId),
            loaders.events.load(eventId),
          ]);
          if (!event) return null;
          const claimed = released.claimed ? released.eventIds : null;
          return { id, webhookId, event, webhook: webhook ?? null, placed: true, claimed };
        }),
      );
      const started = loaded.filter((call): call is NewCall => call !== null);
      const skipped = due.filter((call) => !started.some((s) => s.id === call.id));
      lease.letGo(skipped.map((call) => call.id));
      await lease.release(
        skipped.map((call) => call.id),
        true,
      );
      return started;
    } catch (error) {
      this.deps.logger.warn(
        { err: errorMessage(error) },
        'released lane calls not started here; the sweeper will',
      );
      const ids = due.map((call) => call.id);
      lease.letGo(ids);
      await lease.release(ids, true);
      return [];
    }
  }
}
