import { ApiError, type ErrorEntry } from '@herald/contract';
import { isWebhookNameTaken, type Queryable } from '@herald/store';

/**
 * When a request fails validation for other reasons, a taken name is reported with the rest so
 * the client sees every problem at once. (Success paths rely on the unique index instead.)
 */
export async function uniquenessProblem(
  db: Queryable,
  name: unknown,
  exceptId?: string,
): Promise<ErrorEntry | undefined> {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 1024) return undefined;
  if (!(await isWebhookNameTaken(db, name, exceptId))) return undefined;
  return ApiError.field(
    'name',
    'VALIDATION_UNIQUENESS',
    `A webhook named ${JSON.stringify(name)} already exists; names are unique`,
  );
}
