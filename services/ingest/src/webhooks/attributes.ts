import Mustache from 'mustache';
import {
  ApiError,
  ENVIRONMENT_TYPES,
  PAYLOAD_API_VERSIONS,
  UNFILTERED_ENTITY_TYPES,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
  checkAddress,
  isIpAddress,
  isWebhookEntityType,
  isWebhookEventType,
  type CidrList,
  type ErrorEntry,
  type ValidationCode,
  type WebhookEventEntry,
  type WebhookFilter,
  type WebhookFilterEntityType,
  isObject,
  errorMessage,
} from '@herald/contract';
import type { WebhookInput } from '@herald/store';

/**
 * Validation of webhook attributes (API.md §4.2), shared by create and update. Hand-written rather
 * than a zod schema: every failure must name the exact element (`events.1.event_types.0`) with one
 * of the contract's validation codes and a message a person can act on, and all of them are
 * reported together.
 */

/** Attributes a client may set, by wire name. */
const WRITABLE = {
  name: 'name',
  url: 'url',
  enabled: 'enabled',
  headers: 'headers',
  events: 'events',
  custom_payload: 'customPayload',
  http_basic_user: 'httpBasicUser',
  http_basic_password: 'httpBasicPassword',
  payload_api_version: 'payloadApiVersion',
  nested_items_in_payload: 'nestedItemsInPayload',
  auto_retry: 'autoRetry',
  redact_headers: 'redactHeaders',
} as const satisfies Record<string, keyof WebhookInput>;
type WireAttribute = keyof typeof WRITABLE;

/** Attributes the response carries that no request sets. */
const READ_ONLY = ['signing_secret', 'disabled_reason', 'created_at', 'updated_at'];

/** Keys a create must send; the last three may be null (API.md §4.2). */
const REQUIRED_ON_CREATE: WireAttribute[] = [
  'name',
  'url',
  'headers',
  'events',
  'custom_payload',
  'http_basic_user',
  'http_basic_password',
];

const DEFAULTS = {
  enabled: true,
  payloadApiVersion: '3',
  nestedItemsInPayload: false,
  autoRetry: true,
} as const;

export const LIMITS = {
  nameChars: 255,
  urlChars: 2048,
  headers: 50,
  headerValueChars: 8192,
  customPayloadBytes: 64 * 1024,
} as const;

/** Headers the transport owns: hop-by-hop and framing headers cannot be set per webhook. */
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What Node's HTTP client accepts in a header value: tab, visible ASCII, space, Latin-1. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export interface ValidationContext {
  /** CIDRs exempt from the blocked address ranges (SSRF_ALLOW_CIDRS). */
  allowCidrs: CidrList;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: ErrorEntry[] };

class Problems {
  readonly entries: ErrorEntry[] = [];
  add(field: string, code: ValidationCode, message: string): void {
    this.entries.push(ApiError.field(field, code, message));
  }
}

const typeName = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/** Validates create attributes and fills the defaults. */
export function validateCreate(
  attributes: Record<string, unknown>,
  context: ValidationContext,
): ValidationResult<WebhookInput> {
  const result = validate(attributes, context, 'create');
  if (!result.ok) return result;
  return { ok: true, value: { ...DEFAULTS, redactHeaders: [], ...result.value } as WebhookInput };
}

/** Validates an update: any subset, same rules. */
export function validateUpdate(
  attributes: Record<string, unknown>,
  context: ValidationContext,
): ValidationResult<Partial<WebhookInput>> {
  return validate(attributes, context, 'update');
}

