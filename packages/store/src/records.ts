import type { ItemVersion, StoredItem } from '@herald/contract';
import type { Db, Queryable } from './db.js';
import type { NewEvent } from './events.js';
import { COMMIT_POSITION_SQL, commitPositionOf, readCommitPosition } from './wal.js';

/**
 * How an item event changes a record (docs/api.md, POST /events):
 * - `save`: create/update of a draft-mode model → the current version;
 * - `publish`: publish, or create/update of a model without draft mode → current and published;
 * - `unpublish`: the current version stays (as sent), the published one goes.
 */
export type RecordMode = 'save' | 'publish' | 'unpublish';

/** The columns an item event sets as sent, typed as the stored record has them. */
type WrittenMeta = Pick<
  StoredItem,
  | 'parentId'
  | 'position'
  | 'creator'
  | 'createdAt'
  | 'updatedAt'
  | 'firstPublishedAt'
  | 'publicationScheduledAt'
  | 'unpublishingScheduledAt'
  | 'isValid'
  | 'isCurrentVersionValid'
  | 'isPublishedVersionValid'
  | 'currentVersion'
  | 'stage'
>;

export interface RecordWrite extends WrittenMeta {
  environment: string;
  id: string;
  itemTypeId: string;
  mode: RecordMode;
  eventId: string;
  eventType: string;
  /** Current attributes, block fields holding block ids. */
  attributes: Record<string, unknown>;
  /** For `publish`: meta.published_at, else the acceptance time. */
  publishedAt: Date;
}

/** Orders meta.current_version: numeric versions by value, others as text. */
export function versionKey(currentVersion: string | null): string {
  if (currentVersion === null) return '';
  return /^\d{1,40}$/.test(currentVersion)
    ? `n${currentVersion.padStart(40, '0')}`
    : `s${currentVersion}`;
}

/** "environment\u0000id": the key under which callers track records across environments. */
export const recordKey = (environment: string, id: string): string => `${environment}\u0000${id}`;

/** The rows of herald_upsert_records' `writes` (functions/herald_upsert_records.sql). */
function recordRows(writes: readonly RecordWrite[]): Record<string, unknown>[] {
  return writes.map((w) => ({
    environment: w.environment,
    id: w.id,
    item_type_id: w.itemTypeId,
    mode: w.mode,
    event_id: w.eventId,
    event_type: w.eventType,
    attributes: w.attributes,
    parent_id: w.parentId,
    position: w.position,
    creator_type: w.creator?.type ?? null,
    creator_id: w.creator?.id ?? null,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
    published_at: w.publishedAt.toISOString(),
    first_published_at: w.firstPublishedAt?.toISOString() ?? null,
    publication_scheduled_at: w.publicationScheduledAt?.toISOString() ?? null,
    unpublishing_scheduled_at: w.unpublishingScheduledAt?.toISOString() ?? null,
    is_valid: w.isValid,
    is_current_version_valid: w.isCurrentVersionValid,
    is_published_version_valid: w.isPublishedVersionValid,
    current_version: w.currentVersion,
    stage: w.stage,
    version_key: versionKey(w.currentVersion),
  }));
}

/**
 * Upserts top-level records in one statement. An event older than the stored record (by
 * updated_at, then current_version) or than its deletion changes nothing: it is not returned.
 * At most one write per record per call (ON CONFLICT cannot touch a row twice in a statement).
 * Returns the records written, by recordKey, each saying whether it was inserted (new).
 */
export async function upsertRecords(
  db: Queryable,
  writes: readonly RecordWrite[],
): Promise<Map<string, { inserted: boolean }>> {
  if (writes.length === 0) return new Map();
  const rows = recordRows(writes);
  const { rows: written } = await db.query<{ environment: string; id: string; inserted: boolean }>(
    'SELECT environment, id, inserted FROM herald_upsert_records($1::json)',
    [JSON.stringify(rows)],
  );
  return new Map(
    written.map((row) => [recordKey(row.environment, row.id), { inserted: row.inserted }]),
  );
}

/** An item event about to be applied, whose record's stored version captureItemVersions reads. */
export interface ItemVersionCapture {
  eventId: string;
  environment: string;
  id: string;
  eventType: string;
  /** How the event writes its record; null for a delete. */
  mode: RecordMode | null;
}

