import { createHash } from 'node:crypto';
import { ERROR_STATUS, type ErrorCode } from './error-codes.js';
import type { ErrorEnvelope } from './resources.js';

/** Field-level validation codes used in `details.code` of INVALID_FIELD errors. */
export type ValidationCode =
  | 'VALIDATION_REQUIRED'
  | 'VALIDATION_FORMAT'
  | 'VALIDATION_INCLUSION'
  | 'VALIDATION_UNIQUENESS'
  | 'VALIDATION_TYPE'
  | 'VALIDATION_LENGTH';

export type ErrorDetails = Record<string, unknown>;

export interface FieldErrorDetails extends ErrorDetails {
  field: string;
  code: ValidationCode;
  message: string;
}

/** One entry of the error envelope, before rendering. */
export interface ErrorEntry {
  code: ErrorCode;
  details: ErrorDetails;
}

/**
 * The one error type of the HTTP API. It may carry several entries (several INVALID_FIELD
 * problems are reported together); the status is the first entry's.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly entries: readonly ErrorEntry[];
  /** A retry can succeed unchanged (503s); the official client retries those. */
  readonly transient: boolean;
  /** Extra response headers, e.g. Retry-After or X-RateLimit-Reset. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    details: ErrorDetails = {},
    options: {
      cause?: unknown;
      transient?: boolean;
      headers?: Record<string, string>;
      status?: number;
    } = {},
  ) {
    super(typeof details['message'] === 'string' ? details['message'] : code, {
      cause: options.cause,
    });
    this.name = 'ApiError';
    this.status = options.status ?? ERROR_STATUS[code];
    this.entries = [{ code, details }];
    this.transient = options.transient ?? code === 'SERVICE_UNAVAILABLE';
    this.headers = options.headers ?? {};
  }

  /** Several INVALID_FIELD (or other 422) problems answered together. */
  static many(entries: readonly ErrorEntry[]): ApiError {
    const [first] = entries;
    if (!first) throw new Error('ApiError.many needs at least one entry');
    const error = new ApiError(first.code, first.details);
    (error as { entries: readonly ErrorEntry[] }).entries = entries;
    return error;
  }

  static field(field: string, code: ValidationCode, message: string): ErrorEntry {
    const details: FieldErrorDetails = { field, code, message };
    return { code: 'INVALID_FIELD', details };
  }
}

const idCache = new Map<string, string>();
/** The envelope's `id`: 6 hex characters, constant per code. */
export function errorId(code: string): string {
  let id = idCache.get(code);
  if (!id) {
    id = createHash('sha1').update(code).digest('hex').slice(0, 6);
    idCache.set(code, id);
  }
  return id;
}

/** Renders the DatoCMS error envelope: errors live in `data`, not in `errors`. */
export function renderErrorEnvelope(error: ApiError, docsUrl: string): ErrorEnvelope {
  return {
    data: error.entries.map((entry) => ({
      id: errorId(entry.code),
      type: 'api_error' as const,
      attributes: {
        code: entry.code,
        details: entry.details,
        doc_url: `${docsUrl}#${entry.code}`,
        ...(error.transient ? { transient: true as const } : {}),
      },
    })),
  };
}
