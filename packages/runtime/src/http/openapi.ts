import {
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import {
  ERROR_CODES,
  ERROR_STATUS,
  ErrorEnvelope,
  apiErrorEntry,
  type ApiOperation,
  type ErrorCode,
} from '@herald/contract';

// Declared in the contract, so that a service can describe another's operations without importing
// it (ingest serves the whole document: services/ingest/src/openapi.ts); the routes name it here.
export type { ApiOperation };

/**
 * A request body `{"data": {"type": <type>, "attributes": {...}}}` (docs/api.md, Documents), as the
 * routes' document readers take it; `attributes` the schema the route validates them with.
 */
export function requestDocument(
  type: string,
  attributes: z.ZodType,
  options: { id?: boolean } = {},
) {
  return z.object({
    data: z.object({
      type: z.literal(type),
      ...(options.id ? { id: z.string().optional() } : {}),
      attributes: attributes.optional(),
    }),
  });
}

/** What every authenticated operation can answer (docs/api.md, Errors, the common codes). */
const AUTHENTICATED_ERRORS: readonly ErrorCode[] = [
  'INVALID_REQUEST',
  'INVALID_JSON_BODY',
  'INVALID_AUTHORIZATION_HEADER',
  'INSUFFICIENT_PERMISSIONS',
  'INVALID_ENVIRONMENT',
  'INVALID_ACCEPT_HEADER',
  'REQUEST_TOO_LARGE',
  'INVALID_CONTENT_TYPE_HEADER',
  'INVALID_API_VERSION',
  'INVALID_PARAMS',
  'INVALID_FIELD',
  'RATE_LIMIT_EXCEEDED',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
];
/** What a public operation can answer besides its own: nothing but a bug. */
const PUBLIC_ERRORS: readonly ErrorCode[] = ['INTERNAL_ERROR'];

/** One component per code, so each operation lists its codes by name. */
const ERROR_ENTRIES = new Map(
  ERROR_CODES.map((code) => [
    code,
    apiErrorEntry([code]).meta({
      id: `ApiError_${code}`,
      description: `${code} (${ERROR_STATUS[code]}): see docs/errors.md#${code}`,
    }),
  ]),
);

/** The codes an operation can answer, grouped by status. */
function operationErrors(operation: ApiOperation): Map<number, ErrorCode[]> {
  const common = operation.access === 'public' ? PUBLIC_ERRORS : AUTHENTICATED_ERRORS;
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...common, ...(operation.errors ?? [])])) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

function errorResponse(codes: readonly ErrorCode[]): ResponseConfig {
  const entries = codes.map((code) => ERROR_ENTRIES.get(code)!);
  const entry = entries.length === 1 ? entries[0]! : z.union(entries);
  return {
    description: codes.join(', '),
    content: { 'application/json': { schema: z.strictObject({ data: z.array(entry).min(1) }) } },
  };
}

const PATH_PARAM = /\{([^}]+)\}/g;

function routeConfig(operation: ApiOperation): RouteConfig {
  const pathParams = [...operation.path.matchAll(PATH_PARAM)].map((match) => match[1]!);
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, answer] of Object.entries(operation.responses)) {
    responses[status] = {
      description: answer.description,
      ...(answer.schema || answer.mediaType
        ? {
            content: Object.fromEntries(
              [answer.mediaType ?? 'application/json']
                .flat()
                .map((type) => [type, { schema: answer.schema ?? z.string() }]),
            ),
          }
        : {}),
    };
  }
  for (const [status, codes] of operationErrors(operation)) {
    responses[String(status)] = errorResponse(codes);
  }
  const roles =
    operation.access === 'public'
      ? 'No token needed.'
      : `Roles: ${['admin', ...operation.access.roles].join(', ')}.`;
  return {
    method: operation.method,
    path: operation.path,
    summary: operation.summary,
    description: [roles, operation.extension ? '**Extension** (not in the DatoCMS CMA).' : '']
      .concat(operation.description ?? [])
      .filter(Boolean)
      .join('\n\n'),
    tags: [operation.tag],
    operationId: `${operation.method}${operation.path.replace(/\{|\}/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, next?: string) => (next ?? '').toUpperCase())}`,
    ...(operation.access === 'public' ? { security: [] } : {}),
    request: {
      ...(pathParams.length > 0
        ? { params: z.object(Object.fromEntries(pathParams.map((name) => [name, z.string()]))) }
        : {}),
      ...(operation.query ? { query: operation.query } : {}),
      ...(operation.headers ? { headers: operation.headers } : {}),
      ...(operation.body
        ? {
            body: {
              required: operation.body.required,
              content: { 'application/json': { schema: operation.body.schema } },
            },
          }
        : {}),
    },
    responses,
  };
}

/** An OpenAPI 3.1 document. */
export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

/**
 * The OpenAPI 3.1 document of these operations, generated from their zod schemas
 * (@asteasolutions/zod-to-openapi): request schemas as the handlers validate, answers as the
 * serializers are typed, and per operation the error envelope with each code it can give.
 */
export function buildOpenApiDocument(
  operations: readonly ApiOperation[],
  info: { title: string; version: string; description: string },
): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'token', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API token: Authorization: Bearer <token> (docs/api.md, Tokens and roles).',
  });
  for (const operation of operations) registry.registerPath(routeConfig(operation));
  // The generic envelope too: what any error answer is, documented operation or not.
  const document = new OpenApiGeneratorV31(
    [...registry.definitions, { type: 'schema', schema: ErrorEnvelope }],
    {
      sortComponents: 'alphabetically',
    },
  ).generateDocument({
    openapi: '3.1.0',
    info,
    security: [{ token: [] }],
    tags: [...new Set(operations.map((operation) => operation.tag))].map((name) => ({ name })),
  });
  bracketQueryParameters(document);
  return document;
}

/**
 * Query parameters that hold objects are sent with brackets (`page[limit]=10`,
 * `filter[fields][status][eq]=failed`; docs/api.md, Documents): OpenAPI's deepObject style.
 */
function bracketQueryParameters(document: OpenApiDocument): void {
  for (const item of Object.values(document.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'delete'] as const) {
      for (const parameter of item[method]?.parameters ?? []) {
        if (!('in' in parameter) || parameter.in !== 'query') continue;
        const type = (parameter.schema as { type?: unknown } | undefined)?.type;
        if (type === 'object') Object.assign(parameter, { style: 'deepObject', explode: true });
      }
    }
  }
}