/**
 * Stores on each event (migration 022) the attributes of the version it is about to replace, as
 * stored now (only for events that came without a previous_entity), and the status it gives its
 * record, as upsertRecords computes it. Call it right before the events' records are written, in
 * the same transaction: writeItemBatch does the same within its one statement.
 */
export async function captureItemVersions(
  db: Queryable,
  captures: readonly ItemVersionCapture[],
): Promise<void> {
  if (captures.length === 0) return;
  const rows = captures.map((c) => ({
    event_id: c.eventId,
    environment: c.environment,
    id: c.id,
    event_type: c.eventType,
    mode: c.mode,
  }));
  await db.query(
    `UPDATE events e SET
       previous_attributes = CASE WHEN e.previous_entity IS NULL THEN coalesce(
         CASE WHEN x.event_type IN ('publish', 'unpublish') THEN r.published_attributes
              ELSE r.current_attributes END, '{}') END,
       record_status = CASE x.mode WHEN 'publish' THEN 'published' WHEN 'unpublish' THEN 'draft'
         WHEN 'save' THEN CASE WHEN r.published_attributes IS NOT NULL THEN 'updated'
                               ELSE 'draft' END END
     FROM json_to_recordset($1::json) AS x(event_id text, environment text, id text,
       event_type text, mode text)
     -- One lookup by key per event, as herald_write_item_batch does (migration 022).
     LEFT JOIN LATERAL herald_stored_record(x.environment, x.id) r ON true
     WHERE e.id = x.event_id`,
    [JSON.stringify(rows)],
  );
}

/** A block of a record's current version, extracted from an expanded block field. */
export interface BlockWrite {
  environment: string;
  id: string;
  itemTypeId: string;
  rootId: string;
  blockParentId: string;
  attributes: Record<string, unknown>;
  updatedAt: Date;
  eventId: string;
}

/** Sets the current version of blocks (their published version is left to syncBlocks). */
export async function upsertBlocks(db: Queryable, blocks: readonly BlockWrite[]): Promise<void> {
  if (blocks.length === 0) return;
  const rows = blocks.map((b) => ({
    environment: b.environment,
    id: b.id,
    item_type_id: b.itemTypeId,
    root_id: b.rootId,
    block_parent_id: b.blockParentId,
    attributes: b.attributes,
    updated_at: b.updatedAt.toISOString(),
    event_id: b.eventId,
  }));
  await db.query(
    `INSERT INTO records AS r (environment, id, item_type_id, is_block, root_id, block_parent_id,
       status, current_attributes, created_at, updated_at, last_event_id)
     SELECT x.environment, x.id, x.item_type_id, true, x.root_id, x.block_parent_id, 'draft',
       x.attributes, x.updated_at, x.updated_at, x.event_id
     FROM json_to_recordset($1::json) AS x(environment text, id text, item_type_id text,
       root_id text, block_parent_id text, attributes jsonb, updated_at timestamptz,
       event_id text)
     ON CONFLICT (environment, id) DO UPDATE SET
       item_type_id = EXCLUDED.item_type_id, is_block = true, root_id = EXCLUDED.root_id,
       block_parent_id = EXCLUDED.block_parent_id,
       current_attributes = EXCLUDED.current_attributes, updated_at = EXCLUDED.updated_at,
       last_event_id = EXCLUDED.last_event_id`,
    [JSON.stringify(rows)],
  );
}

export interface BlockSync {
  environment: string;
  rootId: string;
  mode: RecordMode;
  /** Every block id the record's new current version references, at any depth. */
  referencedIds: string[];
}

/**
 * After records were written: blocks their current version no longer references leave the
 * current version; a publish copies the blocks' current version to their published one, an
 * unpublish clears it; blocks left in neither version are deleted.
 */
export async function syncBlocks(db: Queryable, syncs: readonly BlockSync[]): Promise<void> {
  if (syncs.length === 0) return;
  const param = JSON.stringify(
    syncs.map((s) => ({
      environment: s.environment,
      root_id: s.rootId,
      mode: s.mode,
      refs: s.referencedIds,
    })),
  );
  const recordset = `json_to_recordset($1::json) AS x(environment text, root_id text, mode text, refs text[])`;
  await db.query(
    `UPDATE records b SET
       current_attributes = CASE WHEN b.id = ANY(x.refs) THEN b.current_attributes END,
       published_attributes = CASE x.mode
         WHEN 'publish' THEN CASE WHEN b.id = ANY(x.refs) THEN b.current_attributes END
         WHEN 'unpublish' THEN NULL
         ELSE b.published_attributes END
     FROM ${recordset}
     WHERE b.is_block AND b.environment = x.environment AND b.root_id = x.root_id`,
    [param],
  );
  await db.query(
    `DELETE FROM records b USING ${recordset}
     WHERE b.is_block AND b.environment = x.environment AND b.root_id = x.root_id
       AND b.current_attributes IS NULL AND b.published_attributes IS NULL`,
    [param],
  );
}

