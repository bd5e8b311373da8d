import {
  ApiError,
  coerceFilterOperand,
  fieldTypeFilters,
  filterOperator,
  type ErrorCode,
  type FilterOperand,
  type FilterSpec,
  type FilterValueKind,
  type ItemFilterOperator,
  type ItemVersion,
  type ModelInfo,
  isObject,
} from '@herald/contract';

/**
 * GET /items query parameters (docs/api.md, GET /items and Field filters) → a validated query (the
 * AST that compile.ts turns into SQL). Two steps: parseListParams checks the shape of the raw
 * (qs-parsed) parameters without the database; resolveListQuery checks them against the models
 * named by filter[type] and the environment's locales. Every problem is the 422 the spec names,
 * with the parameter and the reason in `details`.
 */

const PAGE_LIMIT_DEFAULT = 30;
const PAGE_LIMIT_MAX = 500;
/** Beyond any real listing; keeps OFFSET a safe integer (a larger one answers 422). */
const PAGE_OFFSET_MAX = Number.MAX_SAFE_INTEGER;
/** Ids in filter[ids]: more would make a 10,000-element ANY() for no real use. */
const FILTER_IDS_MAX = 1000;

type SortDirection = 'ASC' | 'DESC';

/** The raw parameters, shape-checked. */
export interface ListParams {
  nested: boolean;
  version: ItemVersion;
  locale: string | null;
  offset: number;
  limit: number;
  ids: string[] | null;
  types: string[] | null;
  query: string | null;
  fields: Record<string, Record<string, unknown>> | null;
  onlyValid: boolean;
  orderBy: { key: string; direction: SortDirection }[] | null;
}

export type MetaColumn =
  | 'id'
  | '_created_at'
  | '_updated_at'
  | '_published_at'
  | '_first_published_at'
  | '_publication_scheduled_at'
  | '_unpublishing_scheduled_at'
  | '_status'
  | '_is_valid'
  | 'position'
  | 'parent_id';

/** What a condition or a sort rule is about: a meta column or a field of the model. */
export type Target =
  | { kind: 'meta'; column: MetaColumn }
  | { kind: 'field'; apiKey: string; fieldType: string; localized: boolean };

type Operator = ItemFilterOperator;

/** How values of a target compare in SQL (drives operand coercion and the SQL expression). */
export type ValueKind = FilterValueKind;
export type { MatchOperand } from '@herald/contract';

export interface Condition {
  target: Target;
  kind: ValueKind;
  operator: Operator;
  operand: FilterOperand;
  /** The query parameter it came from, e.g. `filter[fields][title][matches]` (for errors). */
  param: string;
}

export type OrderRule = { target: Target; kind: ValueKind; direction: SortDirection };

/** A validated listing, ready to compile. */
export interface ListQuery {
  version: ItemVersion;
  locale: string;
  nested: boolean;
  offset: number;
  limit: number;
  ids: string[] | null;
  /** Model ids filter[type] resolved to (null: every model). */
  modelIds: string[] | null;
  /** The one model of filter[type], when exactly one. */
  model: ModelInfo | null;
  search: { text: string; config: string } | null;
  onlyValid: boolean;
  conditions: Condition[];
  /** Sort rules before the final `id ASC` tie-breaker; `rank` with a full-text search. */
  order: OrderRule[] | { rank: SortDirection };
}

function fail(code: ErrorCode, param: string, message: string, extra: object = {}): never {
  throw new ApiError(code, { param, message, ...extra });
}

function stringParam(value: unknown, param: string, code: ErrorCode = 'INVALID_PARAMS'): string {
  if (typeof value !== 'string') fail(code, param, 'must be a single string value');
  return value;
}

function booleanParam(value: unknown, param: string, code: ErrorCode = 'INVALID_PARAMS'): boolean {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  fail(code, param, 'must be "true" or "false"');
}

function integerParam(value: unknown, param: string, min: number, max: number): number {
  const text = stringParam(value, param);
  if (!/^\d{1,16}$/.test(text)) fail('INVALID_PARAMS', param, `must be an integer ≥ ${min}`);
  const n = Number(text);
  if (n < min || n > max) {
    fail('INVALID_PARAMS', param, `must be an integer from ${min} to ${max}`, { value: text });
  }
  return n;
}

