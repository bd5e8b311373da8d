/**
 * Every error code of the wire contract (docs/api.md, Errors) with the HTTP status it is sent with.
 */
export const ERROR_STATUS = {
  INVALID_REQUEST: 400,
  INVALID_JSON_BODY: 400,
  /** X-Herald-Read-After is not a token of POST /events (extension). */
  INVALID_READ_AFTER_HEADER: 400,
  INVALID_AUTHORIZATION_HEADER: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  NOT_FOUND: 404,
  INVALID_ENDPOINT: 404,
  INVALID_ENVIRONMENT: 404,
  INVALID_ACCEPT_HEADER: 406,
  REQUEST_TOO_LARGE: 413,
  INVALID_CONTENT_TYPE_HEADER: 415,
  INVALID_FORMAT: 422,
  INVALID_ATTRIBUTES: 422,
  INVALID_FIELD: 422,
  INVALID_API_VERSION: 422,
  INVALID_FILTER: 422,
  INVALID_FILTER_FIELDS_PARAM: 422,
  INVALID_ORDERING: 422,
  INVALID_PARAMS: 422,
  INVALID_LOCALE: 422,
  /** A read ran past its time budget (READ_STATEMENT_TIMEOUT_MS) and was cancelled. */
  QUERY_TIMEOUT: 422,
  /** Revoking or demoting the last active admin token (extension). */
  LAST_ADMIN_TOKEN: 422,
  /** DatoCMS's code: the bootstrap admin token's name, role and value are configuration. */
  NON_EDITABLE_ACCESS_TOKEN: 422,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];
