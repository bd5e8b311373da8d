import type { z } from 'zod';
import {
  API_KEY_PATTERN,
  CONTENT_ENTRY_KEYS,
  LOCALE_PATTERN,
  RECORD_STATUSES,
  coerceFilterOperand,
  compileMatchPattern,
  filterOperator,
  isObject,
  type FilterValueKind,
  type ItemFilterOperator,
} from '@herald/contract';
import { report } from '../validation/zod-errors.js';

/**
 * An events entry's content keys (extension, docs/api.md, Events and filters): `changed_fields`,
 * `locales`, `record_status` and `fields`, checked when the webhook is stored. Webhooks belong to
 * no environment, so the fields a key names cannot be checked against a model here: what is
 * checked is every shape, the operators of GET /items and each operand's form for its operator.
 * Whether the operator suits the field's type is known when an event is matched (a condition
 * the field's type cannot take does not hold).
 */

const LIMITS = { names: 100, conditions: 50 } as const;

/** Postgres regular expression syntax that JavaScript, which evaluates a webhook's `matches`, reads otherwise. */
const POSTGRES_ONLY_REGEX = /\\[mMyYAZ]|\[\[[:.=]/;

/**
 * The most general kind each operator's operand takes: the operand's form is checked as for a
 * text field (numbers, dates and statuses are checked for the field's type at matching).
 */
const SHAPE_KIND: Partial<Record<ItemFilterOperator, FilterValueKind>> = { near: 'lat_lon' };

type Path = PropertyKey[];

/** A non-empty list of unique strings, each passing `valid` (else `invalid` says why). */
function checkNames(
  ctx: z.RefinementCtx,
  key: string,
  value: unknown,
  valid: (name: string) => boolean,
  invalid: string,
): void {
  if (!Array.isArray(value)) {
    report(ctx, 'VALIDATION_TYPE', `${key} must be an array of strings, or null`, [key]);
    return;
  }
  if (value.length === 0) {
    report(ctx, 'VALIDATION_LENGTH', `${key} must not be empty (send null for none)`, [key]);
  } else if (value.length > LIMITS.names) {
    report(ctx, 'VALIDATION_LENGTH', `${key} may list at most ${LIMITS.names} values`, [key]);
  }
  const seen = new Set<string>();
  value.forEach((name: unknown, index) => {
    const path = [key, index];
    if (typeof name !== 'string') {
      report(ctx, 'VALIDATION_TYPE', `${key} lists strings`, path);
    } else if (!valid(name)) {
      report(ctx, 'VALIDATION_FORMAT', `"${name}" ${invalid}`, path);
    } else if (seen.has(name)) {
      report(ctx, 'VALIDATION_UNIQUENESS', `"${name}" is listed twice`, path);
    }
    if (typeof name === 'string') seen.add(name);
  });
}

function checkCondition(ctx: z.RefinementCtx, operatorName: string, raw: unknown, path: Path) {
  const operator = filterOperator(operatorName);
  if (!operator) {
    report(
      ctx,
      'VALIDATION_INCLUSION',
      `unknown operator "${operatorName}"; the operators of GET /items: eq, neq, gt, gte, lt, lte, in, not_in, any_in, all_in, matches, not_matches, exists, is_blank, is_present, near`,
      path,
    );
    return;
  }
  const refuse = (why: string): never => {
    throw new RefusedOperand(why);
  };
  try {
    // `eq` takes one value, or a list (links and gallery fields).
    const kind =
      SHAPE_KIND[operator] ?? (operator === 'eq' && Array.isArray(raw) ? 'id_list' : 'text');
    const operand = coerceFilterOperand(
      { kind: 'field', fieldType: 'string' },
      kind,
      operator,
      raw,
      refuse,
    );
    if (operand.type === 'match' && operand.match.regexp) {
      const { pattern, caseSensitive } = operand.match;
      if (POSTGRES_ONLY_REGEX.test(pattern)) {
        refuse(
          'regular expression refused: \\m, \\M, \\y, \\Y, \\A, \\Z and [[:class:]] are not supported here',
        );
      }
      if (!compileMatchPattern(pattern, caseSensitive)) refuse('not a valid regular expression');
    }
  } catch (error) {
    if (!(error instanceof RefusedOperand)) throw error;
    report(ctx, 'VALIDATION_FORMAT', `${path.map(String).join('.')}: ${error.message}`, path);
  }
}

class RefusedOperand extends Error {}

function checkFields(ctx: z.RefinementCtx, value: unknown): void {
  if (!isObject(value)) {
    report(
      ctx,
      'VALIDATION_TYPE',
      'fields must be an object: field api_key → {operator: operand}, or null',
      ['fields'],
    );
    return;
  }
  const keys = Object.keys(value);
  if (keys.length === 0) {
    report(ctx, 'VALIDATION_LENGTH', 'fields must not be empty (send null for none)', ['fields']);
  }
  let conditions = 0;
  for (const apiKey of keys) {
    const operators = value[apiKey];
    const path = ['fields', apiKey];
    if (!API_KEY_PATTERN.test(apiKey)) {
      report(
        ctx,
        'VALIDATION_FORMAT',
        `"${apiKey}" is not a field api_key (snake_case, 1–64 characters)`,
        path,
      );
      continue;
    }
    if (!isObject(operators) || Object.keys(operators).length === 0) {
      report(
        ctx,
        'VALIDATION_TYPE',
        `fields.${apiKey} must be an object of operator → operand, e.g. {"eq": "x"}`,
        path,
      );
      continue;
    }
    for (const [operator, operand] of Object.entries(operators)) {
      conditions++;
      checkCondition(ctx, operator, operand, [...path, operator]);
    }
  }
  if (conditions > LIMITS.conditions) {
    report(ctx, 'VALIDATION_LENGTH', `fields may hold at most ${LIMITS.conditions} conditions`, [
      'fields',
    ]);
  }
}

/** Checks the content keys of an events entry of `entityType` (undefined: not a valid one). */
export function checkContentKeys(
  ctx: z.RefinementCtx,
  entry: Record<string, unknown>,
  entityType: string | undefined,
): void {
  for (const key of CONTENT_ENTRY_KEYS) {
    const value = entry[key];
    if (value === undefined || value === null) continue;
    if (entityType !== undefined && entityType !== 'item') {
      report(
        ctx,
        'VALIDATION_FORMAT',
        `${key} narrows item events only; ${entityType} entries take none`,
        [key],
      );
      continue;
    }
    switch (key) {
      case 'changed_fields':
        checkNames(
          ctx,
          key,
          value,
          (name) => API_KEY_PATTERN.test(name),
          'is not a field api_key (snake_case, 1–64 characters)',
        );
        break;
      case 'locales':
        checkNames(
          ctx,
          key,
          value,
          (name) => LOCALE_PATTERN.test(name),
          'is not a locale code (en, pt-BR)',
        );
        break;
      case 'record_status':
        checkNames(
          ctx,
          key,
          value,
          (name) => (RECORD_STATUSES as readonly string[]).includes(name),
          `is not a record status (${RECORD_STATUSES.join(', ')})`,
        );
        break;
      case 'fields':
        checkFields(ctx, value);
        break;
    }
  }
}
