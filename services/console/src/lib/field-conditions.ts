/**
 * Field conditions as the console's forms hold them: a field, one of GET /items' operators and
 * the operand as typed (docs/api.md, Field filters). The records screen sends them in
 * `filter[fields]`. Kept free of the DOM so it is unit-tested.
 */
export interface ConditionRow {
  key: number;
  field: string;
  operator: string;
  /** The operand as typed: lists comma-separated, `near` as `latitude, longitude, radius`. */
  value: string;
}

const LIST_OPERATORS = new Set(['in', 'not_in', 'any_in', 'all_in']);
const PATTERN_OPERATORS = new Set(['matches', 'not_matches']);

/** Whether the operator takes a list (an empty one is still meaningful: `in: []` matches nothing). */
export const takesList = (operator: string): boolean => LIST_OPERATORS.has(operator);

/** An operand as typed, in the form GET /items' query string carries it. */
type TypedOperand = string | string[] | { [key: string]: string };

/** The operand of a condition typed as text. */
export function typedOperand(operator: string, value: string): TypedOperand {
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
