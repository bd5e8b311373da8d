import Mustache from 'mustache';
import { z } from 'zod';
import {
  ApiError,
  BATCH_LIMITS,
  DESTINATION_KINDS,
  DESTINATION_SCHEMES,
  HTTP_DESTINATION,
  STREAM_MAX_LEN,
  CONTENT_ENTRY_KEYS,
  DELIVERY_ORDERS,
  ENVIRONMENT_TYPES,
  PAYLOAD_API_VERSIONS,
  UNFILTERED_ENTITY_TYPES,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
  checkAddress,
  errorMessage,
  isObject,
  isWebhookEventType,
  type CidrList,
  type Destination,
  type ErrorEntry,
  type WebhookBatch,
  type WebhookEntityType,
  type WebhookEventEntry,
} from '@herald/contract';
import type { WebhookInput } from '@herald/store';
import { check, issueToEntry, parse, report, rule } from '../validation/zod-errors.js';
import { checkContentKeys } from './content-keys.js';
import { endpointAuth, endpointTls, withStoredSecrets } from './endpoint-auth.js';
import { literalHost } from './hosts.js';

/**
 * Webhook attributes (docs/api.md, The webhook resource) as a zod schema, shared by create, update
 * and preview. Every failure names the exact element (`events.1.event_types.0`) with one of the
 * contract's validation codes and a message a person can act on, and all of them are reported
 * together. Where one field's rules depend on another (event types on the entity type) or on what
 * came before (names given twice), a superRefine applies the field schemas in order.
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
  delivery_policy: 'deliveryPolicy',
  payload_changes: 'payloadChanges',
  delivery_order: 'deliveryOrder',
  coalesce: 'coalesceEvents',
  batch: 'batch',
  trace_context: 'traceContext',
  destination: 'destination',
  auth: 'auth',
  tls: 'tls',
} as const satisfies Record<string, keyof WebhookInput>;
type WireAttribute = keyof typeof WRITABLE;

/** Attributes the response carries that no request sets. */
const READ_ONLY = ['signing_secret', 'disabled_reason', 'created_at', 'updated_at'];

/**
 * Keys a create may leave out (the others it must send, null where allowed: docs/api.md,
 * The webhook resource).
 */
const OPTIONAL_ON_CREATE = {
  enabled: true,
  redact_headers: true,
  delivery_policy: true,
  payload_changes: true,
  payload_api_version: true,
  nested_items_in_payload: true,
  auto_retry: true,
  delivery_order: true,
  coalesce: true,
  batch: true,
  trace_context: true,
  destination: true,
  auth: true,
  tls: true,
} as const;

const DEFAULTS = {
  enabled: true,
  payloadApiVersion: '3',
  nestedItemsInPayload: false,
  autoRetry: true,
  payloadChanges: false,
  deliveryOrder: 'any',
  coalesceEvents: false,
  batch: null,
  traceContext: true,
  destination: HTTP_DESTINATION,
  auth: null,
  tls: null,
} as const;

