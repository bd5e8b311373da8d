import type { ModelInfo } from '@herald/contract';
import type { Queryable } from './db.js';
import type { Environment } from './environments.js';
import { toModel, type ModelRow } from './models.js';

export interface BatchContext {
  /** The event ids among those asked that are already stored. */
  knownEventIds: Set<string>;
  environments: Environment[];
  /** Models named by id or api_key, by environment, by id. */
  models: Map<string, Map<string, ModelInfo>>;
  /** Each model's version (see herald_batch_context), by recordKey(environment, id). */
  modelVersions: Map<string, string>;
}

interface ContextRow extends Record<string, unknown> {
  known: string[];
  environments: { id: string; locales: string[]; is_primary: boolean }[];
  models: (ModelRow & { environment: string })[];
}

/**
 * What accepting a batch of events needs to know first, in one round trip: which ids are
 * already stored, the environments, and the models the batch names (by id or api_key).
 */
export async function loadBatchContext(
  db: Queryable,
  eventIds: readonly string[],
  modelKeys: readonly { environment: string; key: string }[],
): Promise<BatchContext> {
  // herald_batch_context (migration 006): the same query, its plan prepared once per connection.
  const { rows } = await db.query<ContextRow>(
    'SELECT known, environments, models FROM herald_batch_context($1::text[], $2::json)',
    [eventIds, JSON.stringify(modelKeys)],
  );
  const row = rows[0]!;
  const models = new Map<string, Map<string, ModelInfo>>();
  const modelVersions = new Map<string, string>();
  for (const m of row.models) {
    modelVersions.set(`${m.environment}\u0000${m.id}`, m.version);
    let byId = models.get(m.environment);
    if (!byId) models.set(m.environment, (byId = new Map<string, ModelInfo>()));
    byId.set(m.id, toModel(m));
  }
  return {
    knownEventIds: new Set(row.known),
    environments: row.environments.map((e) => ({
      id: e.id,
      locales: e.locales,
      isPrimary: e.is_primary,
    })),
    models,
    modelVersions,
  };
}
