import {
  ApiError,
  ITEM_FILTER_OPERATORS,
  type ErrorCode,
  type ItemFilterOperator,
  type ItemVersion,
  type ModelInfo,
  isObject,
} from '@herald/contract';
import { regexCostProblem } from './regex-cost.js';

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
export type ValueKind =
  | 'text'
  | 'number'
  | 'date'
  | 'timestamp'
  | 'boolean'
  | 'status'
  | 'upload'
  | 'id_list'
  | 'upload_list'
  | 'lat_lon'
  | 'structured_text'
  | 'opaque';

export interface MatchOperand {
  pattern: string;
  caseSensitive: boolean;
  regexp: boolean;
}

type Operand =
  | { type: 'scalar'; value: string | number | boolean }
  | { type: 'list'; values: string[] }
  | { type: 'flag'; value: boolean }
  | { type: 'match'; match: MatchOperand }
  | { type: 'near'; latitude: number; longitude: number; radius: number };

export interface Condition {
  target: Target;
  kind: ValueKind;
  operator: Operator;
  operand: Operand;
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

const NUMERIC_OPS: readonly Operator[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists'];
const STRING_OPS: readonly Operator[] = [
  'eq',
  'neq',
  'in',
  'not_in',
  'matches',
  'not_matches',
  'is_blank',
  'is_present',
  'exists',
];
const TEXT_OPS: readonly Operator[] = [
  'matches',
  'not_matches',
  'is_blank',
  'is_present',
  'exists',
];
const LINK_OPS: readonly Operator[] = ['eq', 'neq', 'in', 'not_in', 'exists'];
const LINKS_OPS: readonly Operator[] = ['eq', 'any_in', 'all_in', 'not_in', 'exists'];

/** docs/api.md, Field filters: operators and comparison kind per field type. */
const FIELD_TYPES: Readonly<
  Record<string, { operators: readonly Operator[]; kind: ValueKind; sortable: boolean }>
> = {
  boolean: { operators: ['eq'], kind: 'boolean', sortable: true },
  integer: { operators: NUMERIC_OPS, kind: 'number', sortable: true },
  float: { operators: NUMERIC_OPS, kind: 'number', sortable: true },
  date: { operators: NUMERIC_OPS, kind: 'date', sortable: true },
  date_time: { operators: NUMERIC_OPS, kind: 'timestamp', sortable: true },
  string: { operators: STRING_OPS, kind: 'text', sortable: true },
  slug: { operators: ['eq', 'neq', 'in', 'not_in'], kind: 'text', sortable: true },
  text: { operators: TEXT_OPS, kind: 'text', sortable: false },
  structured_text: { operators: TEXT_OPS, kind: 'structured_text', sortable: false },
  link: { operators: LINK_OPS, kind: 'text', sortable: false },
  file: { operators: LINK_OPS, kind: 'upload', sortable: false },
  links: { operators: LINKS_OPS, kind: 'id_list', sortable: false },
  gallery: { operators: LINKS_OPS, kind: 'upload_list', sortable: false },
  lat_lon: { operators: ['near', 'exists'], kind: 'lat_lon', sortable: false },
  color: { operators: ['exists'], kind: 'opaque', sortable: false },
  json: { operators: ['exists'], kind: 'opaque', sortable: false },
  seo: { operators: ['exists'], kind: 'opaque', sortable: false },
  video: { operators: ['exists'], kind: 'opaque', sortable: false },
  rich_text: { operators: [], kind: 'opaque', sortable: false },
  single_block: { operators: [], kind: 'opaque', sortable: false },
};

const TIMESTAMP_OPS = NUMERIC_OPS;
const META_COLUMNS: Readonly<
  Record<MetaColumn, { operators: readonly Operator[]; kind: ValueKind; sortable: boolean }>
> = {
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

/** The official client types mix spellings: accept camelCase for every snake_case name. */
function normalizeOperator(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const ALL_OPERATORS: ReadonlySet<string> = new Set(ITEM_FILTER_OPERATORS);

const STATUSES = new Set(['draft', 'updated', 'published']);
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const INTEGER = /^-?\d{1,30}$/;
const FLOAT = /^-?(\d{1,30}(\.\d{0,30})?|\.\d{1,30})(e[+-]?\d{1,3})?$/i;

function validDate(y: string, m: string, d: string): boolean {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** An ISO-8601 date-time operand as a canonical UTC string; no zone means UTC (seed rule 5). */
export function parseDateTime(text: string): string | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  if (!validDate(y!, mo!, d!) || Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) {
    return null;
  }
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const hours = Number(digits.slice(0, 2));
    const minutes = Number(digits.slice(2));
    if (hours > 15 || minutes > 59) return null;
    offsetMinutes = sign * (hours * 60 + minutes);
  }
  // setUTCFullYear, not Date.UTC, which reads the years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  date.setUTCHours(Number(h), Number(mi) - offsetMinutes, Number(s ?? 0), 0);
  // A zone can carry 0001-01-01 or 9999-12-31 out of the years Postgres and ISO strings hold.
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return null;
  // Sub-millisecond digits are kept by Postgres (microseconds); keep up to 6.
  const micros = (frac ?? '').slice(1, 7).padEnd(6, '0');
  return `${date.toISOString().slice(0, 19)}.${micros}Z`;
}

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
        const name = normalizeOperator(rawOperator);
        const param = `filter[fields][${key}][${rawOperator}]`;
        if (!ALL_OPERATORS.has(name)) {
          fail('INVALID_FILTER_FIELDS_PARAM', param, `unknown operator "${rawOperator}"`, {
            field: key,
            operator: rawOperator,
          });
        }
        const operator = name as Operator;
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
        const operand = coerceOperand(target, spec.kind, operator, rawOperand, param, rawOperator);
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
  spec: { operators: readonly Operator[]; kind: ValueKind; sortable: boolean };
} {
  const code: ErrorCode = use === 'filter' ? 'INVALID_FILTER_FIELDS_PARAM' : 'INVALID_ORDERING';
  const param = use === 'filter' ? `filter[fields][${key}]` : 'order_by';
  const field = model.fields.find((f) => f.apiKey === key);
  if (field) {
    const spec = FIELD_TYPES[field.fieldType] ?? {
      operators: ['exists'] as const,
      kind: 'opaque' as const,
      sortable: false,
    };
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

function coerceOperand(
  target: Target,
  kind: ValueKind,
  operator: Operator,
  raw: unknown,
  param: string,
  operatorName: string,
): Operand {
  const field = target.kind === 'meta' ? target.column : target.apiKey;
  const bad = (why: string): never =>
    fail('INVALID_FILTER_FIELDS_PARAM', param, why, { field, operator: operatorName });

  switch (operator) {
    case 'exists':
    case 'is_blank':
    case 'is_present': {
      if (raw === true || raw === 'true') return { type: 'flag', value: true };
      if (raw === false || raw === 'false') return { type: 'flag', value: false };
      return bad('operand must be "true" or "false"');
    }
    case 'in':
    case 'not_in':
    case 'any_in':
    case 'all_in':
      return { type: 'list', values: coerceList(kind, raw, bad) };
    case 'eq':
      if (kind === 'id_list' || kind === 'upload_list') {
        return { type: 'list', values: coerceList(kind, raw, bad) };
      }
      return { type: 'scalar', value: coerceScalar(target, kind, raw, bad) };
    case 'neq':
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { type: 'scalar', value: coerceScalar(target, kind, raw, bad) };
    case 'matches':
    case 'not_matches': {
      if (typeof raw === 'string') {
        const problem = regexCostProblem(raw);
        if (problem) return bad(`regular expression refused: ${problem}`);
        return { type: 'match', match: { pattern: raw, caseSensitive: false, regexp: true } };
      }
      if (!isObject(raw)) return bad('operand must be {pattern, case_sensitive, regexp}');
      const options: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(raw)) options[normalizeOperator(key)] = value;
      for (const key of Object.keys(options)) {
        if (!['pattern', 'case_sensitive', 'regexp'].includes(key)) {
          bad(`unknown key "${key}" (pattern, case_sensitive, regexp)`);
        }
      }
      const pattern = options['pattern'];
      if (typeof pattern !== 'string') return bad('pattern must be a string');
      const flag = (key: string, fallback: boolean): boolean => {
        const value = options[key];
        if (value === undefined) return fallback;
        if (value === true || value === 'true') return true;
        if (value === false || value === 'false') return false;
        return bad(`${key} must be "true" or "false"`);
      };
      const match = {
        pattern,
        caseSensitive: flag('case_sensitive', false),
        regexp: flag('regexp', true),
      };
      const problem = match.regexp ? regexCostProblem(pattern) : null;
      if (problem) return bad(`regular expression refused: ${problem}`);
      return { type: 'match', match };
    }
    case 'near': {
      if (!isObject(raw)) return bad('operand must be {latitude, longitude, radius}');
      const number = (key: string, max: number): number => {
        const value = raw[key];
        let n = NaN;
        if (typeof value === 'number') n = value;
        else if (typeof value === 'string' && FLOAT.test(value)) n = Number(value);
        if (!Number.isFinite(n) || Math.abs(n) > max) {
          return bad(`${key} must be a number within ±${max}`);
        }
        return n;
      };
      const latitude = number('latitude', 90);
      const longitude = number('longitude', 180);
      const radius = number('radius', 4e7);
      if (radius < 0) return bad('radius must be ≥ 0 (metres)');
      return { type: 'near', latitude, longitude, radius };
    }
  }
}

function coerceList(kind: ValueKind, raw: unknown, bad: (why: string) => never): string[] {
  let values: unknown[];
  if (Array.isArray(raw)) values = raw;
  else if (typeof raw === 'string') values = raw === '' ? [] : raw.split(',');
  else if (isObject(raw) && Object.keys(raw).every((k) => /^\d+$/.test(k))) {
    values = Object.values(raw); // qs turns a[1001]=x into an object beyond its array limit
  } else return bad('operand must be a list (key[]=a&key[]=b, or comma-separated)');
  if (values.length > FILTER_IDS_MAX) bad(`at most ${FILTER_IDS_MAX} values`);
  return values.map((value) => {
    if (typeof value !== 'string') return bad('list elements must be strings');
    if (kind === 'status' && !STATUSES.has(value)) {
      return bad(`"${value}" is not a status (draft, updated, published)`);
    }
    return value;
  });
}

/**
 * The numbers a target holds: what ingest stores in an integer field (safe integers), a float
 * field (finite doubles) and the position column (a Postgres integer). An operand outside them
 * could only ever match nothing (or everything), so it is refused rather than answered.
 */
function numberDomain(target: Target): { integer: boolean; max: number; name: string } {
  if (target.kind === 'meta') return { integer: true, max: 2 ** 31 - 1, name: 'position' };
  if (target.fieldType === 'integer') {
    return { integer: true, max: Number.MAX_SAFE_INTEGER, name: 'an integer field' };
  }
  return { integer: false, max: Number.MAX_VALUE, name: 'a float field' };
}

function coerceScalar(
  target: Target,
  kind: ValueKind,
  raw: unknown,
  bad: (why: string) => never,
): string | number | boolean {
  if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
    return bad('operand must be a single value');
  }
  const text = String(raw);
  switch (kind) {
    case 'boolean':
      if (text === 'true') return true;
      if (text === 'false') return false;
      return bad('operand must be "true" or "false"');
    case 'number': {
      const domain = numberDomain(target);
      if (domain.integer ? !INTEGER.test(text) : !INTEGER.test(text) && !FLOAT.test(text)) {
        return bad(`"${text}" is not ${domain.integer ? 'an integer' : 'a number'}`);
      }
      // position's lower bound is one below -max (a Postgres integer); no position is that low.
      if (!(Math.abs(Number(text)) <= domain.max)) {
        return bad(`"${text}" is outside the values of ${domain.name} (±${domain.max})`);
      }
      return text;
    }
    case 'date': {
      const m = DATE.exec(text);
      if (!m || !validDate(m[1]!, m[2]!, m[3]!)) return bad(`"${text}" is not a date YYYY-MM-DD`);
      return text;
    }
    case 'timestamp': {
      const iso = parseDateTime(text);
      if (iso === null) {
        return bad(
          `"${text}" is not an ISO-8601 date-time (YYYY-MM-DDThh:mm:ss, zone optional) in years 0001–9999`,
        );
      }
      return iso;
    }
    case 'status':
      if (!STATUSES.has(text)) return bad(`"${text}" is not a status (draft, updated, published)`);
      return text;
    case 'text':
    case 'upload':
    case 'structured_text':
    case 'opaque':
    case 'id_list':
    case 'upload_list':
    case 'lat_lon':
      return text;
  }
}
