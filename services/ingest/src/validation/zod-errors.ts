import type { z } from 'zod';
import { ApiError, type ErrorEntry, type ValidationCode } from '@herald/contract';

/**
 * zod issues as the contract's INVALID_FIELD entries (docs/api.md, Errors), one mapping for the
 * service's validators. zod's own issue codes map to validation codes; a refinement names its code,
 * and any details to send beside the message, in its `params` (see `rule` and `report`).
 */

interface IssueParams {
  code?: ValidationCode;
  details?: Record<string, unknown>;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** The validation code of an issue found in `input` (absent values are VALIDATION_REQUIRED). */
function validationCode(issue: z.core.$ZodIssue, input: unknown): ValidationCode {
  if (
    issue.code !== 'custom' &&
    issue.code !== 'unrecognized_keys' &&
    valueAt(input, issue.path) === undefined
  ) {
    return 'VALIDATION_REQUIRED';
  }
  switch (issue.code) {
    case 'invalid_type':
      return 'VALIDATION_TYPE';
    case 'invalid_value':
    case 'invalid_union':
    case 'unrecognized_keys':
      return 'VALIDATION_INCLUSION';
    case 'too_big':
    case 'too_small':
      return 'VALIDATION_LENGTH';
    case 'custom':
      return (issue.params as IssueParams | undefined)?.code ?? 'VALIDATION_FORMAT';
    case 'invalid_element':
    case 'invalid_format':
    case 'invalid_key':
    case 'not_multiple_of':
      return 'VALIDATION_FORMAT';
  }
}

/** One issue found in `input` as an INVALID_FIELD entry naming `<prefix>.<path>` (`data.3.id`). */
export function issueToEntry(prefix: string, issue: z.core.$ZodIssue, input: unknown): ErrorEntry {
  // An empty key is a path segment like any other (`headers.` names the header "").
  const field = (prefix ? [prefix, ...issue.path] : issue.path).map(String).join('.');
  const entry = ApiError.field(field, validationCode(issue, input), issue.message);
  const details = issue.code === 'custom' ? (issue.params as IssueParams)?.details : undefined;
  return details ? { ...entry, details: { ...entry.details, ...details } } : entry;
}

/**
 * The issues of a resource's attributes as one error: an attribute the resource does not have (an
 * unrecognized key at the top) is INVALID_ATTRIBUTES naming it, as POST /webhooks names one; any
 * other issue an INVALID_FIELD entry. `what` ends the unknown attribute's message ("for a token").
 */
export function attributesError(
  issues: readonly z.core.$ZodIssue[],
  attributes: Record<string, unknown>,
  what: string,
): ApiError {
  return ApiError.many(
    issues.flatMap((issue): ErrorEntry[] =>
      issue.code === 'unrecognized_keys' && issue.path.length === 0
        ? issue.keys.map((key) => ({
            code: 'INVALID_ATTRIBUTES',
            details: {
              field: key,
              message: `Unknown attribute "${key}" ${what}`,
              extraneous_attributes: [key],
            },
          }))
        : [issueToEntry('', issue, attributes)],
    ),
  );
}

/** Options of a refinement: its validation code, and abort so that a value's first problem wins. */
export const rule = (code: ValidationCode, message: string) =>
  ({ message, params: { code }, abort: true }) as const;

/** Reports a problem from a superRefine, at `path` below the value being refined. */
export function report(
  ctx: z.RefinementCtx,
  code: ValidationCode,
  message: string,
  path: PropertyKey[] = [],
  details?: Record<string, unknown>,
): void {
  ctx.addIssue({ code: 'custom', message, path, params: details ? { code, details } : { code } });
}

/**
 * What safeParse finds, through the Standard Schema entry point: the issues without a ZodError (an
 * Error, whose stack trace costs more than the parse). For schemas without async refinements.
 */
export function parse<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { issues?: undefined; value: T } | { issues: z.core.$ZodIssue[] } {
  return schema['~standard'].validate(value) as ReturnType<typeof parse<T>>;
}

/**
 * Checks a part of the value being refined with its own schema and reports that schema's issues
 * at `path`: how a superRefine applies field schemas in an order, or depending on one another.
 */
export function check(
  ctx: z.RefinementCtx,
  schema: z.ZodType,
  value: unknown,
  path: PropertyKey[],
): boolean {
  const { issues } = parse(schema, value);
  for (const issue of issues ?? []) ctx.addIssue({ ...issue, path: [...path, ...issue.path] });
  return !issues;
}
