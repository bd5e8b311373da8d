import { createHash } from 'node:crypto';
import { presenceOf } from '@herald/contract';
import { RECORD_COLUMNS } from '@herald/store';
import type {
  Condition,
  ListQuery,
  MatchOperand,
  MetaColumn,
  OrderRule,
  Target,
  ValueKind,
} from './list-query.js';

/**
 * A validated ListQuery → parameterized SQL. Values are always parameters; the only things
 * spelled into the SQL text are names taken from allow-lists: meta columns from a fixed map, field
 * api_keys and model ids read from the model (quoted as literals), the locale (one of the
 * environment's) and the text search configuration (from a fixed map). Spelling those as
 * literals lets Postgres match the expression indexes of index-manager.ts.
 */

interface CompiledQuery {
  text: string;
  values: unknown[];
}

/** Bounded metric label: what kind of listing this is. */
type QueryShape = 'list' | 'list_filtered' | 'search' | 'by_ids';

/** An expression index that would serve a query on one model (created lazily). */
export interface IndexSpec {
  name: string;
  /** CREATE INDEX statement (without CONCURRENTLY / IF NOT EXISTS; the manager adds them). */
  definition: string;
  /**
   * CREATE STATISTICS on the indexed expression (without IF NOT EXISTS): the planner ignores
   * the statistics of partial expression indexes, and without any it guesses 0.5 % for an
   * equality, which makes it walk a sort index instead of using a selective filter.
   */
  statistics?: string;
}

export interface CompiledList {
  shape: QueryShape;
  list: CompiledQuery;
  count: CompiledQuery;
  /** Regular expressions the query uses, to validate before running it, with their parameter. */
  regexps: { pattern: string; caseSensitive: boolean; param: string }[];
  indexes: IndexSpec[];
}

const META_SQL: Readonly<Record<MetaColumn, string>> = {
  id: 'id',
  _created_at: 'created_at',
  _updated_at: 'updated_at',
  _published_at: 'published_at',
  _first_published_at: 'first_published_at',
  _publication_scheduled_at: 'publication_scheduled_at',
  _unpublishing_scheduled_at: 'unpublishing_scheduled_at',
  _status: 'status',
  _is_valid: 'is_valid',
  position: 'position',
  parent_id: 'parent_id',
};

/** A SQL string literal (standard_conforming_strings is on in every supported Postgres). */
function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

