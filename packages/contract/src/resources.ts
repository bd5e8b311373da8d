import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import { ROLES } from './roles.js';
import type { Destination } from './destinations.js';
import { ATTEMPT_TRIGGERS, WEBHOOK_CALL_STATUSES } from './webhook-calls.js';
import {
  DELIVERY_ORDERS,
  OAUTH2_CLIENT_AUTHS,
  RECORD_STATUSES,
  WEBHOOK_AUTH_KINDS,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
  type DeliveryPolicy,
  type WebhookBatch,
  type WebhookEventEntry,
  type WebhookFilter,
} from './webhooks.js';

/**
 * The resources as the API answers them (docs/api.md), once: the serializers are typed by these
 * schemas and the OpenAPI document (GET /openapi.json) is generated from them, and every HTTP test
 * checks the answers it receives against that document. Objects are strict: an attribute a
 * serializer adds without adding it here is a mismatch, not a silent extension.
 *
 * `.meta({ id })` names the schemas that become components of the document.
 */

/** An instant as the serializers write it (Date#toISOString). */
const Instant = z.iso.datetime();
const NullableInstant = Instant.nullable();
/** A resource's id: always a string. */
const Id = z.string();
const ref = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), id: Id });
const one = <T extends string>(type: T) => z.strictObject({ data: ref(type) });
const Headers = z.record(z.string(), z.string());

// The error envelope (docs/api.md, Errors; docs/errors.md).

/** One entry of the envelope, of one of `codes`. */
export function apiErrorEntry<const C extends readonly [ErrorCode, ...ErrorCode[]]>(codes: C) {
  return z.strictObject({
    /** Six hex characters, constant per code. */
    id: z.string().regex(/^[0-9a-f]{6}$/),
    type: z.literal('api_error'),
    attributes: z.strictObject({
      code: z.enum(codes),
      details: z.record(z.string(), z.unknown()),
      doc_url: z.string(),
      /** Only where the same request can succeed later unchanged (503). */
      transient: z.literal(true).optional(),
    }),
  });
}

/** The DatoCMS error envelope: errors live in `data`. */
export const ErrorEnvelope = z
  .strictObject({ data: z.array(apiErrorEntry(ERROR_CODES)).min(1) })
  .meta({ id: 'ErrorEnvelope', description: 'Every error answer (docs/errors.md).' });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

// Webhooks (docs/api.md, The webhook resource).

const WebhookFilterSchema = z.strictObject({
  entity_type: z.enum(WEBHOOK_FILTER_ENTITY_TYPES),
  entity_ids: z.array(z.string()),
}) satisfies z.ZodType<WebhookFilter>;

/** One entry of a webhook's `events`, echoed in the shape it was sent. */
const WebhookEventEntrySchema = z
  .strictObject({
    entity_type: z.enum(WEBHOOK_ENTITY_TYPES),
    event_types: z.array(z.string()),
    filter: WebhookFilterSchema.nullable().optional(),
    filters: z.array(WebhookFilterSchema).nullable().optional(),
    changed_fields: z.array(z.string()).nullable().optional(),
    locales: z.array(z.string()).nullable().optional(),
    record_status: z.array(z.enum(RECORD_STATUSES)).nullable().optional(),
    fields: z.record(z.string(), z.record(z.string(), z.unknown())).nullable().optional(),
  })
  .meta({ id: 'WebhookEventEntry' }) satisfies z.ZodType<WebhookEventEntry>;

const policyNumber = z.number().nullable().optional();
const DeliveryPolicySchema = z.strictObject({
  rate_limit_per_second: policyNumber,
  circuit_failures: policyNumber,
  circuit_cooldown_ms: policyNumber,
  disable_after_failing_ms: policyNumber,
}) satisfies z.ZodType<DeliveryPolicy>;