const LIMITS = {
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

// Building blocks: the messages name what was expected and what came.

const typeName = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/** The error of a type check. */
const expected = (what: string) => ({
  error: (issue: { input?: unknown }) => `${what}, not ${typeName(issue.input)}`,
});

/**
 * A JSON object, passed on as it is (z.object and z.record rebuild it, dropping a `__proto__`).
 * The meta tells the OpenAPI generator what a custom check cannot.
 */
const jsonObject = (what: string) =>
  z
    .custom<Record<string, unknown>>(isObject, {
      ...expected(what),
      params: { code: 'VALIDATION_TYPE' },
      abort: true,
    })
    .meta({ type: 'object' });

/** `schema` for a value that must be there: absent or null (or `blank`) is VALIDATION_REQUIRED. */
const present = <T extends z.ZodType>(
  message: string,
  schema: T,
  blank: (value: unknown) => boolean = (value) => value === undefined || value === null,
) =>
  z
    .unknown()
    .refine((value) => !blank(value), rule('VALIDATION_REQUIRED', message))
    .pipe(schema);

/** A string that is one of `values`. */
const member = (what: string, values: readonly string[], message: string) =>
  z
    .string(expected(what))
    .refine((value) => values.includes(value), rule('VALIDATION_INCLUSION', message));

/** A required entity type, one of `values`. */
const entityType = (values: readonly string[], message: string) =>
  present('entity_type is required', member('entity_type must be a string', values, message));

/** A required non-empty array of `element`. */
const list = (name: string, element: z.ZodType) =>
  present(
    `${name} is required`,
    z
      .array(element, expected(`${name} must be an array of strings`))
      .refine((items) => items.length > 0, rule('VALIDATION_LENGTH', `${name} must not be empty`)),
  );

/** Keys of `value` outside `keys` are VALIDATION_FORMAT, each named. */
function unknownKeys(
  ctx: z.RefinementCtx,
  value: Record<string, unknown>,
  keys: ReadonlySet<string>,
  has: string,
): void {
  for (const key of Object.keys(value)) {
    if (!keys.has(key)) report(ctx, 'VALIDATION_FORMAT', `unknown key "${key}"; ${has}`, [key]);
  }
}

// The attributes.

const Name = present(
  'name must not be blank',
  z
    .string(expected('name must be a string'))
    .refine(
      (name) => [...name].length <= LIMITS.nameChars,
      rule('VALIDATION_LENGTH', `name must be at most ${LIMITS.nameChars} characters`),
    ),
  (value) => value === null || (typeof value === 'string' && value.trim() === ''),
);

/** WHATWG URL parsing silently drops tabs/newlines and trims spaces: refuse them instead. */
// eslint-disable-next-line no-control-regex
const NO_SPACE_OR_CONTROL = /^[^\x00-\x20\x7f]*$/;

const webhookUrl = (allowCidrs: CidrList) =>
  present(
    'url must not be blank',
    z
      .string(expected('url must be a string'))
      .refine(
        (value) => value.length <= LIMITS.urlChars,
        rule('VALIDATION_LENGTH', `url must be at most ${LIMITS.urlChars} characters`),
      )
      .regex(
        NO_SPACE_OR_CONTROL,
        rule('VALIDATION_FORMAT', 'url must not contain spaces or control characters'),
      )
      .superRefine((value, ctx) => {
        const problem = urlProblem(value, allowCidrs);
        if (problem) report(ctx, 'VALIDATION_FORMAT', problem);
      }),
    (value) => value === null || value === '',
  );

const MUSTACHE_TAG = /\{\{|\}\}/;
const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

function urlProblem(value: string, allowCidrs: CidrList): string | undefined {
  const parts = URL_PARTS.exec(value);
  if (!parts) return 'url must be an absolute http:// or https:// URL';
  const [, scheme = '', authority = '', rest = ''] = parts;
  if (MUSTACHE_TAG.test(scheme) || MUSTACHE_TAG.test(authority)) {
    return 'url may hold Mustache tags only in its path and query, not in its scheme or host';
  }
  const tagError = mustacheError(rest);
  if (tagError) return `url has a Mustache syntax error: ${tagError.message}`;
  let parsed: URL;
  try {
    // Tags are rendered per call; check the URL's shape with each tag replaced by plain text.
    parsed = new URL(`${scheme}://${authority}${rest.replace(/\{\{\{?[^}]*\}?\}\}/g, 'x')}`);
  } catch {
    return 'url must be an absolute http:// or https:// URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return 'url must use http or https';
  }
  if (!parsed.hostname) return 'url must name a host';
  const host = literalHost(parsed.hostname);
  const address = host === undefined ? undefined : checkAddress(host, allowCidrs);
  return address?.blocked ? `url points to a refused address: ${address.reason}` : undefined;
}

const HeaderName = z.string(expected('header names are strings')).regex(HEADER_NAME, {
  error: (issue) => `"${String(issue.input)}" is not a valid HTTP header name`,
});

const HeaderValue = z
  .string(expected('header values must be strings'))
  .regex(/^[^\r\n\0]*$/, rule('VALIDATION_FORMAT', 'header values must not contain CR, LF or NUL'))
  .regex(
    HEADER_VALUE,
    rule(
      'VALIDATION_FORMAT',
      'header values may hold only tabs and printable ASCII or Latin-1 characters',
    ),
  )
  .refine(
    (value) => value.length <= LIMITS.headerValueChars,
    rule(
      'VALIDATION_LENGTH',
      `header values must be at most ${LIMITS.headerValueChars} characters`,
    ),
  );

const HttpHeaders = present(
  'headers must be an object (send {} for none)',
  jsonObject('headers must be an object').superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > LIMITS.headers) {
      report(ctx, 'VALIDATION_LENGTH', `headers may hold at most ${LIMITS.headers} entries`);
    }
    const seen = new Set<string>();
    for (const name of names) {
      const lower = name.toLowerCase();
      if (!check(ctx, HeaderName, name, [name])) {
        // The name's problem is reported; its value is still checked.
      } else if (FORBIDDEN_HEADERS.has(lower)) {
        report(ctx, 'VALIDATION_FORMAT', `${name} is set by Herald and cannot be overridden`, [
          name,
        ]);
      } else if (seen.has(lower)) {
        report(ctx, 'VALIDATION_UNIQUENESS', `${name} is given twice (names ignore case)`, [name]);
      }
      seen.add(lower);
      check(ctx, HeaderValue, headers[name], [name]);
    }
  }),
);