function validate(
  attributes: Record<string, unknown>,
  context: ValidationContext,
  mode: 'create' | 'update',
): ValidationResult<Partial<WebhookInput>> {
  const problems = new Problems();
  for (const key of Object.keys(attributes)) {
    if (Object.hasOwn(WRITABLE, key)) continue;
    problems.entries.push({
      code: 'INVALID_ATTRIBUTES',
      details: {
        field: key,
        message: READ_ONLY.includes(key)
          ? `"${key}" is read-only and cannot be set`
          : `Unknown attribute "${key}"; a webhook has: ${Object.keys(WRITABLE).join(', ')}`,
        extraneous_attributes: [key],
      },
    });
  }
  if (mode === 'create') {
    for (const key of REQUIRED_ON_CREATE) {
      if (!Object.hasOwn(attributes, key)) {
        problems.add(key, 'VALIDATION_REQUIRED', `${key} is required (send null if you want none)`);
      }
    }
  }

  const value: Partial<WebhookInput> = {};
  const has = (key: WireAttribute) => {
    if (!Object.hasOwn(attributes, key)) return false;
    // Lone surrogates would be silently replaced on the way into Postgres: refuse them instead.
    const malformed = findIllFormed(attributes[key], key);
    if (malformed === undefined) return true;
    problems.add(
      malformed,
      'VALIDATION_FORMAT',
      `${malformed} holds a lone surrogate; send valid Unicode`,
    );
    return false;
  };
  if (has('name')) setIf(value, 'name', checkName(attributes['name'], problems));
  if (has('url')) setIf(value, 'url', checkUrl(attributes['url'], context, problems));
  if (has('headers')) setIf(value, 'headers', checkHeaders(attributes['headers'], problems));
  if (has('redact_headers')) {
    setIf(value, 'redactHeaders', checkRedactHeaders(attributes['redact_headers'], problems));
  }
  if (has('events')) setIf(value, 'events', checkEvents(attributes['events'], problems));
  if (has('custom_payload')) {
    setIf(value, 'customPayload', checkCustomPayload(attributes['custom_payload'], problems));
  }
  for (const key of ['http_basic_user', 'http_basic_password'] as const) {
    if (has(key)) setIf(value, WRITABLE[key], checkBasicAuth(key, attributes[key], problems));
  }
  for (const key of ['enabled', 'nested_items_in_payload', 'auto_retry'] as const) {
    if (!has(key)) continue;
    const given = attributes[key];
    if (typeof given === 'boolean') value[WRITABLE[key]] = given;
    else
      problems.add(key, 'VALIDATION_TYPE', `${key} must be true or false, not ${typeName(given)}`);
  }
  if (has('payload_api_version')) {
    const given = attributes['payload_api_version'];
    if (typeof given !== 'string') {
      problems.add(
        'payload_api_version',
        'VALIDATION_TYPE',
        `payload_api_version must be a string ("3"), not ${typeName(given)}`,
      );
    } else if (!(PAYLOAD_API_VERSIONS as readonly string[]).includes(given)) {
      problems.add(
        'payload_api_version',
        'VALIDATION_INCLUSION',
        `payload_api_version must be one of: ${PAYLOAD_API_VERSIONS.join(', ')}`,
      );
    } else value.payloadApiVersion = given;
  }
  return problems.entries.length ? { ok: false, errors: problems.entries } : { ok: true, value };
}

