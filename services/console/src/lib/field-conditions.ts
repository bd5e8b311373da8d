/**
 * Field conditions as the console's forms hold them: a field, one of GET /items' operators and
 * the operand as typed (docs/api.md, Field filters). The records screen sends them in
 * `filter[fields]`; a webhook's item entry stores them as `fields` (Events and filters), which
 * takes the same operand forms. Kept free of the DOM so it is unit-tested.
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

/**
 * A webhook condition's operand from its text: as typed (typedOperand), or JSON when the text is
 * a JSON object, array or string (`{"pattern": "^a", "case_sensitive": true}`, a list holding a
 * comma, `"{text}"`), which is how operandText shows operands the typed forms cannot say. A
 * pattern starting with `[` is a character class, not a list.
 */
export function operandFromText(operator: string, value: string): unknown {
  const text = value.trim();
  const json = /^[{"]/.test(text) || (text.startsWith('[') && !PATTERN_OPERATORS.has(operator));
  if (json) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not JSON: the text as typed.
    }
  }
  return typedOperand(operator, value);
}

/** Text operandFromText reads as typed, not as JSON. */
const isPlainText = (text: string) => !/^\s*[[{"]/.test(text);

/** How a stored operand is shown in the form; operandFromText reads it back. */
export function operandText(operator: string, operand: unknown): string {
  if (
    LIST_OPERATORS.has(operator) &&
    Array.isArray(operand) &&
    operand.every((v) => typeof v === 'string' && !v.includes(',') && v.trim() === v && v !== '') &&
    isPlainText(operand.join(', '))
  ) {
    return operand.join(', ');
  }
  const keys = typeof operand === 'object' && operand !== null ? Object.keys(operand) : [];
  const fields = operand as Record<string, unknown>;
  if (
    PATTERN_OPERATORS.has(operator) &&
    keys.length === 1 &&
    typeof fields['pattern'] === 'string' &&
    isPlainText(fields['pattern'])
  ) {
    return fields['pattern'];
  }
  if (
    operator === 'near' &&
    keys.length === 3 &&
    ['latitude', 'longitude', 'radius'].every((k) => /^-?[\d.e+]+$/i.test(String(fields[k])))
  ) {
    return `${String(fields['latitude'])}, ${String(fields['longitude'])}, ${String(fields['radius'])}`;
  }
  if (typeof operand === 'string' && isPlainText(operand)) return operand;
  if (typeof operand === 'number' || typeof operand === 'boolean') return String(operand);
  return JSON.stringify(operand) ?? '';
}