/**
 * A number in [min, max] at `path` (`delivery_policy.circuit_failures`), or null where `orNull`
 * says what null means.
 */
const boundedNumber = (
  path: string,
  min: number,
  max: number,
  { integer = true, orNull }: { integer?: boolean; orNull?: string } = {},
) =>
  z.unknown().superRefine((value, ctx) => {
    if (value === null && orNull !== undefined) return;
    const kind = integer ? 'an integer' : 'a number';
    const otherwise = orNull === undefined ? '' : `, or null (${orNull})`;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      report(ctx, 'VALIDATION_TYPE', `${path} must be ${kind}${otherwise}`);
    } else if ((integer && !Number.isInteger(value)) || value < min || value > max) {
      report(ctx, 'VALIDATION_FORMAT', `${path} must be ${kind} from ${min} to ${max}${otherwise}`);
    }
  });

/** A policy key: a number in range, or null for the deployment's default. */
const policyNumber = (key: string, min: number, max: number, integer = true) =>
  boundedNumber(`delivery_policy.${key}`, min, max, { integer, orNull: 'the default' });

/**
 * Extension: the endpoint health policy, each key absent or null taking the deployment's
 * default: a rate limit, the circuit breaker, the sustained-failure disable.
 */
const DeliveryPolicySchema = jsonObject(
  'delivery_policy must be an object ({} for the defaults)',
).superRefine((policy, ctx) => {
  const keys = {
    rate_limit_per_second: policyNumber('rate_limit_per_second', 0.01, 10_000, false),
    circuit_failures: policyNumber('circuit_failures', 0, 1_000_000),
    circuit_cooldown_ms: policyNumber('circuit_cooldown_ms', 100, 86_400_000),
    disable_after_failing_ms: policyNumber('disable_after_failing_ms', 0, 365 * 86_400_000),
  };
  for (const [key, value] of Object.entries(policy)) {
    const schema = keys[key as keyof typeof keys];
    if (!schema) {
      report(
        ctx,
        'VALIDATION_FORMAT',
        `delivery_policy has no key "${key}"; its keys: ${Object.keys(keys).join(', ')}`,
        [key],
      );
    } else {
      check(ctx, schema, value, [key]);
    }
  }
});

/** Extension: header names (any case) whose values the call log keeps as `***`. */
const RedactHeaders = z
  .array(
    z.unknown(),
    expected('redact_headers must be an array of header names (send [] for none)'),
  )
  .superRefine((names, ctx) => {
    if (names.length > LIMITS.headers) {
      report(ctx, 'VALIDATION_LENGTH', `redact_headers may hold at most ${LIMITS.headers} names`);
    }
    const seen = new Set<string>();
    names.forEach((name, index) => {
      if (check(ctx, HeaderName, name, [index]) && seen.has((name as string).toLowerCase())) {
        report(
          ctx,
          'VALIDATION_UNIQUENESS',
          `${name as string} is listed twice (names ignore case)`,
          [index],
        );
      }
      if (typeof name === 'string') seen.add(name.toLowerCase());
    });
  });