export interface RecordDelete {
  environment: string;
  id: string;
  updatedAt: Date;
  currentVersion: string | null;
}

/** Deletes records with their blocks and texts, leaving a tombstone against stale events. */
export async function deleteRecords(
  db: Queryable,
  deletes: readonly RecordDelete[],
): Promise<void> {
  if (deletes.length === 0) return;
  const param = JSON.stringify(
    deletes.map((d) => ({
      environment: d.environment,
      id: d.id,
      updated_at: d.updatedAt.toISOString(),
      version_key: versionKey(d.currentVersion),
    })),
  );
  const recordset = `json_to_recordset($1::json) AS x(environment text, id text, updated_at timestamptz, version_key text)`;
  await db.query(
    `DELETE FROM records r USING ${recordset}
     WHERE r.environment = x.environment AND (r.id = x.id OR (r.is_block AND r.root_id = x.id))`,
    [param],
  );
  await db.query(
    `DELETE FROM record_texts t USING ${recordset}
     WHERE t.environment = x.environment AND t.record_id = x.id`,
    [param],
  );
  await db.query(
    `INSERT INTO record_tombstones (environment, id, updated_at, version_key)
     SELECT DISTINCT ON (x.environment, x.id) x.environment, x.id, x.updated_at, x.version_key
     FROM ${recordset}
     ORDER BY x.environment, x.id, x.updated_at DESC
     ON CONFLICT (environment, id) DO UPDATE SET updated_at = GREATEST(
       record_tombstones.updated_at, EXCLUDED.updated_at), deleted_at = now()`,
    [param],
  );
}

/** One full-text document of a record: its text (and its blocks') in one locale and version. */
export interface RecordText {
  environment: string;
  recordId: string;
  itemTypeId: string;
  version: ItemVersion;
  locale: string;
  /** A text search configuration name from textSearchConfig(). */
  config: string;
  text: string;
}

/**
 * Replaces the documents of the given versions of the given records with `texts` (a version
 * without texts in the list ends up with no documents, e.g. after an unpublish).
 */
export async function replaceRecordTexts(
  db: Queryable,
  clear: readonly { environment: string; recordId: string; versions: ItemVersion[] }[],
  texts: readonly RecordText[],
): Promise<void> {
  if (clear.length > 0) {
    await db.query(
      `DELETE FROM record_texts t
       USING json_to_recordset($1::json) AS x(environment text, record_id text, versions text[])
       WHERE t.environment = x.environment AND t.record_id = x.record_id
         AND t.version = ANY(x.versions)`,
      [
        JSON.stringify(
          clear.map((c) => ({
            environment: c.environment,
            record_id: c.recordId,
            versions: c.versions,
          })),
        ),
      ],
    );
  }
  if (texts.length === 0) return;
  await db.query(`${insertRecordTextsSql('$1')}`, [JSON.stringify(textRows(texts))]);
}

function textRows(texts: readonly RecordText[]): Record<string, unknown>[] {
  return texts.map((t) => ({
    environment: t.environment,
    record_id: t.recordId,
    version: t.version,
    locale: t.locale,
    item_type_id: t.itemTypeId,
    config: t.config,
    text: t.text,
  }));
}

/** Inserts (or replaces) the documents of the recordset in `param`. */
function insertRecordTextsSql(param: string, source = ''): string {
  return `INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
     SELECT x.environment, x.record_id, x.version, x.locale, x.item_type_id,
       to_tsvector(x.config::regconfig, x.text)
     FROM json_to_recordset(${param}::json) AS x(environment text, record_id text, version text,
       locale text, item_type_id text, config text, text text) ${source}
     ON CONFLICT (environment, record_id, version, locale) DO UPDATE SET
       item_type_id = EXCLUDED.item_type_id, document = EXCLUDED.document`;
}

