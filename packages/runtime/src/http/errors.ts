import type { ErrorRequestHandler } from 'express';
import { ApiError, renderErrorEnvelope } from '@herald/contract';
import { isDbUnavailableError } from '@herald/store';
import { postgresProblem, warnOncePerCause } from '../dependencies.js';
import type { Logger } from '../logger.js';
import { context } from './context.js';
import { docsUrlFor } from './error-reference.js';

/** body-parser's error types, mapped to the contract's codes. */
function fromBodyParser(error: {
  type?: unknown;
  message: string;
  limit?: unknown;
}): ApiError | undefined {
  switch (error.type) {
    case 'entity.too.large':
      return new ApiError('REQUEST_TOO_LARGE', {
        message: `The request body exceeds the limit of ${String(error.limit)} bytes`,
        limit: error.limit,
      });
    case 'entity.parse.failed':
      return new ApiError('INVALID_JSON_BODY', { message: `Invalid JSON: ${error.message}` });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('INVALID_CONTENT_TYPE_HEADER', { message: error.message });
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new ApiError('INVALID_REQUEST', { message: error.message }, { status: 400 });
    default:
      return undefined;
  }
}

/**
 * The other client faults express and its parsers report as http-errors with status 400: the
 * router's URIError for a path parameter whose percent-encoding is not UTF-8 (`%FF`, overlong
 * or surrogate sequences), and the zlib error of a body that does not decompress as its
 * Content-Encoding says.
 */
function fromHttpError(
  error: Error & { status?: unknown; expose?: unknown },
): ApiError | undefined {
  if (error.status !== 400) return undefined;
  const code = (error as { code?: unknown }).code;
  let message: string;
  if (error instanceof URIError) {
    message = 'The path holds percent-encoding that does not decode to UTF-8';
  } else if (typeof code === 'string' && /^(Z_|ERR__)/.test(code)) {
    message = `The body does not decompress as its Content-Encoding says (${error.message})`;
  } else if (error.expose === true) {
    message = error.message;
  } else {
    return undefined;
  }
  return new ApiError('INVALID_REQUEST', { message }, { status: 400, cause: error });
}

/** Turns anything thrown into the contract's error, masking the unexpected as INTERNAL_ERROR. */
export function toApiError(error: unknown, logger: Logger, requestId: string): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof Error) {
    const parsed = fromBodyParser(error) ?? fromHttpError(error);
    if (parsed) return parsed;
    if (isDbUnavailableError(error)) {
      // Every request says so during an outage: one line per 10 s.
      warnOncePerCause(logger, postgresProblem(error), { err: error.message, requestId });
      return new ApiError(
        'SERVICE_UNAVAILABLE',
        { message: 'The database is unavailable; retry later' },
        { cause: error },
      );
    }
  }
  logger.error({ err: error, requestId }, 'unexpected error');
  return new ApiError('INTERNAL_ERROR', {
    message: 'An unexpected error occurred',
    request_id: requestId,
  });
}

/**
 * The one error middleware: renders the DatoCMS error envelope, `doc_url` on DOCS_URL when it is
 * set, else on this process's /docs/errors as the client addressed it (docsUrlFor).
 */
export function errorHandler(logger: Logger, docsUrl: string | undefined): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const apiError = toApiError(error, logger, context(res).requestId);
    context(res).errorCode = apiError.entries[0]?.code;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    res.status(apiError.status).json(renderErrorEnvelope(apiError, docsUrlFor(req, docsUrl)));
  };
}
