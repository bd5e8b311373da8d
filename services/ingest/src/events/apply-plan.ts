import { BLOCK_FIELD_TYPES, type ItemVersion, type ModelInfo } from '@herald/contract';
import {
  captureItemVersions,
  deleteEnvironment,
  deleteModel,
  deleteRecords,
  insertEvents,
  loadBlocks,
  loadModels,
  promoteEnvironment,
  recordKey,
  replaceRecordTexts,
  syncBlocks,
  upsertBlocks,
  upsertEnvironment,
  upsertModel,
  upsertRecords,
  writeItemBatch,
  type BlockSync,
  type BlockWrite,
  type Db,
  type ItemVersionCapture,
  type NewEvent,
  type Queryable,
  type RecordText,
  type RecordWrite,
  type TextBlock,
} from '@herald/store';
import type { BatchPlan, Effect } from './plan.js';
import { searchRows } from './search-rows.js';

type ItemEffect = Extract<Effect, { kind: 'item-write' | 'item-delete' }>;
type ItemWrite = Extract<Effect, { kind: 'item-write' }>;
const NO_BLOCKS: ReadonlyMap<string, TextBlock> = new Map();
const NO_MODELS: ReadonlyMap<string, ModelInfo> = new Map();

/**
 * Stores a plan's events and applies those it stored (a repeated id is stored and applied once);
 * returns their ids. A batch of item saves on distinct records takes one statement and one commit
 * (writeItemBatch); any other, one transaction.
 */
export async function applyPlan(db: Db, plan: BatchPlan): Promise<Set<string>> {
  const rows = plan.events.map((p) => p.row);
  const batch = fastPathWrites(plan);
  if (batch) return (await writeItemBatch(db, { events: rows, ...batch })).inserted;
  return db.transaction(async (tx) => {
    const inserted = await insertEvents(tx, rows);
    await applyEffects(
      tx,
      plan.events.filter((p) => inserted.has(p.row.id)).map((p) => p.effect),
      plan,
    );
    return inserted;
  });
}

/**
 * applyPlan's one statement for a plan, as writeItemBatch takes it (without the context it was
 * validated against), or undefined when the plan does not take that path.
 */
export function itemBatchOf(
  plan: BatchPlan,
): { events: NewEvent[]; records: RecordWrite[]; texts: RecordText[] } | undefined {
  const batch = fastPathWrites(plan);
  return batch ? { events: plan.events.map((p) => p.row), ...batch } : undefined;
}

/**
 * The records and documents of a plan that writeItemBatch can take in one statement, or
 * undefined: only item saves and publishes (and events that store nothing), each record once,
 * of models without block fields (so no stored blocks can need reconciling).
 */
function fastPathWrites(
  plan: BatchPlan,
): { records: RecordWrite[]; texts: RecordText[] } | undefined {
  const records: RecordWrite[] = [];
  const texts: RecordText[] = [];
  const seen = new Set<string>();
  for (const { row, effect } of plan.events) {
    if (effect.kind === 'none') continue;
    if (effect.kind !== 'item-write' || effect.write.mode === 'unpublish') return undefined;
    const { write } = effect;
    const key = recordKey(write.environment, write.id);
    const models = plan.models.get(write.environment) ?? NO_MODELS;
    const model = models.get(write.itemTypeId);
    if (seen.has(key) || !model || model.fields.some((f) => BLOCK_FIELD_TYPES.has(f.fieldType))) {
      return undefined;
    }
    seen.add(key);
    // Without block fields, the validated attributes are the entity's, key for key: handing
    // writeItemBatch that very object lets it write the record from the event's entity.
    const entityAttributes = (row.entity as { attributes?: Record<string, unknown> }).attributes;
    records.push(entityAttributes ? { ...write, attributes: entityAttributes } : write);
    // Empty documents too: writeItemBatch replaces the stored ones with these.
    texts.push(
      ...searchRows(write, {
        locales: plan.environments.get(write.environment)?.locales ?? [],
        models,
        blocks: NO_BLOCKS,
      }),
    );
  }
  return records.length > 0 ? { records, texts } : undefined;
}

/** Applies the effects in order; consecutive item events go to the store in bulk. */
async function applyEffects(
  db: Queryable,
  effects: readonly Effect[],
  plan: BatchPlan,
): Promise<void> {
  // The plan's models, joined by the block models that stored blocks turn out to use.
  const models = new Map(plan.models);
  let run: ItemEffect[] = [];
  const flush = async () => {
    if (run.length > 0) await applyItemRun(db, run, plan, models);
    run = [];
  };
  for (const effect of effects) {
    switch (effect.kind) {
      case 'item-write':
      case 'item-delete':
        run.push(effect);
        continue;
      case 'none':
        continue;
      case 'model-upsert':
        await flush();
        await upsertModel(db, effect.environment, effect.model, effect.fields);
        continue;
      case 'model-delete':
        await flush();
        await deleteModel(db, effect.environment, effect.id);
        continue;
      case 'environment-upsert':
        await flush();
        await upsertEnvironment(db, effect.id, effect.locales);
        continue;
      case 'environment-promote':
        await flush();
        await promoteEnvironment(db, effect.id);
        continue;
      case 'environment-delete':
        await flush();
        await deleteEnvironment(db, effect.id);
        continue;
    }
  }
  await flush();
}

