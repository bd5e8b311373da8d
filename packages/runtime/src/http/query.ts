import qs from 'qs';
import { ApiError, errorMessage } from '@herald/contract';
import { findJsonProblem } from './json-walk.js';

/**
 * docs/api.md, Documents: more than 1,000 parameters or nesting deeper than 5 is a 422, never
 * dropped.
 */
export const QUERY_MAX_PARAMS = 1000;
export const QUERY_MAX_DEPTH = 5;

/** Parses a raw query string in Rack/PHP bracket notation, with the contract's limits. */
export function parseQueryString(raw: string): Record<string, unknown> {
  if (raw === '') return {};
  let parsed: Record<string, unknown>;
  try {
    parsed = qs.parse(raw, {
      depth: QUERY_MAX_DEPTH,
      strictDepth: true,
      parameterLimit: QUERY_MAX_PARAMS,
      throwOnLimitExceeded: true,
      arrayLimit: QUERY_MAX_PARAMS,
      allowPrototypes: false,
      plainObjects: true,
    });
  } catch (error) {
    const message = errorMessage(error);
    throw new ApiError(
      'INVALID_PARAMS',
      {
        message: /depth/i.test(message)
          ? `Query parameters may nest at most ${QUERY_MAX_DEPTH} levels deep`
          : `At most ${QUERY_MAX_PARAMS} query parameters are allowed`,
      },
      { cause: error },
    );
  }
  // qs depth limits keep this shallow; it only looks for strings Postgres cannot store.
  const problem = findJsonProblem(parsed, Infinity);
  if (problem && problem.kind !== 'too_deep') {
    const param = problem.path;
    throw new ApiError('INVALID_PARAMS', {
      param,
      message: `Query parameter ${param || '(name)'} contains ${
        problem.kind === 'nul' ? 'a NUL character' : 'a lone surrogate'
      }`,
    });
  }
  return parsed;
}