class Params {
  readonly values: unknown[] = [];
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

const attributesColumn = (q: ListQuery): string =>
  q.version === 'published' ? 'published_attributes' : 'current_attributes';

/** The jsonb and text accessors of a field value (in `locale` when localized). */
function fieldAccessors(
  q: ListQuery,
  target: Extract<Target, { kind: 'field' }>,
  alias: string,
): { json: string; text: string } {
  const column = `${alias}${attributesColumn(q)}`;
  const key = quoteLiteral(target.apiKey);
  if (target.localized) {
    const locale = quoteLiteral(q.locale);
    return {
      json: `(${column} -> ${key} -> ${locale})`,
      text: `(${column} -> ${key} ->> ${locale})`,
    };
  }
  return { json: `(${column} -> ${key})`, text: `(${column} ->> ${key})` };
}

/** The scalar SQL expression a target compares and sorts by; alias is 'r.' or '' (indexes). */
function valueExpression(q: ListQuery, target: Target, kind: ValueKind, alias: string): string {
  if (target.kind === 'meta') return `${alias}${META_SQL[target.column]}`;
  const { json, text } = fieldAccessors(q, target, alias);
  switch (kind) {
    case 'number':
      return `herald_numeric(${json})`;
    case 'timestamp':
      return `herald_timestamptz(${text})`;
    case 'upload':
      return `(${json} ->> 'upload_id')`;
    case 'text':
    case 'date':
    case 'boolean':
    case 'status':
      return text;
    case 'id_list':
    case 'upload_list':
    case 'lat_lon':
    case 'structured_text':
    case 'opaque':
      return json;
  }
}

const SQL_CAST: Partial<Record<ValueKind, string>> = {
  number: '::numeric',
  timestamp: '::timestamptz',
};

const arrayOrNull = (json: string): string =>
  `(CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} END)`;

function matchSql(p: Params, subject: string, match: MatchOperand): string {
  if (match.regexp) {
    return `(${subject} ${match.caseSensitive ? '~' : '~*'} ${p.add(match.pattern)})`;
  }
  return match.caseSensitive
    ? `(strpos(${subject}, ${p.add(match.pattern)}) > 0)`
    : `(strpos(lower(${subject}), lower(${p.add(match.pattern)})) > 0)`;
}

/** The text of a structured_text value's spans, one row each. */
const dastTexts = (json: string): string =>
  `(SELECT s #>> '{}' AS text FROM jsonb_path_query(${json}, 'lax $.**.value') s WHERE jsonb_typeof(s) = 'string')`;

function conditionSql(q: ListQuery, p: Params, c: Condition): string {
  const v = valueExpression(q, c.target, c.kind, 'r.');
  const { operand } = c;
  const cast = SQL_CAST[c.kind] ?? '';
  switch (c.operator) {
    case 'eq': {
      if (operand.type === 'list') {
        if (c.kind === 'id_list') return `(${v} = ${p.add(JSON.stringify(operand.values))}::jsonb)`;
        return `(COALESCE((SELECT jsonb_agg(e -> 'upload_id') FROM jsonb_array_elements(${arrayOrNull(v)}) e), '[]'::jsonb) = ${p.add(JSON.stringify(operand.values))}::jsonb AND jsonb_typeof(${v}) = 'array')`;
      }
      if (operand.type !== 'scalar') break;
      if (c.kind === 'boolean') {
        // A missing boolean counts as false (DatoCMS booleans default to false).
        if (c.target.kind === 'meta') return `(${v} = ${p.add(operand.value)}::boolean)`;
        return operand.value === true ? `(${v} = 'true')` : `(${v} IS DISTINCT FROM 'true')`;
      }
      return `(${v} = ${p.add(operand.value)}${cast})`;
    }
    case 'neq':
      if (operand.type !== 'scalar') break;
      return `(${v} IS DISTINCT FROM ${p.add(operand.value)}${cast})`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (operand.type !== 'scalar') break;
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.operator];
      return `(${v} ${op} ${p.add(operand.value)}${cast})`;
    }
    case 'in':
      if (operand.type !== 'list') break;
      if (operand.values.length === 0) return 'false';
      return `(${v} = ANY(${p.add(operand.values)}::text[]))`;
    case 'not_in':
      if (operand.type !== 'list') break;
      if (operand.values.length === 0) return 'true';
      if (c.kind === 'id_list') {
        return `(NOT COALESCE(${arrayOrNull(v)} ?| ${p.add(operand.values)}::text[], false))`;
      }
      if (c.kind === 'upload_list') {
        return `(NOT EXISTS (SELECT 1 FROM jsonb_array_elements(${arrayOrNull(v)}) e WHERE e ->> 'upload_id' = ANY(${p.add(operand.values)}::text[])))`;
      }
      return `(NOT COALESCE(${v} = ANY(${p.add(operand.values)}::text[]), false))`;
    case 'any_in':
      if (operand.type !== 'list') break;
      if (operand.values.length === 0) return 'false';
      if (c.kind === 'id_list') {
        return `COALESCE(${arrayOrNull(v)} ?| ${p.add(operand.values)}::text[], false)`;
      }
      return `EXISTS (SELECT 1 FROM jsonb_array_elements(${arrayOrNull(v)}) e WHERE e ->> 'upload_id' = ANY(${p.add(operand.values)}::text[]))`;
    case 'all_in':
      if (operand.type !== 'list') break;
      if (c.kind === 'id_list') {
        return `COALESCE(${arrayOrNull(v)} ?& ${p.add(operand.values)}::text[], false)`;
      }
      return `(jsonb_typeof(${v}) = 'array' AND NOT EXISTS (SELECT 1 FROM unnest(${p.add(operand.values)}::text[]) x WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(${arrayOrNull(v)}) e WHERE e ->> 'upload_id' = x)))`;
    case 'matches':
    case 'not_matches': {
      if (operand.type !== 'match') break;
      const matched =
        c.kind === 'structured_text'
          ? `EXISTS (SELECT 1 FROM ${dastTexts(v)} d WHERE ${matchSql(p, 'd.text', operand.match)})`
          : `COALESCE(${matchSql(p, v, operand.match)}, false)`;
      return c.operator === 'matches' ? matched : `(NOT ${matched})`;
    }
    case 'is_blank':
    case 'is_present': {
      if (operand.type !== 'flag') break;
      const blank =
        c.kind === 'structured_text'
          ? `(NOT EXISTS (SELECT 1 FROM ${dastTexts(v)} d WHERE d.text <> ''))`
          : `(COALESCE(${v}, '') = '')`;
      const wantBlank = (c.operator === 'is_blank') === operand.value;
      return wantBlank ? blank : `(NOT ${blank})`;
    }
    case 'exists': {
      if (operand.type !== 'flag') break;
      let present: string;
      switch (presenceOf(c.kind)) {
        case 'list':
          present = `COALESCE(jsonb_array_length(${arrayOrNull(v)}) > 0, false)`;
          break;
        case 'json':
          // jsonb: a missing key is SQL NULL, an explicit null is the JSON null.
          present = `(${v} IS NOT NULL AND ${v} <> 'null'::jsonb)`;
          break;
        case 'scalar':
          present = `(${v} IS NOT NULL)`;
          break;
      }
      return operand.value ? present : `(NOT ${present})`;
    }
    case 'near': {
      if (operand.type !== 'near') break;
      const lat = `herald_numeric(${v} -> 'latitude')::float8`;
      const lon = `herald_numeric(${v} -> 'longitude')::float8`;
      const pLat = p.add(operand.latitude, '::float8');
      const pLon = p.add(operand.longitude, '::float8');
      const pRadius = p.add(operand.radius, '::float8');
      // Haversine on a sphere of the Earth's mean radius, in metres.
      return `COALESCE(2 * 6371008.8 * asin(least(1, sqrt(power(sin(radians(${lat} - ${pLat}) / 2), 2) + cos(radians(${pLat})) * cos(radians(${lat})) * power(sin(radians(${lon} - ${pLon}) / 2), 2)))) <= ${pRadius}, false)`;
    }
  }
  // resolveListQuery pairs every operator with its operand type; reaching here is a bug.
  throw new Error(`operator ${c.operator} got a ${operand.type} operand`);
}