const brokerFields = {
  url: z.string(),
  username: z.string().nullable(),
  password: z.string().nullable(),
};
/** Extension: where the calls go (docs/api.md, Destinations); credentials shown as `***`. */
const DestinationSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('http') }),
  z.strictObject({
    kind: z.literal('rabbitmq'),
    ...brokerFields,
    exchange: z.string(),
    routing_key: z.string(),
  }),
  z.strictObject({
    kind: z.literal('nats'),
    ...brokerFields,
    subject: z.string(),
    jetstream: z.boolean(),
  }),
  z.strictObject({ kind: z.literal('mqtt'), ...brokerFields, topic: z.string() }),
  z.strictObject({
    kind: z.literal('redis_stream'),
    ...brokerFields,
    stream: z.string(),
    max_len: z.number().int(),
  }),
]) satisfies z.ZodType<Destination>;

const WebhookBatchSchema = z.strictObject({
  window_ms: z.number().int(),
  max_events: z.number().int(),
}) satisfies z.ZodType<WebhookBatch>;

/** A webhook's `auth` as answered: everything but the write-only `client_secret`. */
const WebhookAuthSchema = z.strictObject({
  kind: z.enum(WEBHOOK_AUTH_KINDS),
  token_url: z.string(),
  client_id: z.string(),
  client_auth: z.enum(OAUTH2_CLIENT_AUTHS),
  scope: z.string().nullable(),
  audience: z.string().nullable(),
});

/** A webhook's `tls` as answered: the certificates, not the write-only `client_key`. */
const WebhookTlsSchema = z.strictObject({
  client_certificate: z.string().nullable(),
  ca_certificate: z.string().nullable(),
});

export const WebhookResource = z
  .strictObject({
    type: z.literal('webhook'),
    id: Id,
    attributes: z.strictObject({
      name: z.string(),
      url: z.string(),
      enabled: z.boolean(),
      headers: Headers,
      events: z.array(WebhookEventEntrySchema),
      http_basic_user: z.string().nullable(),
      http_basic_password: z.string().nullable(),
      custom_payload: z.string().nullable(),
      // Only "3" is accepted (PAYLOAD_API_VERSIONS); stored as text.
      payload_api_version: z.string(),
      nested_items_in_payload: z.boolean(),
      auto_retry: z.boolean(),
      redact_headers: z.array(z.string()),
      delivery_policy: DeliveryPolicySchema,
      payload_changes: z.boolean(),
      delivery_order: z.enum(DELIVERY_ORDERS),
      coalesce: z.boolean(),
      batch: WebhookBatchSchema.nullable(),
      // Extension: requests carry the traceparent of their attempt's span (docs/operations.md,
      // Traces).
      trace_context: z.boolean(),
      destination: DestinationSchema,
      // Extensions: how Herald authenticates to the endpoint (docs/api.md, Endpoint
      // authentication); the secrets are write-only.
      auth: WebhookAuthSchema.nullable(),
      tls: WebhookTlsSchema.nullable(),
      signing_secret: z.string(),
      disabled_reason: z.string().nullable(),
      disabled_at: NullableInstant,
      created_at: Instant,
      updated_at: Instant,
    }),
  })
  .meta({ id: 'Webhook', description: 'docs/api.md, The webhook resource' });
export type WebhookResource = z.infer<typeof WebhookResource>;

/**
 * A webhook in the `included` of GET /webhook_calls: without its signing secret (the URL, headers
 * and password as the call log shows them, `***` where it hides them).
 */
export const IncludedWebhookResource = WebhookResource.extend({
  attributes: WebhookResource.shape.attributes.omit({ signing_secret: true }),
}).meta({ id: 'IncludedWebhook', description: 'docs/api.md, GET /webhook_calls (included)' });
export type IncludedWebhookResource = z.infer<typeof IncludedWebhookResource>;

/** What PUT /webhooks/:id offers after a re-enable: a replay to POST to /bulk_jobs as it is. */
export const ReplayOffer = z.strictObject({
  kind: z.literal('replay'),
  webhook_id: Id,
  filter: z.strictObject({ occurred_at: z.strictObject({ gt: Instant, lt: Instant }) }),
});

const Ms = z.number().nullable();