// In a `u` regex a surrogate pair is one code point, so only lone surrogates match.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The path of the first string (value or key) that is not well-formed UTF-16, if any. */
function findIllFormed(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? path : undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = findIllFormed(item, `${path}.${index}`);
      if (found) return found;
    }
  } else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const found = LONE_SURROGATE.test(key)
        ? `${path}.${key}`
        : findIllFormed(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/** Assigns only values that passed (a failed check returns undefined). */
function setIf<K extends keyof WebhookInput>(
  target: Partial<WebhookInput>,
  key: K,
  value: WebhookInput[K] | undefined,
): void {
  if (value !== undefined) target[key] = value;
}

function checkName(value: unknown, problems: Problems): string | undefined {
  if (value === null || (typeof value === 'string' && value.trim() === '')) {
    problems.add('name', 'VALIDATION_REQUIRED', 'name must not be blank');
    return undefined;
  }
  if (typeof value !== 'string') {
    problems.add('name', 'VALIDATION_TYPE', `name must be a string, not ${typeName(value)}`);
    return undefined;
  }
  if ([...value].length > LIMITS.nameChars) {
    problems.add(
      'name',
      'VALIDATION_LENGTH',
      `name must be at most ${LIMITS.nameChars} characters`,
    );
    return undefined;
  }
  return value;
}

const MUSTACHE_TAG = /\{\{|\}\}/;
const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

function checkUrl(
  value: unknown,
  context: ValidationContext,
  problems: Problems,
): string | undefined {
  const fail = (code: ValidationCode, message: string) => {
    problems.add('url', code, message);
    return undefined;
  };
  if (value === null || value === '') return fail('VALIDATION_REQUIRED', 'url must not be blank');
  if (typeof value !== 'string') {
    return fail('VALIDATION_TYPE', `url must be a string, not ${typeName(value)}`);
  }
  if (value.length > LIMITS.urlChars) {
    return fail('VALIDATION_LENGTH', `url must be at most ${LIMITS.urlChars} characters`);
  }
  // WHATWG URL parsing silently drops tabs/newlines and trims spaces: refuse them instead.
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f]/.test(value)) {
    return fail('VALIDATION_FORMAT', 'url must not contain spaces or control characters');
  }
  const parts = URL_PARTS.exec(value);
  if (!parts) {
    return fail('VALIDATION_FORMAT', 'url must be an absolute http:// or https:// URL');
  }
  const [, scheme = '', authority = '', rest = ''] = parts;
  if (MUSTACHE_TAG.test(scheme) || MUSTACHE_TAG.test(authority)) {
    return fail(
      'VALIDATION_FORMAT',
      'url may hold Mustache tags only in its path and query, not in its scheme or host',
    );
  }
  const tagError = mustacheError(rest);
  if (tagError)
    return fail('VALIDATION_FORMAT', `url has a Mustache syntax error: ${tagError.message}`);
  let parsed: URL;
  try {
    // Tags are rendered per call; check the URL's shape with each tag replaced by plain text.
    parsed = new URL(`${scheme}://${authority}${rest.replace(/\{\{\{?[^}]*\}?\}\}/g, 'x')}`);
  } catch {
    return fail('VALIDATION_FORMAT', 'url must be an absolute http:// or https:// URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return fail('VALIDATION_FORMAT', 'url must use http or https');
  }
  if (!parsed.hostname) return fail('VALIDATION_FORMAT', 'url must name a host');
  const host = literalHost(parsed.hostname);
  if (host) {
    const check = checkAddress(host, context.allowCidrs);
    if (check.blocked) {
      return fail('VALIDATION_FORMAT', `url points to a refused address: ${check.reason}`);
    }
  }
  return value;
}

/**
 * The IP address a URL's host names literally: an IP literal (the URL parser has already turned
 * forms such as `0x7f.1` into dotted decimal), or loopback for `localhost` names (RFC 6761).
 */
function literalHost(hostname: string): string | undefined {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIpAddress(bare)) return bare;
  const name = bare.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return '127.0.0.1';
  return undefined;
}

function checkHeaders(value: unknown, problems: Problems): Record<string, string> | undefined {
  if (value === null) {
    problems.add('headers', 'VALIDATION_REQUIRED', 'headers must be an object (send {} for none)');
    return undefined;
  }
  if (!isObject(value)) {
    problems.add('headers', 'VALIDATION_TYPE', `headers must be an object, not ${typeName(value)}`);
    return undefined;
  }
  const names = Object.keys(value);
  const before = problems.entries.length;
  if (names.length > LIMITS.headers) {
    problems.add(
      'headers',
      'VALIDATION_LENGTH',
      `headers may hold at most ${LIMITS.headers} entries`,
    );
  }
  const seen = new Set<string>();
  for (const name of names) {
    const field = `headers.${name}`;
    const header = value[name];
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) {
      problems.add(field, 'VALIDATION_FORMAT', `"${name}" is not a valid HTTP header name`);
    } else if (FORBIDDEN_HEADERS.has(lower)) {
      problems.add(field, 'VALIDATION_FORMAT', `${name} is set by Herald and cannot be overridden`);
    } else if (seen.has(lower)) {
      problems.add(field, 'VALIDATION_UNIQUENESS', `${name} is given twice (names ignore case)`);
    }
    seen.add(lower);
    if (typeof header !== 'string') {
      problems.add(
        field,
        'VALIDATION_TYPE',
        `header values must be strings, not ${typeName(header)}`,
      );
    } else if (/[\r\n\0]/.test(header)) {
      problems.add(field, 'VALIDATION_FORMAT', 'header values must not contain CR, LF or NUL');
    } else if (!HEADER_VALUE.test(header)) {
      problems.add(
        field,
        'VALIDATION_FORMAT',
        'header values may hold only tabs and printable ASCII or Latin-1 characters',
      );
    } else if (header.length > LIMITS.headerValueChars) {
      problems.add(
        field,
        'VALIDATION_LENGTH',
        `header values must be at most ${LIMITS.headerValueChars} characters`,
      );
    }
  }
  return problems.entries.length === before ? (value as Record<string, string>) : undefined;
}

