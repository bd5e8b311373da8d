/** The operators of GET /items field filters (docs/api.md, Field filters), snake_case. */
export const ITEM_FILTER_OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not_in',
  'any_in',
  'all_in',
  'matches',
  'not_matches',
  'exists',
  'is_blank',
  'is_present',
  'near',
] as const;
export type ItemFilterOperator = (typeof ITEM_FILTER_OPERATORS)[number];
