import {
  ApiError,
  EntityId,
  serializeItem,
  type ItemResource,
  type ItemVersion,
  type ModelInfo,
  type StoredItem,
  errorMessage,
} from '@herald/contract';
import {
  findModelsByIdOrApiKey,
  loadBlocks,
  loadModels,
  RECORD_COLUMNS,
  sqlState,
  textSearchConfig,
  toStoredItem,
  type Environment,
  type Queryable,
  type RecordRow,
} from '@herald/store';
import type { IndexManager } from './index-manager.js';
import type { QueryDuration } from './metrics.js';
import { compileListQuery } from './query/compile.js';
import { parseListParams, resolveListQuery } from './query/list-query.js';

export interface ItemsDeps {
  /** The database as the requesting token sees it (ReadGate.forToken). */
  db: Queryable;
  indexes: IndexManager;
  queryDuration: QueryDuration;
}

export interface ItemsPage {
  data: ItemResource[];
  meta: { total_count: number };
}

/**
 * Errors Postgres raises on what the request asked for (not on a fault of ours): an invalid or
 * too complex regular expression, a program limit hit by a huge operand.
 */
function requestError(error: unknown, param: string): ApiError | null {
  const state = sqlState(error);
  if (state === undefined) return null;
  if (state === '2201B' || state.startsWith('54')) {
    const message = errorMessage(error);
    return new ApiError(
      'INVALID_FILTER_FIELDS_PARAM',
      { param, message: `Invalid regular expression: ${message}` },
      { cause: error },
    );
  }
  return null;
}

/** GET /items (docs/api.md): validates, compiles, counts, loads a page, serializes. */
export async function listItems(
  deps: ItemsDeps,
  environment: Environment,
  raw: Record<string, unknown>,
): Promise<ItemsPage> {
  const params = parseListParams(raw);
  const models: ModelInfo[] = [];
  if (params.types) {
    const found = await findModelsByIdOrApiKey(deps.db, environment.id, params.types);
    const unknown = params.types.filter((key) => !found.has(key));
    if (unknown.length > 0) {
      throw new ApiError('INVALID_FILTER', {
        param: 'filter[type]',
        message: `Unknown model${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`,
        unknown,
      });
    }
    for (const key of params.types) {
      const model = found.get(key)!;
      if (!models.some((m) => m.id === model.id)) models.push(model);
    }
  }
  const query = resolveListQuery(params, {
    locales: environment.locales,
    models,
    textSearchConfig,
  });
  const compiled = compileListQuery(query, environment.id);

  // Regular expressions are Postgres AREs: Postgres itself is the judge of their validity.
  for (const regexp of compiled.regexps) {
    try {
      await deps.db.query(`SELECT '' ${regexp.caseSensitive ? '~' : '~*'} $1`, [regexp.pattern]);
    } catch (error) {
      throw requestError(error, regexp.param) ?? error;
    }
  }
  deps.indexes.ensure(compiled.indexes);

  const started = process.hrtime.bigint();
  let rows: PageRow[];
  let total: number;
  try {
    if (query.offset === 0) {
      const [count, page] = await Promise.all([
        deps.db.query<{ count: string }>(compiled.count.text, compiled.count.values),
        deps.db.query<PageRow>(compiled.list.text, compiled.list.values),
      ]);
      total = Number(count.rows[0]?.count ?? 0);
      rows = page.rows;
    } else {
      // Count first: an offset past the end needs no page query (a huge offset stays cheap).
      const count = await deps.db.query<{ count: string }>(
        compiled.count.text,
        compiled.count.values,
      );
      total = Number(count.rows[0]?.count ?? 0);
      rows =
        query.offset >= total
          ? []
          : (await deps.db.query<PageRow>(compiled.list.text, compiled.list.values)).rows;
    }
  } catch (error) {
    throw requestError(error, 'filter[fields]') ?? error;
  } finally {
    deps.queryDuration.observe(
      { shape: compiled.shape },
      Number(process.hrtime.bigint() - started) / 1e9,
    );
  }

  const data = await serializeItems(
    deps.db,
    environment.id,
    rows,
    query.version,
    query.nested,
    models,
  );
  return { data, meta: { total_count: total } };
}

/** GET /items/:id: the record or block, or null (404) without a version of that kind. */
export async function retrieveItem(
  deps: Pick<ItemsDeps, 'db'>,
  environment: Environment,
  id: string,
  version: ItemVersion,
  nested: boolean,
): Promise<ItemResource | null> {
  // An id outside the grammar of ids (docs/api.md, POST /events) names no record; Postgres would
  // refuse some of them (a NUL character) rather than find nothing.
  if (!EntityId.safeParse(id).success) return null;
  const { rows } = await deps.db.query<PageRow>(
    `SELECT ${RECORD_COLUMNS}, CASE WHEN m.tree THEN EXISTS (SELECT 1 FROM records c
       WHERE c.environment = r.environment AND c.parent_id = r.id AND NOT c.is_block) END
       AS has_children
     FROM records r LEFT JOIN item_types m ON m.environment = r.environment AND m.id = r.item_type_id
     WHERE r.environment = $1 AND r.id = $2`,
    [environment.id, id],
  );
  const [item] = await serializeItems(deps.db, environment.id, rows, version, nested, []);
  return item ?? null;
}

/** A row of the page query: the record and, for tree models, whether it has children. */
type PageRow = RecordRow & { has_children: boolean | null };

/** Serializes records of one version (docs/api.md, GET /items), with their blocks when nested. */
async function serializeItems(
  db: Queryable,
  environment: string,
  rows: PageRow[],
  version: ItemVersion,
  nested: boolean,
  known: readonly ModelInfo[],
): Promise<ItemResource[]> {
  if (rows.length === 0) return [];
  const items = rows.map(toStoredItem);
  let blocks: Map<string, StoredItem> | undefined;
  let models: Map<string, ModelInfo> | undefined;
  if (nested) {
    // Expansion needs every model involved (which fields hold blocks).
    blocks = await loadBlocks(
      db,
      environment,
      items.map((item) => item.rootId ?? item.id),
    );
    const modelIds = new Set(items.map((item) => item.itemTypeId));
    for (const block of blocks.values()) modelIds.add(block.itemTypeId);
    models = new Map(known.map((model) => [model.id, model]));
    const missing = [...modelIds].filter((id) => !models!.has(id));
    for (const [id, model] of await loadModels(db, environment, missing)) models.set(id, model);
  }
  const data: ItemResource[] = [];
  for (const [index, item] of items.entries()) {
    const resource = serializeItem(item, {
      version,
      nested,
      ...(blocks ? { blocks } : {}),
      ...(models ? { models } : {}),
      hasChildren: rows[index]!.has_children,
    });
    if (resource) data.push(resource);
  }
  return data;
}
