/** A JSON object: not null, not an array. */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What a caught value says, for logs and error details: an Error's message, else its string. */
export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);