export const WebhookStatsResource = z
  .strictObject({
    type: z.literal('webhook_stats'),
    /** The webhook's id. */
    id: Id,
    attributes: z.strictObject({
      window: z.enum(['1h', '24h', '7d', '30d']),
      granularity: z.enum(['minute', 'hour']),
      from: Instant,
      to: Instant,
      attempts: z.strictObject({
        total: z.number().int(),
        success: z.number().int(),
        failure: z.number().int(),
      }),
      calls: z.strictObject({ succeeded: z.number().int(), failed: z.number().int() }),
      success_rate: z.number().nullable(),
      latency_ms: z.strictObject({ p50: Ms, p95: Ms, p99: Ms, mean: Ms }),
      last_success_at: NullableInstant,
      last_failure_at: NullableInstant,
      failure_streak: z.number().int(),
      backlog: z.strictObject({
        pending: z.number().int(),
        rescheduled: z.number().int(),
        oldest_age_seconds: z.number().int().nullable(),
      }),
      circuit: z.strictObject({
        state: z.enum(['closed', 'open', 'half_open']),
        open_until: NullableInstant,
        failures: z.number().int(),
      }),
      /** Per bucket with attempts, oldest first (only GET /webhooks/:id/stats). */
      buckets: z
        .array(
          z.strictObject({
            start: Instant,
            attempts_success: z.number().int(),
            attempts_failure: z.number().int(),
            calls_succeeded: z.number().int(),
            calls_failed: z.number().int(),
            latency_ms_p50: Ms,
          }),
        )
        .optional(),
    }),
    relationships: z.strictObject({ webhook: one('webhook') }),
  })
  .meta({ id: 'WebhookStats', description: 'docs/api.md, GET /webhooks/:id/stats' });
export type WebhookStatsResource = z.infer<typeof WebhookStatsResource>;

export const WebhookPreviewResource = z
  .strictObject({
    type: z.literal('webhook_preview'),
    attributes: z.strictObject({
      url: z.string(),
      headers: Headers,
      body: z.string(),
      event_id: z.string().nullable(),
      sample_event: z.boolean(),
      entity_type: z.string(),
      event_type: z.string(),
      event_ids: z.array(z.string()),
      batch_entries: z.number().int().nullable(),
      // Where the call goes (credentials as `***`); for a broker, `url` says where it is
      // published and `headers` are the message's headers.
      destination: DestinationSchema,
    }),
  })
  .meta({ id: 'WebhookPreview', description: 'docs/api.md, POST /webhooks/preview' });

// Webhook calls (docs/api.md, Webhook calls).

const CallStatus = z.enum(WEBHOOK_CALL_STATUSES);

export const WebhookCallResource = z
  .strictObject({
    type: z.literal('webhook_call'),
    id: Id,
    attributes: z.strictObject({
      entity_type: z.string(),
      event_type: z.string(),
      created_at: Instant,
      request_url: z.string().nullable(),
      request_headers: Headers.nullable(),
      request_payload: z.string().nullable(),
      response_status: z.number().int().nullable(),
      response_headers: Headers.nullable(),
      response_payload: z.string().nullable(),
      attempted_auto_retries_count: z.number().int(),
      last_sent_at: NullableInstant,
      next_retry_at: NullableInstant,
      status: CallStatus,
      failure_reason: z.string().nullable(),
      event_id: z.string(),
      /** Every event the call carries, in the order they reached it. */
      event_ids: z.array(z.string()),
    }),
    relationships: z.strictObject({ webhook: one('webhook') }),
  })
  .meta({ id: 'WebhookCall', description: 'docs/api.md, The webhook call resource' });
export type WebhookCallResource = z.infer<typeof WebhookCallResource>;

export const WebhookCallAttemptResource = z
  .strictObject({
    type: z.literal('webhook_call_attempt'),
    /** `<call id>-<number>`. */
    id: Id,
    attributes: z.strictObject({
      number: z.number().int(),
      trigger: z.enum(ATTEMPT_TRIGGERS),
      /** The call's status this attempt left it in. */
      outcome: z.enum(['success', 'failed', 'rescheduled']),
      started_at: Instant,
      duration_ms: z.number().nullable(),
      request_url: z.string(),
      request_headers: Headers,
      request_payload: z.string().nullable(),
      response_status: z.number().int().nullable(),
      response_headers: Headers.nullable(),
      response_payload: z.string().nullable(),
      failure_reason: z.string().nullable(),
    }),
    relationships: z.strictObject({ webhook_call: one('webhook_call') }),
  })
  .meta({ id: 'WebhookCallAttempt', description: 'docs/api.md, GET /webhook_calls/:id/attempts' });
