import type { ModelInfo } from '@herald/contract';
import {
  recordKey,
  type BatchContext,
  type Environment,
  type ExpectedContext,
} from '@herald/store';

/** At most this many models are remembered (a process serving more starts over). */
const MAX_MODELS = 10_000;

/** What a batch of item events is validated against when it comes from the cache. */
export interface CachedContext {
  environments: Environment[];
  /** By environment, by id: copies, the planner may add to them. */
  models: Map<string, Map<string, ModelInfo>>;
  /** Sent with the write, which refuses it if any of it changed meanwhile. */
  expected: ExpectedContext;
}

/**
 * The environments and models of recent batches, so that a batch of item events can skip the
 * pre-read (one round trip and ~40 % of a one-event request's Postgres time). Never trusted: the
 * write checks in the same statement that every environment and model version the batch was
 * validated against still holds (herald_write_item_batch's `expected`) and writes nothing if not,
 * so a model deleted or changed by any process is never written against; the caller then takes
 * the full path, which reads everything afresh. Per process; a stale entry only costs a retry.
 */
export class BatchContextCache {
  #environments: Environment[] | undefined;
  readonly #models = new Map<string, { environment: string; info: ModelInfo; version: string }>();

  /** Keeps what a full pre-read returned. */
  remember(context: BatchContext): void {
    this.#environments = context.environments;
    if (this.#models.size > MAX_MODELS) this.#models.clear();
    for (const [environment, models] of context.models) {
      for (const [id, info] of models) {
        const key = recordKey(environment, id);
        const version = context.modelVersions.get(key);
        if (version !== undefined) this.#models.set(key, { environment, info, version });
      }
    }
  }

  clear(): void {
    this.#environments = undefined;
    this.#models.clear();
  }

  /**
   * The context for a batch touching these environments and models (by id), or undefined when
   * the cache does not know one of them (it may have been created since: ask the database).
   */
  lookup(
    environmentIds: ReadonlySet<string>,
    models: readonly { environment: string; id: string }[],
  ): CachedContext | undefined {
    const environments = this.#environments;
    if (!environments) return undefined;
    const used = environments.filter((e) => environmentIds.has(e.id));
    if (used.length !== environmentIds.size) return undefined;
    const byEnvironment = new Map<string, Map<string, ModelInfo>>();
    const expected: ExpectedContext['models'][number][] = [];
    for (const { environment, id } of models) {
      const entry = this.#models.get(recordKey(environment, id));
      if (!entry) return undefined;
      let byId = byEnvironment.get(environment);
      if (!byId) byEnvironment.set(environment, (byId = new Map<string, ModelInfo>()));
      if (byId.has(id)) continue;
      byId.set(id, entry.info);
      expected.push({ environment, id, version: entry.version });
    }
    return {
      environments: used,
      models: byEnvironment,
      expected: { environments: used, models: expected },
    };
  }
}
