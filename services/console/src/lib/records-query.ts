import type { QueryValue } from './query.js';

/** One row of the records screen's field filters. */
export interface FieldFilterRow {
  key: number;
  field: string;
  operator: string;
  value: string;
}

export interface RecordsQuery {
  model: string;
  text: string;
  locale: string;
  version: 'published' | 'current';
  orderBy: string;
  filters: FieldFilterRow[];
  offset: number;
  limit: number;
}

const LIST_OPERATORS = new Set(['in', 'not_in', 'any_in', 'all_in']);
const PATTERN_OPERATORS = new Set(['matches', 'not_matches']);

/** The operand of one filter row as the query string carries it. */
function operand(operator: string, value: string): QueryValue {
  if (LIST_OPERATORS.has(operator)) {
    return value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
  }
  if (PATTERN_OPERATORS.has(operator)) return { pattern: value };
  if (operator === 'near') {
    const [latitude = '', longitude = '', radius = ''] = value.split(',').map((x) => x.trim());
    return { latitude, longitude, radius };
  }
  return value;
}

/** The GET /items query parameters (docs/api.md, GET /items) for the screen's state. */
export function recordsParams(query: RecordsQuery): Record<string, QueryValue> {
  const fields: Record<string, Record<string, QueryValue>> = {};
  for (const row of query.filters) {
    const field = row.field.trim();
    if (!field || !row.operator) continue;
    // A list operator with nothing listed is still meaningful (`in: []` matches nothing), but a
    // blank value for the others means "not filled in yet".
    if (row.value === '' && !LIST_OPERATORS.has(row.operator)) continue;
    (fields[field] ??= {})[row.operator] = operand(row.operator, row.value);
  }
  const filter: Record<string, QueryValue> = {};
  if (query.model.trim()) filter['type'] = query.model.trim();
  if (query.text.trim()) filter['query'] = query.text.trim();
  if (Object.keys(fields).length > 0) filter['fields'] = fields;
  return {
    filter,
    locale: query.locale.trim(),
    version: query.version,
    order_by: query.orderBy.trim(),
    page: { offset: String(query.offset), limit: String(query.limit) },
  };
}