/** Comma-separated values (also accepted as a repeated `key[]=` array), blanks dropped. */
function listParam(value: unknown, param: string, code: ErrorCode): string[] {
  const parts = Array.isArray(value) ? value : [value];
  const out: string[] = [];
  for (const part of parts) {
    const text = stringParam(part, param, code);
    for (const piece of text.split(',')) {
      const trimmed = piece.trim();
      if (trimmed !== '') out.push(trimmed);
    }
  }
  return out;
}

const FILTER_KEYS = new Set(['ids', 'type', 'query', 'fields', 'only_valid']);
const PAGE_KEYS = new Set(['offset', 'limit']);
const ORDER_RULE = /^(.+)_(ASC|DESC)$/;

/** Checks the shape of the qs-parsed query string of GET /items. */
export function parseListParams(raw: Record<string, unknown>): ListParams {
  // Unknown top-level parameters are tolerated (clients add their own, e.g. cache busters).
  const params: ListParams = {
    nested: raw['nested'] === undefined ? false : booleanParam(raw['nested'], 'nested'),
    version: 'published',
    locale: raw['locale'] === undefined ? null : stringParam(raw['locale'], 'locale'),
    offset: 0,
    limit: PAGE_LIMIT_DEFAULT,
    ids: null,
    types: null,
    query: null,
    fields: null,
    onlyValid: false,
    orderBy: null,
  };

  if (raw['version'] !== undefined) {
    const version = stringParam(raw['version'], 'version');
    if (version !== 'published' && version !== 'current') {
      fail('INVALID_PARAMS', 'version', 'must be "published" or "current"', { value: version });
    }
    params.version = version;
  }

  const page = raw['page'];
  if (page !== undefined) {
    if (!isObject(page)) fail('INVALID_PARAMS', 'page', 'must be an object (page[limit])');
    for (const key of Object.keys(page)) {
      if (!PAGE_KEYS.has(key)) {
        fail('INVALID_PARAMS', `page[${key}]`, 'unknown page parameter (offset, limit)');
      }
    }
    if (page['offset'] !== undefined) {
      params.offset = integerParam(page['offset'], 'page[offset]', 0, PAGE_OFFSET_MAX);
    }
    if (page['limit'] !== undefined) {
      params.limit = integerParam(page['limit'], 'page[limit]', 1, PAGE_LIMIT_MAX);
    }
  }

  const filter = raw['filter'];
  if (filter !== undefined) {
    if (!isObject(filter)) fail('INVALID_FILTER', 'filter', 'must be an object');
    for (const key of Object.keys(filter)) {
      if (!FILTER_KEYS.has(key)) {
        fail(
          'INVALID_FILTER',
          `filter[${key}]`,
          'unknown filter (ids, type, query, fields, only_valid)',
        );
      }
    }
    if (filter['ids'] !== undefined) {
      params.ids = listParam(filter['ids'], 'filter[ids]', 'INVALID_FILTER');
      if (params.ids.length > FILTER_IDS_MAX) {
        fail('INVALID_FILTER', 'filter[ids]', `at most ${FILTER_IDS_MAX} ids`);
      }
    }
    if (filter['type'] !== undefined) {
      params.types = listParam(filter['type'], 'filter[type]', 'INVALID_FILTER');
      if (params.types.length === 0) fail('INVALID_FILTER', 'filter[type]', 'names no model');
      if (params.types.length > FILTER_IDS_MAX) {
        fail('INVALID_FILTER', 'filter[type]', `at most ${FILTER_IDS_MAX} models`);
      }
    }
    if (params.ids !== null && params.types !== null) {
      fail('INVALID_FILTER', 'filter[ids]', 'filter[ids] cannot be combined with filter[type]');
    }
    if (filter['query'] !== undefined) {
      params.query = stringParam(filter['query'], 'filter[query]', 'INVALID_FILTER');
      if (params.query.trim() === '') {
        fail('INVALID_FILTER', 'filter[query]', 'names no word to search for; omit it to list');
      }
    }
    if (filter['only_valid'] !== undefined) {
      params.onlyValid = booleanParam(filter['only_valid'], 'filter[only_valid]', 'INVALID_FILTER');
    }
    const fields = filter['fields'];
    if (fields !== undefined) {
      if (!isObject(fields)) {
        fail(
          'INVALID_FILTER_FIELDS_PARAM',
          'filter[fields]',
          'must be an object keyed by field api_key',
        );
      }
      for (const [field, operators] of Object.entries(fields)) {
        if (!isObject(operators)) {
          fail(
            'INVALID_FILTER_FIELDS_PARAM',
            `filter[fields][${field}]`,
            'must be an object of operator → operand, e.g. filter[fields][title][eq]=x',
            { field },
          );
        }
      }
      params.fields = fields as Record<string, Record<string, unknown>>;
    }
  }

  if (raw['order_by'] !== undefined) {
    const rules = listParam(raw['order_by'], 'order_by', 'INVALID_ORDERING');
    if (rules.length === 0) {
      fail('INVALID_ORDERING', 'order_by', 'names no rule; omit order_by for the default order');
    }
    params.orderBy = rules.map((rule) => {
      const match = ORDER_RULE.exec(rule);
      if (!match) {
        fail('INVALID_ORDERING', 'order_by', `"${rule}" is not <field>_ASC or <field>_DESC`, {
          rule,
        });
      }
      return { key: match[1]!, direction: match[2] as SortDirection };
    });
  }
  return params;
}