function orderSql(q: ListQuery, rules: OrderRule[]): string {
  const parts = rules.map(
    (rule) => `${valueExpression(q, rule.target, rule.kind, 'r.')} ${rule.direction}`,
  );
  const last = rules[rules.length - 1];
  if (!(last?.target.kind === 'meta' && last.target.column === 'id')) parts.push('r.id ASC');
  return parts.join(', ');
}

/** Expression indexes (environment, expr, id) on one model's records for its filters and sorts. */
function indexSpecs(q: ListQuery): IndexSpec[] {
  if (!q.model || q.ids !== null || q.search !== null) return [];
  const targets = new Map<string, string>();
  const consider = (target: Target, kind: ValueKind) => {
    if (target.kind === 'meta' && (target.column === 'id' || target.column === '_created_at')) {
      return; // served by the primary key and records_by_model
    }
    if (!['text', 'number', 'date', 'timestamp', 'boolean', 'status', 'upload'].includes(kind)) {
      return;
    }
    const expression = valueExpression(q, target, kind, '');
    targets.set(expression, expression);
  };
  for (const c of q.conditions) {
    if (['eq', 'in', 'gt', 'gte', 'lt', 'lte'].includes(c.operator)) consider(c.target, c.kind);
  }
  if (Array.isArray(q.order)) for (const rule of q.order) consider(rule.target, rule.kind);
  const attributes = attributesColumn(q);
  return [...targets.values()].map((expression) => {
    const predicate = `item_type_id = ${quoteLiteral(q.model!.id)} AND NOT is_block AND ${attributes} IS NOT NULL`;
    const hash = createHash('sha1')
      .update(`${expression}\n${predicate}`)
      .digest('hex')
      .slice(0, 24);
    const name = `records_x_${hash}`;
    const statsHash = createHash('sha1').update(expression).digest('hex').slice(0, 24);
    return {
      name,
      definition: `INDEX ${name} ON records (environment, (${expression}), id) WHERE ${predicate}`,
      ...(expression.includes('attributes')
        ? { statistics: `STATISTICS records_s_${statsHash} ON (${expression}) FROM records` }
        : {}),
    };
  });
}

/** A GIN index on one (environment, version, locale) slice of the full-text documents. */
function searchIndexSpec(q: ListQuery, environment: string): IndexSpec {
  const predicate = `environment = ${quoteLiteral(environment)} AND version = ${quoteLiteral(q.version)} AND locale = ${quoteLiteral(q.locale)}`;
  const hash = createHash('sha1').update(predicate).digest('hex').slice(0, 24);
  const name = `record_texts_x_${hash}`;
  return {
    name,
    definition: `INDEX ${name} ON record_texts USING gin (document) WHERE ${predicate}`,
  };
}

