import type { RequestHandler } from 'express';
import { ApiError } from '@herald/contract';

/** The media types of JSON bodies and answers. */
export const JSON_TYPES = ['application/json', 'application/vnd.api+json'];

/** True when an Accept header admits a JSON response. Missing and `*\/*` are fine. */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [range = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    const type = range.trim();
    return type === '*/*' || type === 'application/*' || JSON_TYPES.includes(type);
  });
}

export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return JSON_TYPES.includes(type);
}

export const checkAccept: RequestHandler = (req, _res, next) => {
  if (acceptsJson(req.headers.accept)) return next();
  next(
    new ApiError('INVALID_ACCEPT_HEADER', {
      message: 'This API answers application/json; the Accept header excludes it',
      accept: req.headers.accept,
    }),
  );
};

export const checkApiVersion: RequestHandler = (req, _res, next) => {
  const version = req.headers['x-api-version'];
  if (version === undefined || version === '3') return next();
  next(
    new ApiError('INVALID_API_VERSION', {
      message: 'X-Api-Version must be 3, the only version of this API',
      version,
    }),
  );
};

/** A body is present when the request says it has bytes to send. */
function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return length !== '0';
  return headers['transfer-encoding'] !== undefined;
}

/**
 * 415 when a request with a body is not JSON. A GET carrying a Content-Type and no body is fine:
 * the official clients send one on every request.
 */
export const checkContentType: RequestHandler = (req, _res, next) => {
  if (!hasBody(req.headers) || isJsonContentType(req.headers['content-type'])) return next();
  next(
    new ApiError('INVALID_CONTENT_TYPE_HEADER', {
      message: 'Request bodies must be application/json or application/vnd.api+json',
      content_type: req.headers['content-type'] ?? null,
    }),
  );
};