export type WebhookCallAttemptResource = z.infer<typeof WebhookCallAttemptResource>;

// Bulk jobs (docs/api.md, The bulk job resource).

const InstantRange = z.strictObject({ gt: Instant.optional(), lt: Instant.optional() });

export const BulkJobResource = z
  .strictObject({
    type: z.literal('bulk_job'),
    id: Id,
    attributes: z.strictObject({
      kind: z.enum(['bulk_resend', 'replay']),
      state: z.enum(['queued', 'running', 'completed', 'cancelled', 'failed']),
      /** The selection as given, instants as UTC. */
      filter: z.union([
        z.strictObject({
          webhook_id: Id.optional(),
          status: CallStatus.optional(),
          created_at: InstantRange.optional(),
          entity_type: z.string().optional(),
          event_type: z.string().optional(),
          entity_id: z.string().optional(),
        }),
        z.strictObject({ occurred_at: InstantRange.optional() }),
      ]),
      rate_per_second: z.number().nullable(),
      matched: z.number().int().nullable(),
      done: z.number().int(),
      succeeded: z.number().int(),
      failed: z.number().int(),
      skipped: z.number().int(),
      progress: z.number().min(0).max(1).nullable(),
      rate: z.number().nullable(),
      failure_reason: z.string().nullable(),
      created_at: Instant,
      started_at: NullableInstant,
      finished_at: NullableInstant,
      updated_at: Instant,
    }),
    relationships: z.strictObject({
      webhook: z.strictObject({ data: ref('webhook').nullable() }),
    }),
  })
  .meta({ id: 'BulkJob', description: 'docs/api.md, The bulk job resource' });
export type BulkJobResource = z.infer<typeof BulkJobResource>;

// Events (docs/api.md, Events).

/** POST /events: one entry per event, in request order. */
export const EventsAccepted = z
  .strictObject({
    data: z.array(
      z.strictObject({
        type: z.literal('event'),
        id: Id,
        attributes: z.strictObject({ status: z.enum(['accepted', 'duplicate']) }),
      }),
    ),
    /** The commit's read-after token (read-after.ts), also in the X-Herald-Read-After header. */
    meta: z.strictObject({ read_after: z.string() }).optional(),
  })
  .meta({ id: 'EventsAccepted', description: 'docs/api.md, POST /events' });
export type EventsAccepted = z.infer<typeof EventsAccepted>;

const loggedEventAttributes = {
  environment: z.string(),
  entity_type: z.string(),
  event_type: z.string(),
  entity_id: z.string().nullable(),
  item_type_id: z.string().nullable(),
  item_type_api_key: z.string().nullable(),
  occurred_at: Instant,
  accepted_at: Instant,
  /** null: stored, not matched against the webhooks yet. */
  matched_at: NullableInstant,
};

/** A stored event as GET /events lists it, without its entity bodies. */
export const LoggedEventResource = z
  .strictObject({
    type: z.literal('event'),
    /** The producer's id. */
    id: Id,
    attributes: z.strictObject(loggedEventAttributes),
  })
  .meta({ id: 'Event', description: 'docs/api.md, The event resource (GET /events)' });
export type LoggedEventResource = z.infer<typeof LoggedEventResource>;

/** A stored event as GET /events/:id gives it: with its bodies and its webhook calls. */
export const EventResource = z
  .strictObject({
    type: z.literal('event'),
    id: Id,
    attributes: z.strictObject({
      ...loggedEventAttributes,
      /** As the producer sent them. */
      entity: z.unknown(),
      previous_entity: z.unknown(),
      related_entities: z.array(z.unknown()),
    }),
    relationships: z.strictObject({
      webhook_calls: z.strictObject({ data: z.array(ref('webhook_call')) }),
    }),
  })
  .meta({ id: 'EventWithBodies', description: 'docs/api.md, GET /events/:id' });
export type EventResource = z.infer<typeof EventResource>;