/** Extension, flow control: how a webhook's calls of one entity go (docs/api.md, Flow control). */
const DeliveryOrderSchema = member(
  'delivery_order must be a string',
  DELIVERY_ORDERS,
  `delivery_order must be one of: ${DELIVERY_ORDERS.join(', ')}`,
);

const BATCH_KEYS = {
  window_ms: boundedNumber(
    'batch.window_ms',
    BATCH_LIMITS.window_ms.min,
    BATCH_LIMITS.window_ms.max,
  ),
  max_events: boundedNumber(
    'batch.max_events',
    BATCH_LIMITS.max_events.min,
    BATCH_LIMITS.max_events.max,
    { orNull: `${BATCH_LIMITS.max_events.default}, the default` },
  ),
};

/**
 * Extension, flow control: `{"window_ms": n, "max_events": n}` (max_events absent or null: the
 * default), or null for one call per event. Stored and shown with both keys.
 */
const BatchSchema = jsonObject('batch must be an object {"window_ms": …} or null')
  .superRefine((batch, ctx) => {
    for (const key of Object.keys(batch)) {
      if (!Object.hasOwn(BATCH_KEYS, key)) {
        report(
          ctx,
          'VALIDATION_FORMAT',
          `batch has no key "${key}"; its keys: ${Object.keys(BATCH_KEYS).join(', ')}`,
          [key],
        );
      }
    }
    if (batch['window_ms'] === undefined) {
      report(ctx, 'VALIDATION_REQUIRED', 'batch.window_ms is required', ['window_ms']);
    } else {
      check(ctx, BATCH_KEYS.window_ms, batch['window_ms'], ['window_ms']);
    }
    if (batch['max_events'] !== undefined) {
      check(ctx, BATCH_KEYS.max_events, batch['max_events'], ['max_events']);
    }
  })
  .transform((batch): WebhookBatch => ({
    window_ms: batch['window_ms'] as number,
    max_events:
      (batch['max_events'] as number | null | undefined) ?? BATCH_LIMITS.max_events.default,
  }))
  .nullable();

const EntityId = z
  .string(expected('entity ids are strings'))
  .refine((id) => id !== '', rule('VALIDATION_REQUIRED', 'entity ids must not be blank'));
const EntityIds = list('entity_ids', EntityId);
const EnvironmentTypes = list(
  'entity_ids',
  EntityId.refine(
    (id) => (ENVIRONMENT_TYPES as readonly string[]).includes(id),
    rule('VALIDATION_INCLUSION', `environment_type filters list ${ENVIRONMENT_TYPES.join(' or ')}`),
  ),
);
const FilterEntityType = entityType(
  WEBHOOK_FILTER_ENTITY_TYPES,
  `a filter's entity_type must be one of: ${WEBHOOK_FILTER_ENTITY_TYPES.join(', ')}`,
);
const FILTER_KEYS = new Set(['entity_type', 'entity_ids']);

const Filter = jsonObject('a filter must be an object with entity_type and entity_ids').superRefine(
  (filter, ctx) => {
    unknownKeys(ctx, filter, FILTER_KEYS, 'a filter has entity_type and entity_ids');
    const kind = check(ctx, FilterEntityType, filter['entity_type'], ['entity_type'])
      ? filter['entity_type']
      : undefined;
    const ids = kind === 'environment_type' ? EnvironmentTypes : EntityIds;
    check(ctx, ids, filter['entity_ids'], ['entity_ids']);
  },
);

const EntityType = entityType(
  WEBHOOK_ENTITY_TYPES,
  `entity_type must be one of: ${WEBHOOK_ENTITY_TYPES.join(', ')}`,
);
const EventTypes = list('event_types', z.unknown());
const EventType = z.string(expected('event types are strings'));
const Filters = z.array(z.unknown(), expected('filters must be an array of filter objects'));
const ENTRY_KEYS = new Set<string>([
  'entity_type',
  'event_types',
  'filter',
  'filters',
  ...CONTENT_ENTRY_KEYS,
]);

