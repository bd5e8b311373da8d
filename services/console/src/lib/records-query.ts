import { takesList, typedOperand, type ConditionRow } from './field-conditions.js';
import type { QueryValue } from './query.js';

export interface RecordsQuery {
  model: string;
  text: string;
  locale: string;
  version: 'published' | 'current';
  orderBy: string;
  filters: ConditionRow[];
  offset: number;
  limit: number;
}

/** The GET /items query parameters (docs/api.md, GET /items) for the screen's state. */
export function recordsParams(query: RecordsQuery): Record<string, QueryValue> {
  const fields: Record<string, Record<string, QueryValue>> = {};
  for (const row of query.filters) {
    const field = row.field.trim();
    if (!field || !row.operator) continue;
    // A list operator with nothing listed is still meaningful (`in: []` matches nothing), but a
    // blank value for the others means "not filled in yet".
    if (row.value === '' && !takesList(row.operator)) continue;
    (fields[field] ??= {})[row.operator] = typedOperand(row.operator, row.value);
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