/** A webhook call as GET /events/:id includes it: where it stands, without request and answer. */
export const EventCallResource = z
  .strictObject({
    type: z.literal('webhook_call'),
    id: Id,
    attributes: z.strictObject({
      status: CallStatus,
      created_at: Instant,
      attempts_count: z.number().int(),
      attempted_auto_retries_count: z.number().int(),
      last_sent_at: NullableInstant,
      next_retry_at: NullableInstant,
      response_status: z.number().int().nullable(),
      failure_reason: z.string().nullable(),
    }),
    relationships: z.strictObject({ webhook: one('webhook') }),
  })
  .meta({ id: 'EventCall', description: 'docs/api.md, GET /events/:id (included)' });
export type EventCallResource = z.infer<typeof EventCallResource>;

// Access tokens and roles (docs/api.md, Access tokens), DatoCMS's shapes.

export const AccessTokenResource = z
  .strictObject({
    type: z.literal('access_token'),
    id: Id,
    attributes: z.strictObject({
      name: z.string(),
      /** The token itself: only in the answers of creation and regeneration (a hash is kept). */
      token: z.string().nullable(),
      // A union, not .nullable(): the generator writes a nullable literal's enum without null.
      hardcoded_type: z.union([z.literal('bootstrap'), z.null()]),
      can_access_cma: z.literal(true),
      can_access_cda: z.literal(false),
      can_access_cda_preview: z.literal(false),
      /** DatoCMS's coarse "when", in UTC. */
      last_cma_access: z.enum([
        'today',
        'yesterday',
        'this_week',
        'last_week',
        'this_month',
        'last_month',
        'never',
      ]),
      last_cda_access: z.literal('never'),
      token_hint: z.string(),
      last_used_at: NullableInstant,
      created_at: Instant,
      updated_at: Instant,
    }),
    relationships: z.strictObject({
      role: z.strictObject({
        data: z.strictObject({ type: z.literal('role'), id: z.enum(ROLES) }),
      }),
    }),
  })
  .meta({ id: 'AccessToken', description: 'docs/api.md, The access token resource' });
export type AccessTokenResource = z.infer<typeof AccessTokenResource>;

export const RoleResource = z
  .strictObject({
    type: z.literal('role'),
    /** Its name: admin, read_only, producer. */
    id: z.enum(ROLES),
    attributes: z.strictObject({
      name: z.enum(ROLES),
      can_manage_webhooks: z.boolean(),
      can_manage_access_tokens: z.boolean(),
      description: z.string(),
    }),
    relationships: z.strictObject({
      inherits_permissions_from: z.strictObject({ data: z.array(ref('role')).max(0) }),
    }),
  })
  .meta({ id: 'Role', description: 'docs/api.md, The role resource' });
export type RoleResource = z.infer<typeof RoleResource>;

// Records (docs/api.md, GET /items).

const ItemMetaResource = z.strictObject({
  created_at: Instant,
  updated_at: Instant,
  published_at: NullableInstant,
  first_published_at: NullableInstant,
  publication_scheduled_at: NullableInstant,
  unpublishing_scheduled_at: NullableInstant,
  status: z.enum(RECORD_STATUSES),
  is_valid: z.boolean(),
  is_current_version_valid: z.boolean(),
  is_published_version_valid: z.boolean(),
  current_version: z.string().nullable(),
  stage: z.string().nullable(),
  has_children: z.boolean().nullable(),
});

export const ItemResource = z
  .strictObject({
    type: z.literal('item'),
    id: Id,
    /** The version's field values as the producer sent them (blocks expanded with nested=true). */
    attributes: z.record(z.string(), z.unknown()),
    relationships: z.strictObject({
      item_type: one('item_type'),
      creator: z
        .strictObject({ data: z.strictObject({ type: z.string(), id: Id }).nullable() })
        .optional(),
    }),
    meta: ItemMetaResource,
  })
  .meta({ id: 'Item', description: 'docs/api.md, GET /items (the item resource)' });
export type ItemResource = z.infer<typeof ItemResource>;

/** A block expanded by `nested=true`: no meta. */
export type BlockResource = Omit<ItemResource, 'meta' | 'relationships'> & {
  relationships: Pick<ItemResource['relationships'], 'item_type'>;
};

/** A list answer: `data`, and `meta.total_count` when paginated. */
export const totalCount = z.strictObject({ total_count: z.number().int().min(0) });