export function compileListQuery(q: ListQuery, environment: string): CompiledList {
  const p = new Params();
  const where: string[] = [`r.environment = ${p.add(environment)}`];
  const attributes = `r.${attributesColumn(q)}`;
  if (q.ids !== null) where.push(`r.id = ANY(${p.add(q.ids)}::text[])`);
  else where.push('NOT r.is_block');
  where.push(`${attributes} IS NOT NULL`);
  if (q.modelIds !== null) {
    where.push(
      q.modelIds.length === 1
        ? `r.item_type_id = ${quoteLiteral(q.modelIds[0]!)}`
        : `r.item_type_id = ANY(${p.add(q.modelIds)}::text[])`,
    );
  }
  if (q.onlyValid) where.push('r.is_valid');
  const regexps: CompiledList['regexps'] = [];
  for (const c of q.conditions) {
    where.push(conditionSql(q, p, c));
    if (c.operand.type === 'match' && c.operand.match.regexp) {
      regexps.push({
        pattern: c.operand.match.pattern,
        caseSensitive: c.operand.match.caseSensitive,
        param: c.param,
      });
    }
  }

  let from = 'records r';
  let order: string;
  if (q.search) {
    const tsquery = `websearch_to_tsquery(${quoteLiteral(q.search.config)}::regconfig, ${p.add(q.search.text)})`;
    from = `record_texts t CROSS JOIN ${tsquery} AS tsq JOIN records r ON r.environment = t.environment AND r.id = t.record_id`;
    where.unshift(
      `t.environment = ${quoteLiteral(environment)}`,
      `t.version = ${quoteLiteral(q.version)}`,
      `t.locale = ${quoteLiteral(q.locale)}`,
      `t.document @@ tsq`,
    );
    const rankDirection = Array.isArray(q.order) ? 'DESC' : q.order.rank;
    order = `ts_rank(t.document, tsq) ${rankDirection}, r.id ASC`;
  } else {
    order = orderSql(q, Array.isArray(q.order) ? q.order : []);
  }

  const whereSql = where.join('\n  AND ');
  const filterValues = [...p.values];
  // The page is cut first; meta.has_children (tree models) is then looked up for its rows only.
  const list: CompiledQuery = {
    text: `SELECT page.*, CASE WHEN (SELECT m.tree FROM item_types m WHERE m.environment = $1 AND m.id = page.item_type_id)
  THEN EXISTS (SELECT 1 FROM records c WHERE c.environment = $1 AND c.parent_id = page.id AND NOT c.is_block) END AS has_children
FROM (SELECT ${RECORD_COLUMNS}\nFROM ${from}\nWHERE ${whereSql}\nORDER BY ${order}\nLIMIT ${p.add(q.limit)} OFFSET ${p.add(q.offset)}) page`,
    values: p.values,
  };

  const unfiltered =
    q.ids === null && q.search === null && !q.onlyValid && q.conditions.length === 0;
  let count: CompiledQuery;
  if (unfiltered) {
    const column = q.version === 'published' ? 'published_count' : 'current_count';
    const values: unknown[] = [environment];
    let text = `SELECT COALESCE(sum(${column}), 0)::bigint AS count FROM record_counts WHERE environment = $1`;
    if (q.modelIds !== null) {
      values.push(q.modelIds);
      text += ' AND item_type_id = ANY($2::text[])';
    }
    count = { text, values };
  } else if (q.search && q.ids === null && !q.onlyValid && q.conditions.length === 0) {
    // A top-level record has documents of a version exactly when it has that version (the
    // store keeps them together), so a plain search counts documents, without the join.
    const values: unknown[] = [q.search.text];
    let text = `SELECT count(*)::bigint AS count FROM record_texts t
WHERE t.environment = ${quoteLiteral(environment)} AND t.version = ${quoteLiteral(q.version)}
  AND t.locale = ${quoteLiteral(q.locale)}
  AND t.document @@ websearch_to_tsquery(${quoteLiteral(q.search.config)}::regconfig, $1)`;
    if (q.modelIds !== null) {
      values.push(q.modelIds);
      text += '\n  AND t.item_type_id = ANY($2::text[])';
    }
    count = { text, values };
  } else {
    count = {
      text: `SELECT count(*)::bigint AS count\nFROM ${from}\nWHERE ${whereSql}`,
      values: filterValues,
    };
  }

  const shape: QueryShape =
    q.ids !== null ? 'by_ids' : q.search ? 'search' : unfiltered ? 'list' : 'list_filtered';
  const indexes = q.search && q.ids === null ? [searchIndexSpec(q, environment)] : indexSpecs(q);
  return { shape, list, count, regexps, indexes };
}