/** Extension: header names (any case) whose values the call log keeps as `***`. */
function checkRedactHeaders(value: unknown, problems: Problems): string[] | undefined {
  if (!Array.isArray(value)) {
    problems.add(
      'redact_headers',
      'VALIDATION_TYPE',
      `redact_headers must be an array of header names (send [] for none), not ${typeName(value)}`,
    );
    return undefined;
  }
  const before = problems.entries.length;
  if (value.length > LIMITS.headers) {
    problems.add(
      'redact_headers',
      'VALIDATION_LENGTH',
      `redact_headers may hold at most ${LIMITS.headers} names`,
    );
  }
  const seen = new Set<string>();
  value.forEach((name: unknown, index) => {
    const field = `redact_headers.${index}`;
    if (typeof name !== 'string') {
      problems.add(field, 'VALIDATION_TYPE', `header names are strings, not ${typeName(name)}`);
    } else if (!HEADER_NAME.test(name)) {
      problems.add(field, 'VALIDATION_FORMAT', `"${name}" is not a valid HTTP header name`);
    } else if (seen.has(name.toLowerCase())) {
      problems.add(field, 'VALIDATION_UNIQUENESS', `${name} is listed twice (names ignore case)`);
    }
    if (typeof name === 'string') seen.add(name.toLowerCase());
  });
  return problems.entries.length === before ? (value as string[]) : undefined;
}

const ENTRY_KEYS = new Set(['entity_type', 'event_types', 'filter', 'filters']);
const FILTER_KEYS = new Set(['entity_type', 'entity_ids']);

function checkEvents(value: unknown, problems: Problems): WebhookEventEntry[] | undefined {
  if (value === null) {
    problems.add('events', 'VALIDATION_REQUIRED', 'events must be an array (send [] for none)');
    return undefined;
  }
  if (!Array.isArray(value)) {
    problems.add('events', 'VALIDATION_TYPE', `events must be an array, not ${typeName(value)}`);
    return undefined;
  }
  const before = problems.entries.length;
  const entries: WebhookEventEntry[] = [];
  value.forEach((entry: unknown, index) => {
    const checked = checkEntry(entry, `events.${index}`, problems);
    if (checked) entries.push(checked);
  });
  return problems.entries.length === before ? entries : undefined;
}