/**
 * Events and the records they write, in one statement (hence one commit): the fast path for a
 * batch of item create/update/publish events on distinct records without blocks. Records are
 * written only for events that were inserted (not duplicates), stale writes are skipped as in
 * upsertRecords, and documents are written only for the records written. Every locale's
 * document must be in `texts` (empty ones too): they replace the stored ones.
 *
 * Runs herald_write_item_batch (migration 006), whose plan is prepared once per connection. Each
 * event travels once: a record whose `attributes` is the very object of its event's
 * `entity.attributes` is written from the entity, and an event's `entityJson`, when given, is
 * used as is.
 */
export async function writeItemBatch(
  db: Queryable,
  input: {
    events: readonly NewEvent[];
    records: readonly RecordWrite[];
    texts: readonly RecordText[];
    /**
     * The context the batch was validated against, when it came from a cache: if any of it has
     * changed since, nothing is written and StaleBatchContextError is thrown.
     */
    expected?: ExpectedContext;
  },
): Promise<{ inserted: Set<string>; written: number }> {
  const { rows } = await db.query<BatchWrittenRow>(
    'SELECT inserted, written FROM herald_write_item_batch($1::json, $2::json, $3::json)',
    itemBatchArguments(input),
  );
  return batchWritten(rows[0]!);
}

/** herald_write_item_batch's three arguments, as JSON texts (`expected` null when absent). */
function itemBatchArguments(
  input: Parameters<typeof writeItemBatch>[1],
): [string, string, string | null] {
  return [
    itemBatchJson(input.events, input.records),
    documentsJson(input.texts),
    input.expected ? expectedJson(input.expected) : null,
  ];
}

/** herald_write_item_batch's row. */
type BatchWrittenRow = {
  inserted: string[] | null;
  written: string;
};

/** What a write came to; a NULL `inserted` says the context was stale and nothing was written. */
function batchWritten(row: BatchWrittenRow): { inserted: Set<string>; written: number } {
  if (row.inserted === null) throw new StaleBatchContextError();
  return { inserted: new Set(row.inserted), written: Number(row.written) };
}

/**
 * writeItemBatch, committed, and where the commit reached in the WAL (readCommitPosition), in one
 * round trip instead of two: on PostgreSQL, one script (the simple query protocol) of `BEGIN`,
 * the function's call with its arguments as dollar-quoted literals, `COMMIT` and the position's
 * read, which runs after the commit returned as readCommitPosition's does. The hot path of
 * POST /events (its group commit), whose 202 waited for the second round trip. A failure before
 * the commit rolls it back (Db.script); one after it, only the position's read, cannot happen
 * short of the connection's loss, which leaves the commit's fate unknown with either way.
 * Elsewhere (PGlite): the two statements.
 */
export async function writeItemBatchCommitted(
  db: Db,
  input: Parameters<typeof writeItemBatch>[1],
): Promise<{ inserted: Set<string>; written: number; position: bigint }> {
  if (db.kind !== 'postgres') {
    const written = await writeItemBatch(db, input);
    return { ...written, position: await readCommitPosition(db) };
  }
  const [batch, texts, expected] = itemBatchArguments(input).map((json) =>
    json === null ? 'NULL' : dollarQuoted(json),
  );
  const results = await db.script(
    `BEGIN;
     SELECT inserted, written FROM herald_write_item_batch(${batch}::json, ${texts}::json,
       ${expected}::json);
     COMMIT;
     ${COMMIT_POSITION_SQL}`,
  );
  return {
    ...batchWritten(results[1]!.rows[0] as BatchWrittenRow),
    position: commitPositionOf(results[3]!.rows),
  };
}

/**
 * `text` as a dollar-quoted literal. Its tag is one that first occurs in `text` + tag where the
 * literal ends: not inside the text, nor across its end (a text ending in `$j` would close `$j$`
 * early).
 */
export function dollarQuoted(text: string): string {
  const closesAtEnd = (tag: string) => (text + tag).indexOf(tag) === text.length;
  let tag = '$j$';
  for (let n = 0; !closesAtEnd(tag); n++) tag = `$j${n}$`;
  return `${tag}${text}${tag}`;
}

/** Environments and model versions (BatchContext.modelVersions) a batch was validated against. */
export interface ExpectedContext {
  environments: readonly { id: string; locales: readonly string[]; isPrimary: boolean }[];
  models: readonly { environment: string; id: string; version: string }[];
}

/** writeItemBatch's `expected` context no longer holds: nothing was written. */
export class StaleBatchContextError extends Error {
  constructor() {
    super('the environments or models the batch was validated against have changed');
    this.name = 'StaleBatchContextError';
  }
}

