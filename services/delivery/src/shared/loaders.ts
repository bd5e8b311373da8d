import type { ModelInfo } from '@herald/contract';
import type { ModelSource } from '@herald/payload';
import type { AttemptRollups } from '../systems/limits/rollups.js';
import {
  findEvents,
  findWebhookCalls,
  findWebhooks,
  loadModels,
  recordFlowOutcomes,
  recordWebhookCallAttempts,
  type ReleasedLaneCall,
  type Db,
  type VersionedModel,
  type WebhookCallAttempt,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import { BatchLoader, BatchWriter } from './batch-loader.js';

/** The workers' reads by id and attempt writes, batched (see BatchLoader, BatchWriter). */
export interface DeliveryLoaders {
  calls: BatchLoader<WebhookCallRecord>;
  webhooks: BatchLoader<WebhookRecord>;
  events: BatchLoader<StoredEvent>;
  /** Models for serializing entities (ModelCache). */
  models: ModelCache;
  /**
   * Attempts' outcomes, written several per statement; those of lane calls (flow control) in
   * one transaction with the release of their lanes' next calls (recordFlowOutcomes).
   */
  attempts: BatchWriter<WebhookCallAttempt & { webhookId: string; lane: boolean }>;
}

const modelKey = (environment: string, id: string) => `${environment}\u0000${id}`;

/**
 * Models for serializing entities, by (environment, id), each kept with the version it was read
 * at (item_types.xmin, which every change of the model or of its fields moves). An event read by
 * findEvents carries the version of its model at that moment (StoredEvent.modelVersion): when the
 * kept model has that version it is used as is, so a delivery of an unchanged model costs no
 * query. Anything else (another version, no version known, a block's model) is read from Postgres,
 * the reads of the deliveries rendered at once sharing the queries.
 */
export class ModelCache {
  readonly #models = new Map<string, VersionedModel>();
  readonly #loader: BatchLoader<{ key: string; model: VersionedModel }>;

  constructor(
    db: Db,
    /** Models kept at most (all are dropped when it is reached; they are read again on use). */
    private readonly maxModels = 10_000,
  ) {
    this.#loader = new BatchLoader<{ key: string; model: VersionedModel }>(
      async (keys) => {
        const byEnvironment = new Map<string, string[]>();
        for (const key of keys) {
          const [environment = '', id = ''] = key.split('\u0000');
          byEnvironment.set(environment, [...(byEnvironment.get(environment) ?? []), id]);
        }
        const loaded = await Promise.all(
          [...byEnvironment].map(async ([environment, ids]) =>
            [...(await loadModels(db, environment, ids)).values()].map((model) => ({
              key: modelKey(environment, model.id),
              model,
            })),
          ),
        );
        return loaded.flat();
      },
      (entry) => entry.key,
    );
  }

  /** The models source for rendering `event`: its own model comes from memory if unchanged. */
  forEvent(event: Pick<StoredEvent, 'environment' | 'itemTypeId' | 'modelVersion'>): ModelSource {
    return async (environment, ids) => {
      const models = new Map<string, ModelInfo>();
      const missing: string[] = [];
      for (const id of ids) {
        const kept = this.#models.get(modelKey(environment, id));
        const seen =
          environment === event.environment && id === event.itemTypeId
            ? event.modelVersion
            : undefined;
        if (kept && seen && kept.version === seen) models.set(id, kept);
        else missing.push(id);
      }
      const loaded = await Promise.all(
        missing.map((id) => this.#loader.load(modelKey(environment, id))),
      );
      for (const entry of loaded) {
        if (!entry) continue;
        models.set(entry.model.id, entry.model);
        if (this.#models.size >= this.maxModels) this.#models.clear();
        this.#models.set(entry.key, entry.model);
      }
      return models;
    };
  }
}

/**
 * The lane calls an outcome releases (flow control): those due now are held by `holder` in the
 * outcome's transaction, and counted as in memory by `hold` (Lease.create) from its commit, for
 * `onReleased` to attempt here or enqueue.
 */
export interface FlowRelease {
  holder: string;
  hold: (statement: () => Promise<ReleasedLaneCall[]>) => Promise<ReleasedLaneCall[]>;
  onReleased: (calls: ReleasedLaneCall[]) => Promise<void>;
}

/**
 * `rollups`: where the attempts' stats go once their outcomes are recorded (AttemptRollups);
 * without it, each batch's statement writes them itself.
 */
export function deliveryLoaders(
  db: Db,
  rollups?: AttemptRollups,
  /** Flow control: what becomes of the lane calls an outcome releases (see FlowRelease). */
  flow?: FlowRelease,
): DeliveryLoaders {
  return {
    calls: new BatchLoader(
      (ids) => findWebhookCalls(db, ids),
      (call) => call.id,
    ),
    webhooks: new BatchLoader(
      (ids) => findWebhooks(db, ids),
      (webhook) => webhook.id,
    ),
    events: new BatchLoader(
      (ids) => findEvents(db, ids),
      (event) => event.id,
    ),
    models: new ModelCache(db),
    attempts: new BatchWriter(async (items) => {
      const attempts = items.map(({ id, value }) => ({ id, attempt: value }));
      const lanes = items.filter(({ value }) => value.lane);
      if (lanes.length === 0) {
        await recordWebhookCallAttempts(db, attempts, undefined, rollups === undefined);
      } else {
        const finished = lanes.filter(({ value }) => value.status !== 'rescheduled');
        const record = () =>
          recordFlowOutcomes(
            db,
            finished.map(({ id }) => id),
            (tx) => recordWebhookCallAttempts(tx, attempts, undefined, rollups === undefined),
            flow?.holder ?? null,
          );
        const released = flow ? await flow.hold(record) : await record();
        // Lost (Redis away, a crash), a released call is taken over or re-enqueued by the sweeper.
        await flow?.onReleased(released).catch(() => undefined);
      }
      rollups?.add(
        items.map(({ value }) => ({
          webhookId: value.webhookId,
          status: value.status,
          lastSentAt: value.lastSentAt,
          durationMs: value.durationMs,
          tripsCircuit: value.tripsCircuit,
        })),
      );
    }),
  };
}