function checkEntry(
  entry: unknown,
  path: string,
  problems: Problems,
): WebhookEventEntry | undefined {
  if (!isObject(entry)) {
    problems.add(
      path,
      'VALIDATION_TYPE',
      `each events entry must be an object with entity_type and event_types, not ${typeName(entry)}`,
    );
    return undefined;
  }
  const before = problems.entries.length;
  for (const key of Object.keys(entry)) {
    if (!ENTRY_KEYS.has(key)) {
      problems.add(
        `${path}.${key}`,
        'VALIDATION_FORMAT',
        `unknown key "${key}"; an events entry has entity_type, event_types and filter or filters`,
      );
    }
  }

  const entityType = entry['entity_type'];
  let known: keyof typeof WEBHOOK_EVENT_TYPES | undefined;
  if (entityType === undefined || entityType === null) {
    problems.add(`${path}.entity_type`, 'VALIDATION_REQUIRED', 'entity_type is required');
  } else if (typeof entityType !== 'string') {
    problems.add(
      `${path}.entity_type`,
      'VALIDATION_TYPE',
      `entity_type must be a string, not ${typeName(entityType)}`,
    );
  } else if (!isWebhookEntityType(entityType)) {
    problems.add(
      `${path}.entity_type`,
      'VALIDATION_INCLUSION',
      `entity_type must be one of: ${WEBHOOK_ENTITY_TYPES.join(', ')}`,
    );
  } else known = entityType;

  const eventTypes = entry['event_types'];
  if (eventTypes === undefined || eventTypes === null) {
    problems.add(`${path}.event_types`, 'VALIDATION_REQUIRED', 'event_types is required');
  } else if (!Array.isArray(eventTypes)) {
    problems.add(
      `${path}.event_types`,
      'VALIDATION_TYPE',
      `event_types must be an array of strings, not ${typeName(eventTypes)}`,
    );
  } else if (eventTypes.length === 0) {
    problems.add(`${path}.event_types`, 'VALIDATION_LENGTH', 'event_types must not be empty');
  } else {
    const seen = new Set<string>();
    eventTypes.forEach((eventType: unknown, index) => {
      const field = `${path}.event_types.${index}`;
      if (typeof eventType !== 'string') {
        problems.add(
          field,
          'VALIDATION_TYPE',
          `event types are strings, not ${typeName(eventType)}`,
        );
      } else if (seen.has(eventType)) {
        problems.add(field, 'VALIDATION_UNIQUENESS', `"${eventType}" is listed twice`);
      } else if (known && !isWebhookEventType(known, eventType)) {
        problems.add(
          field,
          'VALIDATION_INCLUSION',
          `"${eventType}" is not an event type of ${known}; use one of: ${WEBHOOK_EVENT_TYPES[known].join(', ')}`,
        );
      }
      if (typeof eventType === 'string') seen.add(eventType);
    });
  }

  const hasFilter = Object.hasOwn(entry, 'filter');
  const hasFilters = Object.hasOwn(entry, 'filters');
  if (hasFilter && hasFilters) {
    problems.add(
      path,
      'VALIDATION_FORMAT',
      'send either filter (one object) or filters (an array), not both',
    );
  }
  const filterList: { filter: unknown; path: string }[] = [];
  if (hasFilter && entry['filter'] !== null) {
    filterList.push({ filter: entry['filter'], path: `${path}.filter` });
  }
  if (hasFilters && entry['filters'] !== null) {
    const filters = entry['filters'];
    if (!Array.isArray(filters)) {
      problems.add(
        `${path}.filters`,
        'VALIDATION_TYPE',
        `filters must be an array of filter objects, not ${typeName(filters)}`,
      );
    } else {
      filters.forEach((filter: unknown, index) =>
        filterList.push({ filter, path: `${path}.filters.${index}` }),
      );
    }
  }
  if (known && UNFILTERED_ENTITY_TYPES.includes(known) && filterList.length > 0) {
    problems.add(
      `${path}.${hasFilter ? 'filter' : 'filters'}`,
      'VALIDATION_FORMAT',
      `${known} events take no filters`,
    );
  } else {
    for (const { filter, path: filterPath } of filterList)
      checkFilter(filter, filterPath, problems);
  }
  if (problems.entries.length !== before) return undefined;
  // Rebuilt key by key in the order of the contract, keeping the shape the client sent.
  const checked: WebhookEventEntry = {
    entity_type: known!,
    event_types: eventTypes as string[],
  };
  if (hasFilter) checked.filter = entry['filter'] as WebhookFilter | null;
  if (hasFilters) checked.filters = entry['filters'] as WebhookFilter[] | null;
  return checked;
}