// ---------------------------------------------------------------------------------------------
// Resolution against the model: the allow-lists of fields, operators and sort keys.

const TIMESTAMP_OPS: readonly Operator[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists'];
const META_COLUMNS: Readonly<Record<MetaColumn, FilterSpec>> = {
  id: { operators: ['eq', 'neq', 'in', 'not_in'], kind: 'text', sortable: true },
  _created_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _updated_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _published_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _first_published_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _publication_scheduled_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _unpublishing_scheduled_at: { operators: TIMESTAMP_OPS, kind: 'timestamp', sortable: true },
  _status: { operators: ['eq', 'neq', 'in', 'not_in'], kind: 'status', sortable: true },
  _is_valid: { operators: ['eq'], kind: 'boolean', sortable: true },
  position: {
    operators: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'],
    kind: 'number',
    sortable: true,
  },
  parent_id: { operators: ['eq', 'exists'], kind: 'text', sortable: false },
};

const isMetaColumn = (key: string): key is MetaColumn => Object.hasOwn(META_COLUMNS, key);

interface ResolveContext {
  locales: readonly string[];
  /** Models of filter[type], in the order asked (already checked to exist). */
  models: readonly ModelInfo[];
  textSearchConfig(locale: string): string;
}

/** Validates the parameters against the models and locales: the allow-lists live here. */
export function resolveListQuery(params: ListParams, ctx: ResolveContext): ListQuery {
  const locale = params.locale ?? ctx.locales[0] ?? 'en';
  if (params.locale !== null && !ctx.locales.includes(params.locale)) {
    throw new ApiError('INVALID_LOCALE', {
      param: 'locale',
      message: `Locale "${params.locale}" is not a locale of this environment (${ctx.locales.join(', ')})`,
      locale: params.locale,
      locales: [...ctx.locales],
    });
  }
  const model = ctx.models.length === 1 ? ctx.models[0]! : null;

  const conditions: Condition[] = [];
  if (params.fields && Object.keys(params.fields).length > 0) {
    if (!model) {
      fail(
        'INVALID_FILTER_FIELDS_PARAM',
        'filter[fields]',
        'filter[fields] requires filter[type] with exactly one model',
      );
    }
    for (const [key, operators] of Object.entries(params.fields)) {
      const { target, spec } = resolveTarget(model, key, 'filter');
      const entries = Object.entries(operators);
      if (entries.length === 0) {
        fail('INVALID_FILTER_FIELDS_PARAM', `filter[fields][${key}]`, 'names no operator', {
          field: key,
        });
      }
      for (const [rawOperator, rawOperand] of entries) {
        const operator = filterOperator(rawOperator);
        const param = `filter[fields][${key}][${rawOperator}]`;
        if (!operator) {
          fail('INVALID_FILTER_FIELDS_PARAM', param, `unknown operator "${rawOperator}"`, {
            field: key,
            operator: rawOperator,
          });
        }
        if (!spec.operators.includes(operator)) {
          fail(
            'INVALID_FILTER_FIELDS_PARAM',
            param,
            `operator "${rawOperator}" is not allowed on ${describeTarget(target)}; allowed: ${
              spec.operators.join(', ') || 'none'
            }`,
            { field: key, operator: rawOperator },
          );
        }
        const bad = (why: string): never =>
          fail('INVALID_FILTER_FIELDS_PARAM', param, why, { field: key, operator: rawOperator });
        const operand = coerceFilterOperand(target, spec.kind, operator, rawOperand, bad);
        conditions.push({ target, kind: spec.kind, operator, operand, param });
      }
    }
  }

  let order: ListQuery['order'];
  const search =
    params.query === null ? null : { text: params.query, config: ctx.textSearchConfig(locale) };
  if (search) {
    order = { rank: 'DESC' };
    for (const rule of params.orderBy ?? []) {
      if (rule.key !== '_rank') {
        fail(
          'INVALID_ORDERING',
          'order_by',
          'with filter[query] only _rank_DESC and _rank_ASC are allowed',
          { rule: `${rule.key}_${rule.direction}` },
        );
      }
      order = { rank: rule.direction };
    }
    if ((params.orderBy?.length ?? 0) > 1) {
      fail('INVALID_ORDERING', 'order_by', 'with filter[query] give at most one _rank rule');
    }
  } else if (params.orderBy && params.orderBy.length > 0) {
    if (!model) {
      fail('INVALID_ORDERING', 'order_by', 'order_by requires filter[type] with exactly one model');
    }
    order = params.orderBy.map((rule) => {
      if (rule.key === '_rank') {
        fail('INVALID_ORDERING', 'order_by', '_rank ordering needs filter[query]', {
          rule: `${rule.key}_${rule.direction}`,
        });
      }
      const { target, spec } = resolveTarget(model, rule.key, 'order');
      if (!spec.sortable) {
        fail(
          'INVALID_ORDERING',
          'order_by',
          `${describeTarget(target)} cannot be sorted on (sortable: string, slug, boolean, integer, float, date, date_time and meta columns)`,
          { rule: `${rule.key}_${rule.direction}` },
        );
      }
      return { target, kind: spec.kind, direction: rule.direction };
    });
  } else if (model && (model.sortable || model.tree)) {
    order = [
      { target: { kind: 'meta', column: 'position' }, kind: 'number', direction: 'ASC' as const },
    ];
  } else {
    order = [
      {
        target: { kind: 'meta', column: '_created_at' },
        kind: 'timestamp',
        direction: 'ASC' as const,
      },
    ];
  }

  return {
    version: params.version,
    locale,
    nested: params.nested,
    offset: params.offset,
    limit: params.limit,
    ids: params.ids,
    modelIds: params.types === null ? null : [...new Set(ctx.models.map((m) => m.id))],
    model,
    search,
    onlyValid: params.onlyValid,
    conditions,
    order,
  };
}

function describeTarget(target: Target): string {
  return target.kind === 'meta'
    ? `meta column ${target.column}`
    : `field ${target.apiKey} (${target.fieldType})`;
}

function resolveTarget(
  model: ModelInfo,
  key: string,
  use: 'filter' | 'order',
): {
  target: Target;
  spec: FilterSpec;
} {
  const code: ErrorCode = use === 'filter' ? 'INVALID_FILTER_FIELDS_PARAM' : 'INVALID_ORDERING';
  const param = use === 'filter' ? `filter[fields][${key}]` : 'order_by';
  const field = model.fields.find((f) => f.apiKey === key);
  if (field) {
    const spec = fieldTypeFilters(field.fieldType);
    return {
      target: {
        kind: 'field',
        apiKey: field.apiKey,
        fieldType: field.fieldType,
        localized: field.localized,
      },
      spec,
    };
  }
  if (isMetaColumn(key)) {
    if (key === 'position' && !model.sortable && !model.tree) {
      fail(code, param, `position exists only on sortable models; ${model.apiKey} is not one`, {
        field: key,
      });
    }
    if (key === 'parent_id' && !model.tree) {
      fail(code, param, `parent_id exists only on tree models; ${model.apiKey} is not one`, {
        field: key,
      });
    }
    return { target: { kind: 'meta', column: key }, spec: META_COLUMNS[key] };
  }
  fail(code, param, `model ${model.apiKey} has no field or meta column "${key}"`, { field: key });
}