const Entry = jsonObject('each events entry must be an object with entity_type and event_types')
  .superRefine((entry, ctx) => {
    unknownKeys(
      ctx,
      entry,
      ENTRY_KEYS,
      'an events entry has entity_type, event_types, filter or filters, and (item entries) changed_fields, locales, record_status, fields',
    );
    const known = check(ctx, EntityType, entry['entity_type'], ['entity_type'])
      ? (entry['entity_type'] as WebhookEntityType)
      : undefined;
    if (check(ctx, EventTypes, entry['event_types'], ['event_types'])) {
      const seen = new Set<string>();
      (entry['event_types'] as unknown[]).forEach((eventType, index) => {
        const path = ['event_types', index];
        if (!check(ctx, EventType, eventType, path)) return;
        const name = eventType as string;
        if (seen.has(name)) {
          report(ctx, 'VALIDATION_UNIQUENESS', `"${name}" is listed twice`, path);
        } else if (known && !isWebhookEventType(known, name)) {
          report(
            ctx,
            'VALIDATION_INCLUSION',
            `"${name}" is not an event type of ${known}; use one of: ${WEBHOOK_EVENT_TYPES[known].join(', ')}`,
            path,
          );
        }
        seen.add(name);
      });
    }

    const { filter, filters } = entry;
    if (filter !== undefined && filters !== undefined) {
      report(
        ctx,
        'VALIDATION_FORMAT',
        'send either filter (one object) or filters (an array), not both',
      );
    }
    const given: [path: PropertyKey[], filter: unknown][] = [];
    if (filter !== undefined && filter !== null) given.push([['filter'], filter]);
    if (filters !== undefined && filters !== null && check(ctx, Filters, filters, ['filters'])) {
      (filters as unknown[]).forEach((item, index) => given.push([['filters', index], item]));
    }
    if (known && UNFILTERED_ENTITY_TYPES.includes(known) && given.length > 0) {
      report(ctx, 'VALIDATION_FORMAT', `${known} events take no filters`, [
        filter !== undefined ? 'filter' : 'filters',
      ]);
    } else {
      for (const [path, item] of given) check(ctx, Filter, item, path);
    }
    checkContentKeys(ctx, entry, known);
  })
  // Rebuilt key by key in the order of the contract, keeping the shape the client sent.
  .transform((entry): WebhookEventEntry => {
    const given = entry as unknown as WebhookEventEntry;
    const { entity_type, event_types, filter, filters } = given;
    const result: WebhookEventEntry = {
      entity_type,
      event_types,
      ...(filter !== undefined && { filter }),
      ...(filters !== undefined && { filters }),
    };
    for (const key of CONTENT_ENTRY_KEYS) {
      if (given[key] !== undefined) Object.assign(result, { [key]: given[key] });
    }
    return result;
  });

const Events = present(
  'events must be an array (send [] for none)',
  z.array(Entry, expected('events must be an array')),
);

/** The Mustache parser's complaint about a template, with where it is. */
function mustacheError(
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

const CustomPayload = z
  .string(expected('custom_payload must be a string or null'))
  .refine(
    (template) => Buffer.byteLength(template, 'utf8') <= LIMITS.customPayloadBytes,
    rule('VALIDATION_LENGTH', 'custom_payload must be at most 64 KB'),
  )
  .superRefine((template, ctx) => {
    const error = mustacheError(template);
    if (!error) return;
    const { message, position, line, column } = error;
    report(
      ctx,
      'VALIDATION_FORMAT',
      `custom_payload is not a valid Mustache template: ${message}`,
      [],
      position === undefined ? undefined : { position, line, column },
    );
  })
  .nullable();

const HttpBasicUser = z
  .string(expected('http_basic_user must be a string or null'))
  .refine(
    (user) => !user.includes(':'),
    rule('VALIDATION_FORMAT', 'http_basic_user must not contain ":" (RFC 7617)'),
  )
  .nullable();
const HttpBasicPassword = z
  .string(expected('http_basic_password must be a string or null'))
  .nullable();

/** The longest exchange, subject, topic or stream key (AMQP's shortstr is 255 bytes). */
const DESTINATION_NAME_MAX = 255;

/** The keys of each destination kind, each with its check; a problem names its key. */
const DESTINATION_KEYS: Record<Destination['kind'], readonly string[]> = {
  http: ['kind'],
  rabbitmq: ['kind', 'url', 'username', 'password', 'exchange', 'routing_key'],
  nats: ['kind', 'url', 'username', 'password', 'subject', 'jetstream'],
  mqtt: ['kind', 'url', 'username', 'password', 'topic'],
  redis_stream: ['kind', 'url', 'username', 'password', 'stream', 'max_len'],
};

/** What is wrong with a broker URL for `kind`, or undefined. */
function brokerUrlProblem(
  kind: keyof typeof DESTINATION_SCHEMES,
  value: string,
  allowCidrs: CidrList,
): string | undefined {
  const schemes: readonly string[] = DESTINATION_SCHEMES[kind];
  const expectedUrl = `destination.url must be a ${schemes.map((s) => `${s}://`).join(' or ')} URL`;
  if (value.length > LIMITS.urlChars || !NO_SPACE_OR_CONTROL.test(value)) return expectedUrl;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return expectedUrl;
  }
  if (!schemes.includes(parsed.protocol.slice(0, -1))) return expectedUrl;
  if (!parsed.hostname) return 'destination.url must name a host';
  const host = literalHost(parsed.hostname);
  const address = host === undefined ? undefined : checkAddress(host, allowCidrs);
  return address?.blocked
    ? `destination.url points to a refused address: ${address.reason}`
    : undefined;
}

