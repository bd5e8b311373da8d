import {
  recordFlowOutcomes,
  recordWebhookCallAttempts,
  type ReleasedLaneCall,
  type WebhookCallAttempt,
} from '@herald/store';
import { BatchWriter } from '../../shared/batch-loader.js';
import type { AttemptRollups } from '../limits/rollups.js';
import type { SystemResources } from '../resources.js';

/** An attempt's outcome as recorded: the call's new state and the attempt's log row. */
export type OutcomeRecord = WebhookCallAttempt & {
  webhookId: string;
  /** A lane call (flow control): its final outcome releases the next calls of its lane. */
  lane: boolean;
};

/** `lease` holds the lane calls an outcome releases for this process (see recordOutcome). */
export type OutcomeRecorderDeps = Pick<SystemResources, 'db' | 'lease'> & {
  /** Where the attempts' stats go once their outcomes are recorded (and the circuits follow). */
  rollups: Pick<AttemptRollups, 'add'>;
};

/**
 * Records attempts' outcomes, several per statement (BatchWriter). Those of lane calls (flow
 * control) are written in one transaction with the release of their lanes' next calls
 * (recordFlowOutcomes): the released calls due now are held by this process's lease in that
 * transaction, and counted as in memory (Lease.create) from its commit.
 */
export class OutcomeRecorder {
  readonly #writer: BatchWriter<OutcomeRecord, ReleasedLaneCall[]>;

  constructor(private readonly deps: OutcomeRecorderDeps) {
    this.#writer = new BatchWriter((items) => this.#recordMany(items));
  }

  /**
   * Records one attempt's outcome; resolves once it is committed, with the lane calls it
   * released, for the caller to start or enqueue. A statement's releases are answered to one of
   * its outcomes (the first lane call's), so they are started once.
   */
  async recordOutcome(callId: string, outcome: OutcomeRecord): Promise<ReleasedLaneCall[]> {
    return (await this.#writer.write(callId, outcome)) ?? [];
  }

  async #recordMany(items: { id: string; value: OutcomeRecord }[]): Promise<ReleasedLaneCall[][]> {
    const { db, rollups, lease } = this.deps;
    const attempts = items.map(({ id, value }) => ({ id, attempt: value }));
    const lanes = items.filter(({ value }) => value.lane);
    let released: ReleasedLaneCall[] = [];
    if (lanes.length === 0) {
      await recordWebhookCallAttempts(db, attempts, undefined, false);
    } else {
      const finished = lanes.filter(({ value }) => value.status !== 'rescheduled');
      released = await lease.create(() =>
        recordFlowOutcomes(
          db,
          finished.map(({ id }) => id),
          (tx) => recordWebhookCallAttempts(tx, attempts, undefined, false),
          lease.id,
        ),
      );
    }
    rollups.add(
      items.map(({ value }) => ({
        webhookId: value.webhookId,
        status: value.status,
        lastSentAt: value.lastSentAt,
        durationMs: value.durationMs,
        tripsCircuit: value.tripsCircuit,
      })),
    );
    return items.map((item) => (item === lanes[0] ? released : []));
  }
}