function expectedJson(expected: ExpectedContext): string {
  return JSON.stringify({
    environments: expected.environments.map((e) => ({
      id: e.id,
      locales: e.locales,
      is_primary: e.isPrimary,
    })),
    models: expected.models,
  });
}

/** A JSON string or null, for the hand-built rows below. */
const str = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));
const iso = (date: Date | null): string => (date ? `"${date.toISOString()}"` : 'null');

/**
 * herald_write_item_batch's `batch`: one row per event, with its record's columns if any. Built
 * by hand, as JSON.stringify of a 30-key object per event cost more than the rest of the request.
 */
function itemBatchJson(events: readonly NewEvent[], records: readonly RecordWrite[]): string {
  const byEvent = new Map<string, RecordWrite>();
  for (const record of records) byEvent.set(record.eventId, record);
  const parts: string[] = [];
  for (let n = 0; n < events.length; n++) {
    const e = events[n]!;
    const w = byEvent.get(e.id);
    let row =
      `{"n":${n},"id":${str(e.id)},"environment":${str(e.environment)},` +
      `"is_environment_primary":${e.isEnvironmentPrimary},"entity_type":${str(e.entityType)},` +
      `"event_type":${str(e.eventType)},"entity_id":${str(w ? w.id : e.entityId)},` +
      `"item_type_id":${str(w ? w.itemTypeId : e.itemTypeId)},` +
      `"item_type_api_key":${str(e.itemTypeApiKey)},"occurred_at":${iso(e.occurredAt)},` +
      `"previous_entity":${JSON.stringify(e.previousEntity ?? null)},` +
      `"related_entities":${JSON.stringify(e.relatedEntities)},` +
      `"entity":${e.entityJson ?? JSON.stringify(e.entity)}`;
    // Absent (tracing off) reads as NULL.
    if (e.traceparent) row += `,"traceparent":${str(e.traceparent)}`;
    if (w) {
      const entityAttributes = (e.entity as { attributes?: unknown } | null)?.attributes;
      row +=
        `,"mode":${str(w.mode)},` +
        `"attributes":${w.attributes === entityAttributes ? 'null' : JSON.stringify(w.attributes)},` +
        `"parent_id":${str(w.parentId)},"position":${w.position === null ? 'null' : JSON.stringify(w.position)},` +
        `"creator_type":${str(w.creator?.type ?? null)},"creator_id":${str(w.creator?.id ?? null)},` +
        `"created_at":${iso(w.createdAt)},"updated_at":${iso(w.updatedAt)},` +
        `"published_at":${iso(w.publishedAt)},"first_published_at":${iso(w.firstPublishedAt)},` +
        `"publication_scheduled_at":${iso(w.publicationScheduledAt)},` +
        `"unpublishing_scheduled_at":${iso(w.unpublishingScheduledAt)},` +
        `"is_valid":${w.isValid},"is_current_version_valid":${w.isCurrentVersionValid},` +
        `"is_published_version_valid":${w.isPublishedVersionValid},` +
        `"current_version":${str(w.currentVersion)},"stage":${str(w.stage)},` +
        `"version_key":${str(versionKey(w.currentVersion))}`;
    }
    parts.push(`${row}}`);
  }
  return `[${parts.join(',')}]`;
}

/**
 * herald_write_item_batch's `texts`: the documents, those of one record and locale with the same
 * text (a publish writes the current and the published version) folded into one row.
 */
function documentsJson(texts: readonly RecordText[]): string {
  const rows: {
    environment: string;
    record_id: string;
    item_type_id: string;
    locale: string;
    config: string;
    text: string;
    versions: string[];
  }[] = [];
  const byKey = new Map<string, (typeof rows)[number]>();
  for (const t of texts) {
    const key = `${t.environment}\u0000${t.recordId}\u0000${t.locale}`;
    const same = byKey.get(key);
    if (
      same &&
      same.text === t.text &&
      same.config === t.config &&
      same.item_type_id === t.itemTypeId
    ) {
      if (!same.versions.includes(t.version)) same.versions.push(t.version);
      continue;
    }
    const row = {
      environment: t.environment,
      record_id: t.recordId,
      item_type_id: t.itemTypeId,
      locale: t.locale,
      config: t.config,
      text: t.text,
      versions: [t.version as string],
    };
    rows.push(row);
    byKey.set(key, row);
  }
  return JSON.stringify(rows);
}