/**
 * Extension: where the calls go (docs/api.md, Destinations). `{"kind": "http"}` (the default)
 * sends HTTP to `url`; a broker kind names its broker and where on it the message goes.
 */
const destinationSchema = (allowCidrs: CidrList) =>
  jsonObject('destination must be an object {"kind": …}').transform((given, ctx): Destination => {
    const kind = given['kind'];
    if (typeof kind !== 'string' || !(DESTINATION_KINDS as readonly string[]).includes(kind)) {
      report(
        ctx,
        'VALIDATION_INCLUSION',
        `destination.kind must be one of: ${DESTINATION_KINDS.join(', ')}`,
        ['kind'],
      );
      return z.NEVER;
    }
    const known = kind as Destination['kind'];
    unknownKeys(
      ctx,
      given,
      new Set(DESTINATION_KEYS[known]),
      `a ${known} destination has ${DESTINATION_KEYS[known].join(', ')}`,
    );
    if (known === 'http') return HTTP_DESTINATION;
    const text = (key: string, { required = true, empty = false } = {}): string | null => {
      const value = given[key];
      if ((value === undefined || value === null) && !required) return null;
      if (typeof value !== 'string') {
        report(ctx, 'VALIDATION_REQUIRED', `destination.${key} must be a string`, [key]);
        return null;
      }
      if (!empty && value === '') {
        report(ctx, 'VALIDATION_REQUIRED', `destination.${key} must not be empty`, [key]);
      } else if (Buffer.byteLength(value) > DESTINATION_NAME_MAX && key !== 'url') {
        report(
          ctx,
          'VALIDATION_LENGTH',
          `destination.${key} must be at most ${DESTINATION_NAME_MAX} bytes`,
          [key],
        );
      }
      return value;
    };
    const url = text('url') ?? '';
    const problem = url ? brokerUrlProblem(known, url, allowCidrs) : undefined;
    if (problem) report(ctx, 'VALIDATION_FORMAT', problem, ['url']);
    const credentials = {
      url,
      username: text('username', { required: false }),
      password: text('password', { required: false, empty: true }),
    };
    switch (known) {
      case 'rabbitmq':
        // An empty routing key is AMQP's own (a fanout exchange ignores it).
        return {
          kind: known,
          ...credentials,
          exchange: text('exchange') ?? '',
          routing_key: text('routing_key', { required: false, empty: true }) ?? '',
        };
      case 'nats': {
        const subject = text('subject') ?? '';
        if (/[\s*>]/.test(subject)) {
          report(
            ctx,
            'VALIDATION_FORMAT',
            'destination.subject must not hold spaces or the wildcards * and >',
            ['subject'],
          );
        }
        const jetstream = given['jetstream'] ?? true;
        if (typeof jetstream !== 'boolean') {
          report(ctx, 'VALIDATION_TYPE', 'destination.jetstream must be true or false', [
            'jetstream',
          ]);
        }
        return { kind: known, ...credentials, subject, jetstream: jetstream === true };
      }
      case 'mqtt': {
        const topic = text('topic') ?? '';
        if (/[+#]/.test(topic)) {
          report(
            ctx,
            'VALIDATION_FORMAT',
            'destination.topic must not hold the wildcards + and #',
            ['topic'],
          );
        }
        return { kind: known, ...credentials, topic };
      }
      case 'redis_stream': {
        const maxLen = given['max_len'] ?? STREAM_MAX_LEN.default;
        const { min, max } = STREAM_MAX_LEN;
        if (
          typeof maxLen !== 'number' ||
          !Number.isInteger(maxLen) ||
          maxLen < min ||
          maxLen > max
        ) {
          report(
            ctx,
            'VALIDATION_FORMAT',
            `destination.max_len must be an integer from ${min} to ${max}`,
            ['max_len'],
          );
        }
        return {
          kind: known,
          ...credentials,
          stream: text('stream') ?? '',
          max_len: maxLen as number,
        };
      }
    }
  });

const flag = (key: string) => z.boolean(expected(`${key} must be true or false`));

const PayloadApiVersion = member(
  'payload_api_version must be a string ("3")',
  PAYLOAD_API_VERSIONS,
  `payload_api_version must be one of: ${PAYLOAD_API_VERSIONS.join(', ')}`,
);

// In a `u` regex a surrogate pair is one code point, so only lone surrogates match.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The path to the first string (value or key) in `value` that is not well-formed UTF-16. */
function illFormedPath(value: unknown): PropertyKey[] | undefined {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? [] : undefined;
  const entries = Array.isArray(value)
    ? value.entries()
    : isObject(value)
      ? Object.entries(value)
      : [];
  for (const [key, item] of entries) {
    if (typeof key === 'string' && LONE_SURROGATE.test(key)) return [key];
    const path = illFormedPath(item);
    if (path) return [key, ...path];
  }
  return undefined;
}

/**
 * One attribute: absent is VALIDATION_REQUIRED (where the object's schema does not make it
 * optional), a lone surrogate anywhere in it VALIDATION_FORMAT (Postgres would silently replace
 * it), then its own schema.
 */
function attribute(key: string, schema: z.ZodType) {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      if (value === undefined) {
        report(ctx, 'VALIDATION_REQUIRED', `${key} is required (send null if you want none)`);
        return;
      }
      const path = illFormedPath(value);
      if (!path) return;
      const field = [key, ...path].join('.');
      report(ctx, 'VALIDATION_FORMAT', `${field} holds a lone surrogate; send valid Unicode`, path);
    })
    .pipe(schema);
}

