import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Exchange } from './exchanges.js';

// ajv-formats is CommonJS: its default export is the plugin under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** What the check needs of an OpenAPI 3.1 document (paths → method → operation). */
interface OpenApiDocumentLike {
  paths?: object;
}

interface ResponseObject {
  content?: Record<string, { schema?: unknown }>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const pointer = (...parts: string[]): string =>
  parts.map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/**
 * Checks answers against an OpenAPI 3.1 document: the status must be one the operation documents,
 * and a JSON body must match that response's schema (JSON Schema 2020-12, by ajv). An answer to a
 * path or method the document does not have (an unknown endpoint, a test's own route behind
 * Herald's plumbing) is checked only as an error envelope when it is a JSON error, and only when
 * Herald's plumbing gave it (X-Api-Version): a test's bare express app is no part of the API.
 * Returns one line per problem.
 */
export function createResponseChecker(
  document: OpenApiDocumentLike,
): (exchange: Exchange) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi');
  const validators = new Map<string, ValidateFunction>();
  const validator = (path: string): ValidateFunction => {
    let validate = validators.get(path);
    if (!validate) {
      validate = ajv.getSchema(`openapi#/${path}`);
      if (!validate) throw new Error(`No schema at ${path} of the OpenAPI document`);
      validators.set(path, validate);
    }
    return validate;
  };
  // Concrete paths before templated ones (OpenAPI's rule), then fewer parameters first.
  const templates = Object.keys(document.paths ?? {})
    .map((path) => ({
      path,
      params: (path.match(/\{/g) ?? []).length,
      pattern: new RegExp(
        `^${path
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]+')}$`,
      ),
    }))
    .sort((a, b) => a.params - b.params);

  return (exchange) => {
    const path = exchange.url.split('?')[0]!;
    const method = exchange.method.toLowerCase();
    const name = `${exchange.method} ${exchange.url} → ${exchange.status}`;
    const isJson = /^application\/(.+\+)?json\b/.test(exchange.contentType ?? '');
    const template = templates.find((candidate) => candidate.pattern.test(path));
    const item =
      template && (document.paths as Record<string, Record<string, unknown>>)[template.path];
    const operation = item?.[method];
    if (!template || !operation || !METHODS.has(method)) {
      if (exchange.status < 400 || !isJson || exchange.apiVersion === undefined) return [];
      return problems(name, validator(pointer('components', 'schemas', 'ErrorEnvelope')), exchange);
    }
    const responses = (operation as { responses?: Record<string, ResponseObject> }).responses ?? {};
    const response = responses[String(exchange.status)];
    if (!response) {
      return [
        `${name}: status ${exchange.status} is not documented for ${method.toUpperCase()} ${template.path} (documented: ${Object.keys(responses).join(', ')})`,
      ];
    }
    const mediaTypes = Object.keys(response.content ?? {});
    if (mediaTypes.length === 0) {
      return exchange.body.length === 0 ? [] : [`${name}: documented without a body, sent one`];
    }
    const type = (exchange.contentType ?? '').split(';')[0]!.trim();
    if (!mediaTypes.includes(type)) {
      return [`${name}: Content-Type ${type || '(none)'}, documented ${mediaTypes.join(', ')}`];
    }
    if (!isJson) return [];
    const at = pointer(
      'paths',
      template.path,
      method,
      'responses',
      String(exchange.status),
      'content',
      type,
      'schema',
    );
    return problems(name, validator(at), exchange);
  };
}

function problems(name: string, validate: ValidateFunction, exchange: Exchange): string[] {
  let body: unknown;
  try {
    body = JSON.parse(exchange.body.toString('utf8'));
  } catch {
    return [`${name}: the body is not JSON`];
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (error) =>
      `${name}: ${error.instancePath || '(body)'} ${error.message ?? 'does not match'}${
        error.keyword === 'additionalProperties'
          ? ` (${String((error.params as { additionalProperty?: unknown }).additionalProperty)})`
          : ''
      }`,
  );
}

/** Throws, listing every problem, when an answer does not match the document. */
export function assertExchangesMatch(
  check: (exchange: Exchange) => string[],
  exchanges: readonly Exchange[],
): void {
  const found = exchanges.flatMap(check);
  if (found.length === 0) return;
  const shown = found.slice(0, 20).join('\n  ');
  const more = found.length > 20 ? `\n  … and ${found.length - 20} more` : '';
  throw new Error(
    `${found.length} answer(s) do not match the OpenAPI document (GET /openapi.json):\n  ${shown}${more}`,
  );
}