/** The columns StoredItem is read from; `r` is the records alias. */
export const RECORD_COLUMNS = `r.id, r.item_type_id, r.is_block, r.root_id, r.parent_id,
  r.position, r.status, r.current_attributes, r.published_attributes, r.creator_type,
  r.creator_id, r.created_at, r.updated_at, r.published_at, r.first_published_at,
  r.publication_scheduled_at, r.unpublishing_scheduled_at, r.is_valid,
  r.is_current_version_valid, r.is_published_version_valid, r.current_version, r.stage`;

export interface RecordRow extends Record<string, unknown> {
  id: string;
  item_type_id: string;
  is_block: boolean;
  root_id: string | null;
  parent_id: string | null;
  position: number | null;
  status: StoredItem['status'];
  current_attributes: Record<string, unknown> | null;
  published_attributes: Record<string, unknown> | null;
  creator_type: string | null;
  creator_id: string | null;
  created_at: Date;
  updated_at: Date;
  published_at: Date | null;
  first_published_at: Date | null;
  publication_scheduled_at: Date | null;
  unpublishing_scheduled_at: Date | null;
  is_valid: boolean;
  is_current_version_valid: boolean;
  is_published_version_valid: boolean;
  current_version: string | null;
  stage: string | null;
}

/** Maps a row selected with RECORD_COLUMNS to the contract's StoredItem. */
export function toStoredItem(row: RecordRow): StoredItem {
  return {
    id: row.id,
    itemTypeId: row.item_type_id,
    isBlock: row.is_block,
    rootId: row.root_id,
    parentId: row.parent_id,
    position: row.position,
    status: row.status,
    currentAttributes: row.current_attributes,
    publishedAttributes: row.published_attributes,
    creator:
      row.creator_type && row.creator_id ? { type: row.creator_type, id: row.creator_id } : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    publishedAt: row.published_at,
    firstPublishedAt: row.first_published_at,
    publicationScheduledAt: row.publication_scheduled_at,
    unpublishingScheduledAt: row.unpublishing_scheduled_at,
    isValid: row.is_valid,
    isCurrentVersionValid: row.is_current_version_valid,
    isPublishedVersionValid: row.is_published_version_valid,
    currentVersion: row.current_version,
    stage: row.stage,
  };
}

/** A record or block by id. */
export async function findRecord(
  db: Queryable,
  environment: string,
  id: string,
): Promise<StoredItem | null> {
  const { rows } = await db.query<RecordRow>(
    `SELECT ${RECORD_COLUMNS} FROM records r WHERE r.environment = $1 AND r.id = $2`,
    [environment, id],
  );
  return rows[0] ? toStoredItem(rows[0]) : null;
}

/** All blocks owned by these records, by block id (for serializeItem with `nested`). */
export async function loadBlocks(
  db: Queryable,
  environment: string,
  rootIds: readonly string[],
): Promise<Map<string, StoredItem>> {
  if (rootIds.length === 0) return new Map();
  const { rows } = await db.query<RecordRow>(
    `SELECT ${RECORD_COLUMNS} FROM records r
     WHERE r.environment = $1 AND r.is_block AND r.root_id = ANY($2::text[])`,
    [environment, [...new Set(rootIds)]],
  );
  return new Map(rows.map((row) => [row.id, toStoredItem(row)]));
}

/** The model of a stored record: its id, and its api_key while the model exists. */
export interface RecordModel {
  itemTypeId: string;
  itemTypeApiKey: string | null;
}

/**
 * The models of these records (or blocks), across environments, in one round trip: for item
 * events that name only their record (a delete). By recordKey(environment, id); unknown
 * records are absent.
 */
export async function loadRecordModels(
  db: Queryable,
  keys: readonly { environment: string; id: string }[],
): Promise<Map<string, RecordModel>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<{
    environment: string;
    id: string;
    item_type_id: string;
    api_key: string | null;
  }>(
    `SELECT r.environment, r.id, r.item_type_id, m.api_key
     FROM json_to_recordset($1::json) AS k(environment text, id text)
     JOIN records r ON r.environment = k.environment AND r.id = k.id
     LEFT JOIN item_types m ON m.environment = r.environment AND m.id = r.item_type_id`,
    [JSON.stringify(keys)],
  );
  return new Map(
    rows.map((row) => [
      recordKey(row.environment, row.id),
      { itemTypeId: row.item_type_id, itemTypeApiKey: row.api_key },
    ]),
  );
}