/** The schemas of create and update (any subset, same rules) for an SSRF allow list. */
function webhookAttributes(allowCidrs: CidrList) {
  // In the order problems are reported.
  const fields = {
    name: Name,
    url: webhookUrl(allowCidrs),
    headers: HttpHeaders,
    redact_headers: RedactHeaders,
    delivery_policy: DeliveryPolicySchema,
    events: Events,
    custom_payload: CustomPayload,
    http_basic_user: HttpBasicUser,
    http_basic_password: HttpBasicPassword,
    enabled: flag('enabled'),
    nested_items_in_payload: flag('nested_items_in_payload'),
    auto_retry: flag('auto_retry'),
    payload_changes: flag('payload_changes'),
    payload_api_version: PayloadApiVersion,
    delivery_order: DeliveryOrderSchema,
    coalesce: flag('coalesce'),
    batch: BatchSchema,
    trace_context: flag('trace_context'),
    destination: destinationSchema(allowCidrs),
    auth: endpointAuth(allowCidrs),
    tls: endpointTls,
  } satisfies Record<WireAttribute, z.ZodType>;
  const shape = {} as Record<WireAttribute, z.ZodType>;
  for (const key of Object.keys(fields) as WireAttribute[])
    shape[key] = attribute(key, fields[key]);
  const create = z.strictObject(shape).partial(OPTIONAL_ON_CREATE);
  return { create, update: create.partial() };
}
type WebhookAttributeSchemas = ReturnType<typeof webhookAttributes>;

