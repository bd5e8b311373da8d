import { ApiError } from '@herald/contract';
import { sqlState } from '@herald/store';

/** 404 in the envelope for an unknown webhook id. */
export function webhookNotFound(id: string): ApiError {
  return new ApiError('NOT_FOUND', { message: `No webhook with id "${id}"`, id });
}

/** The unique index on name answered for concurrent creates: a field error, not a 500. */
export function mapUniqueName(error: unknown, name: string | undefined): unknown {
  if (sqlState(error) !== '23505') return error;
  return ApiError.many([
    ApiError.field(
      'name',
      'VALIDATION_UNIQUENESS',
      `A webhook named ${JSON.stringify(name ?? '')} already exists; names are unique`,
    ),
  ]);
}