function checkFilter(filter: unknown, path: string, problems: Problems): void {
  if (!isObject(filter)) {
    problems.add(
      path,
      'VALIDATION_TYPE',
      `a filter must be an object with entity_type and entity_ids, not ${typeName(filter)}`,
    );
    return;
  }
  for (const key of Object.keys(filter)) {
    if (!FILTER_KEYS.has(key)) {
      problems.add(
        `${path}.${key}`,
        'VALIDATION_FORMAT',
        `unknown key "${key}"; a filter has entity_type and entity_ids`,
      );
    }
  }
  const entityType = filter['entity_type'];
  let kind: WebhookFilterEntityType | undefined;
  if (entityType === undefined || entityType === null) {
    problems.add(`${path}.entity_type`, 'VALIDATION_REQUIRED', 'entity_type is required');
  } else if (typeof entityType !== 'string') {
    problems.add(
      `${path}.entity_type`,
      'VALIDATION_TYPE',
      `entity_type must be a string, not ${typeName(entityType)}`,
    );
  } else if (!(WEBHOOK_FILTER_ENTITY_TYPES as readonly string[]).includes(entityType)) {
    problems.add(
      `${path}.entity_type`,
      'VALIDATION_INCLUSION',
      `a filter's entity_type must be one of: ${WEBHOOK_FILTER_ENTITY_TYPES.join(', ')}`,
    );
  } else kind = entityType as WebhookFilterEntityType;

  const ids = filter['entity_ids'];
  if (ids === undefined || ids === null) {
    problems.add(`${path}.entity_ids`, 'VALIDATION_REQUIRED', 'entity_ids is required');
  } else if (!Array.isArray(ids)) {
    problems.add(
      `${path}.entity_ids`,
      'VALIDATION_TYPE',
      `entity_ids must be an array of strings, not ${typeName(ids)}`,
    );
  } else if (ids.length === 0) {
    problems.add(`${path}.entity_ids`, 'VALIDATION_LENGTH', 'entity_ids must not be empty');
  } else {
    ids.forEach((id: unknown, index) => {
      const field = `${path}.entity_ids.${index}`;
      if (typeof id !== 'string') {
        problems.add(field, 'VALIDATION_TYPE', `entity ids are strings, not ${typeName(id)}`);
      } else if (id === '') {
        problems.add(field, 'VALIDATION_REQUIRED', 'entity ids must not be blank');
      } else if (
        kind === 'environment_type' &&
        !(ENVIRONMENT_TYPES as readonly string[]).includes(id)
      ) {
        problems.add(
          field,
          'VALIDATION_INCLUSION',
          `environment_type filters list ${ENVIRONMENT_TYPES.join(' or ')}`,
        );
      }
    });
  }
}

/** The Mustache parser's complaint about a template, with where it is. */
export function mustacheError(
  template: string,
): { message: string; position?: number; line?: number; column?: number } | undefined {
  try {
    // A fresh Writer each time: the default one caches every template it parses, forever.
    new Mustache.Writer().parse(template);
    return undefined;
  } catch (error) {
    const message = errorMessage(error);
    const at = / at (\d+)$/.exec(message);
    if (!at?.[1]) return { message };
    const position = Number(at[1]);
    const before = template.slice(0, position).split('\n');
    const line = before.length;
    const column = (before[before.length - 1]?.length ?? 0) + 1;
    return { message: `${message} (line ${line}, column ${column})`, position, line, column };
  }
}

function checkCustomPayload(value: unknown, problems: Problems): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string') {
    problems.add(
      'custom_payload',
      'VALIDATION_TYPE',
      `custom_payload must be a string or null, not ${typeName(value)}`,
    );
    return undefined;
  }
  if (Buffer.byteLength(value, 'utf8') > LIMITS.customPayloadBytes) {
    problems.add('custom_payload', 'VALIDATION_LENGTH', 'custom_payload must be at most 64 KB');
    return undefined;
  }
  const error = mustacheError(value);
  if (error) {
    problems.entries.push({
      code: 'INVALID_FIELD',
      details: {
        field: 'custom_payload',
        code: 'VALIDATION_FORMAT',
        message: `custom_payload is not a valid Mustache template: ${error.message}`,
        ...(error.position !== undefined
          ? { position: error.position, line: error.line, column: error.column }
          : {}),
      },
    });
    return undefined;
  }
  return value;
}

function checkBasicAuth(
  key: 'http_basic_user' | 'http_basic_password',
  value: unknown,
  problems: Problems,
): string | null | undefined {
  if (value === null) return null;
  if (typeof value !== 'string') {
    problems.add(key, 'VALIDATION_TYPE', `${key} must be a string or null, not ${typeName(value)}`);
    return undefined;
  }
  if (key === 'http_basic_user' && value.includes(':')) {
    problems.add(key, 'VALIDATION_FORMAT', 'http_basic_user must not contain ":" (RFC 7617)');
    return undefined;
  }
  return value;
}