/** Built once per allow list (one per app), not per request. */
const schemas = new WeakMap<CidrList, WebhookAttributeSchemas>();
/** The schemas as the OpenAPI document shows them: the allow list changes no shape. */
export const webhookAttributeSchemas: WebhookAttributeSchemas = webhookAttributes([]);
function schemasFor({ allowCidrs }: ValidationContext): WebhookAttributeSchemas {
  let built = schemas.get(allowCidrs);
  if (!built) schemas.set(allowCidrs, (built = webhookAttributes(allowCidrs)));
  return built;
}

/**
 * Flow control's one refused combination: `delivery_order: per_entity` with `batch`. Batches go
 * one at a time in the order they open, but an event that arrives after a later one of its entity
 * was sent in an earlier batch would still go in the next one: per-entity order could not be
 * kept. `settings`: the webhook as it would be stored (for an update, the stored one with the
 * change). Null when the settings go together.
 */
export function flowConflict(
  settings: Pick<WebhookInput, 'deliveryOrder' | 'batch'>,
  changed: 'delivery_order' | 'batch',
): ErrorEntry | null {
  if (settings.deliveryOrder !== 'per_entity' || !settings.batch) return null;
  return ApiError.field(
    changed,
    'VALIDATION_INCLUSION',
    'delivery_order "per_entity" cannot go with batch: batches go one at a time in the order ' +
      'they open, and an event older than one already sent would still go in a later batch; ' +
      'use one or the other',
  );
}

/** Validates create attributes and fills the defaults. */
export function validateCreate(
  attributes: Record<string, unknown>,
  context: ValidationContext,
): ValidationResult<WebhookInput> {
  const result = validate(schemasFor(context).create, attributes);
  if (!result.ok) return result;
  const conflict = flowConflict(
    { deliveryOrder: result.value.deliveryOrder ?? 'any', batch: result.value.batch ?? null },
    'delivery_order',
  );
  if (conflict) return { ok: false, errors: [conflict] };
  // A create has nothing stored: the write-only secrets must be given.
  const completed = withStoredSecrets(result.value, null);
  if (!completed.ok) return completed;
  return {
    ok: true,
    value: {
      ...DEFAULTS,
      redactHeaders: [],
      deliveryPolicy: {},
      ...completed.value,
    } as WebhookInput,
  };
}

/** Validates an update: any subset, same rules. */
export function validateUpdate(
  attributes: Record<string, unknown>,
  context: ValidationContext,
): ValidationResult<Partial<WebhookInput>> {
  return validate(schemasFor(context).update, attributes);
}

function validate(
  schema: z.ZodType<Partial<Record<WireAttribute, unknown>>>,
  attributes: Record<string, unknown>,
): ValidationResult<Partial<WebhookInput>> {
  const result = parse(schema, attributes);
  if (!result.issues) {
    const value = Object.entries(result.value).map(([key, given]) => [
      WRITABLE[key as WireAttribute],
      given,
    ]);
    return { ok: true, value: Object.fromEntries(value) as Partial<WebhookInput> };
  }
  // What is there before what it holds: unknown attributes, then missing ones, then the rest in
  // the order of the schema.
  const rank = (issue: z.core.$ZodIssue) =>
    issue.code === 'unrecognized_keys' ? 0 : Object.hasOwn(attributes, issue.path[0]!) ? 2 : 1;
  const issues = result.issues.toSorted((a, b) => rank(a) - rank(b));
  const errors = issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map(unknownAttribute)
      : [issueToEntry('', issue, attributes)],
  );
  return { ok: false, errors };
}

/**
 * An attribute no request sets: INVALID_ATTRIBUTES, not a field problem (docs/api.md,
 * The webhook resource).
 */
function unknownAttribute(key: string): ErrorEntry {
  return {
    code: 'INVALID_ATTRIBUTES',
    details: {
      field: key,
      message: READ_ONLY.includes(key)
        ? `"${key}" is read-only and cannot be set`
        : `Unknown attribute "${key}"; a webhook has: ${Object.keys(WRITABLE).join(', ')}`,
      extraneous_attributes: [key],
    },
  };
}