/**
 * Item events in bulk. A record touched several times is written in successive rounds (one
 * write per record per statement), which keeps the events' order for that record.
 */
async function applyItemRun(
  db: Queryable,
  run: readonly ItemEffect[],
  plan: BatchPlan,
  models: Map<string, ReadonlyMap<string, ModelInfo>>,
): Promise<void> {
  const rounds: ItemEffect[][] = [];
  const seen = new Map<string, number>();
  for (const effect of run) {
    const target = effect.kind === 'item-write' ? effect.write : effect.delete;
    const key = recordKey(target.environment, target.id);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (rounds[round] ??= []).push(effect);
  }
  for (const round of rounds) {
    const deletes = round.flatMap((e) => (e.kind === 'item-delete' ? [e.delete] : []));
    const writes = round.flatMap((e) => (e.kind === 'item-write' ? [e] : []));
    // Each round sees the records as the rounds before it left them: every event gets the
    // version it replaces, even when the batch touches its record more than once.
    await captureItemVersions(db, round.map(versionCapture));
    await deleteRecords(db, deletes);
    const written = await upsertRecords(
      db,
      writes.map((e) => e.write),
    );
    const applied = writes.filter((e) => written.has(recordKey(e.write.environment, e.write.id)));
    if (applied.length > 0) await writeBlocksAndTexts(db, applied, written, plan, models);
  }
}

function versionCapture(effect: ItemEffect): ItemVersionCapture {
  if (effect.kind === 'item-delete') {
    const { environment, id } = effect.delete;
    return { eventId: effect.eventId, environment, id, eventType: 'delete', mode: null };
  }
  const { environment, id, eventId, eventType, mode } = effect.write;
  return { eventId, environment, id, eventType, mode };
}

async function writeBlocksAndTexts(
  db: Queryable,
  applied: readonly ItemWrite[],
  written: ReadonlyMap<string, { inserted: boolean }>,
  plan: BatchPlan,
  models: Map<string, ReadonlyMap<string, ModelInfo>>,
): Promise<void> {
  const isNew = (w: RecordWrite) => written.get(recordKey(w.environment, w.id))?.inserted ?? false;
  const blocks: BlockWrite[] = applied.flatMap(({ write, extracted }) =>
    extracted.blocks.map((b) => ({
      environment: write.environment,
      id: b.id,
      itemTypeId: b.itemTypeId,
      rootId: write.id,
      blockParentId: b.parentId,
      attributes: b.attributes,
      updatedAt: write.updatedAt,
      eventId: write.eventId,
    })),
  );
  await upsertBlocks(db, blocks);
  // A new record without blocks has no blocks to reconcile.
  const syncs: BlockSync[] = applied
    .filter(({ write, extracted }) => !isNew(write) || extracted.referencedIds.length > 0)
    .map(({ write, extracted }) => ({
      environment: write.environment,
      rootId: write.id,
      mode: write.mode,
      referencedIds: extracted.referencedIds,
    }));
  await syncBlocks(db, syncs);

  // The text of blocks given by id only comes from the store.
  const storedBlocks = new Map<string, Map<string, TextBlock>>();
  const needStored = applied.filter((e) => e.extracted.idOnlyRefs.length > 0);
  for (const environment of new Set(needStored.map((e) => e.write.environment))) {
    const loaded = await loadBlocks(
      db,
      environment,
      needStored.filter((e) => e.write.environment === environment).map((e) => e.write.id),
    );
    const known = models.get(environment) ?? NO_MODELS;
    const missing = [...new Set([...loaded.values()].map((b) => b.itemTypeId))].filter(
      (id) => !known.has(id),
    );
    const found = await loadModels(db, environment, missing);
    if (found.size > 0) {
      const joined = new Map(known);
      for (const model of found.values()) joined.set(model.id, model);
      models.set(environment, joined);
    }
    storedBlocks.set(
      environment,
      new Map(
        [...loaded.values()].map((b) => [
          b.id,
          { itemTypeId: b.itemTypeId, attributes: b.currentAttributes ?? {} },
        ]),
      ),
    );
  }

  const clear: { environment: string; recordId: string; versions: ItemVersion[] }[] = [];
  const texts: RecordText[] = [];
  for (const { write, extracted } of applied) {
    const versions: ItemVersion[] = write.mode === 'save' ? ['current'] : ['current', 'published'];
    if (!isNew(write)) clear.push({ environment: write.environment, recordId: write.id, versions });
    const blockMap = new Map(storedBlocks.get(write.environment));
    for (const b of extracted.blocks) blockMap.set(b.id, b);
    const rows = searchRows(write, {
      locales: plan.environments.get(write.environment)?.locales ?? [],
      models: models.get(write.environment) ?? NO_MODELS,
      blocks: blockMap,
    });
    // replaceRecordTexts has cleared these versions: an empty document needs no row.
    for (const row of rows) if (row.text) texts.push(row);
  }
  await replaceRecordTexts(db, clear, texts);
}
