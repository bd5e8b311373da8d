import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import {
  ApiError,
  BATCH_LIMITS,
  HTTP_DESTINATION,
  SAMPLE_EVENT_ID,
  WebhookPreviewResource,
  type CidrList,
  type ErrorEntry,
  type WebhookBatch,
  isObject,
  redactDestination,
} from '@herald/contract';
import {
  callContent,
  renderDeliveryRequest,
  requestForDestination,
  type CallContent,
} from '@herald/payload';
import { context, requestDocument, requireRole } from '@herald/runtime';
import {
  entityKey,
  findEvent,
  findEvents,
  findWebhook,
  isCoalescable,
  type Db,
  type Environment,
  type StoredEvent,
} from '@herald/store';
import { dataAnswer, webhooksOperation } from '../admin-api.js';
import { validateUpdate, webhookAttributeSchemas } from '../webhooks/attributes.js';

/** What POST /webhooks/preview needs. */
export interface WebhookPreviewDeps {
  db: Db;
  /** CIDRs exempt from the blocked address ranges, as at creation (SSRF_ALLOW_CIDRS). */
  ssrfAllowCidrs: CidrList;
  /** `site_id` of the default payload (SITE_ID), as delivery sends it. */
  siteId: string;
  /** `User-Agent` delivery sends. */
  userAgent: string;
}

/** Attributes of the webhook that shape the request; the same keys as creation requires of them. */
const RENDERED = ['url', 'headers', 'custom_payload', 'http_basic_user'] as const;
const OPTIONAL = [
  'nested_items_in_payload',
  'http_basic_password',
  'redact_headers',
  'payload_changes',
  'delivery_order',
  'coalesce',
  'batch',
  // Where the call goes and how it authenticates: a broker's message, an OAuth2 bearer token.
  'destination',
  'auth',
  'tls',
] as const;
/** Extensions: which event (or events) to render, and which webhook's id the payload names. */
const CHOICES = ['event_id', 'event_ids', 'webhook_id'] as const;
const ALLOWED = new Set<string>([...RENDERED, ...OPTIONAL, ...CHOICES]);

/** `webhook_call_id` and `webhook-id` of a preview: no call exists. */
const PREVIEW_CALL_ID = 'preview';
/** `webhook_id` when the preview names no existing webhook. */
const PREVIEW_WEBHOOK_ID = 'preview';
/** The signature is computed with the webhook's secret at send time; a preview shows no secret. */
const MASKED_SIGNATURE = 'v1,***';
const EVENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const EVENT_ID_RULE = 'an event id: 1–128 characters from A-Z a-z 0-9 _ . : -';
/** At most as many events as the largest batch has entries. */
const MAX_EVENT_IDS = BATCH_LIMITS.max_events.max;

const pick = <K extends string>(keys: readonly K[]) =>
  Object.fromEntries(keys.map((key) => [key, true])) as Record<K, true>;

/** The attributes: the webhook's own, validated as on update, and which events to render. */
const PreviewAttributes = webhookAttributeSchemas.update
  .pick({ ...pick(RENDERED), ...pick(OPTIONAL) })
  .required(pick(RENDERED))
  .extend({
    event_id: z.string().nullable().optional(),
    event_ids: z.array(z.string()).min(1).max(MAX_EVENT_IDS).nullable().optional(),
    webhook_id: z.string().nullable().optional(),
  });

export const previewWebhookOperation = webhooksOperation('post', '/webhooks/preview', {
  summary: 'Render the request delivery would send, without sending it',
  extension: true,
  body: { schema: requestDocument('webhook_preview', PreviewAttributes), required: true },
  responses: {
    200: dataAnswer('The rendered url, headers (secrets masked) and body', WebhookPreviewResource),
  },
  errors: ['INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
});

/**
 * POST /webhooks/preview (docs/api.md, extension): renders the url, headers (secrets masked) and
 * body that delivery would send for the given settings (for a broker destination, the message and
 * where it is published; with OAuth2, the bearer token's place), for a stored event or a sample one, or
 * (flow control) the stored events one coalesced or batched call carries, with delivery's own code
 * (callContent, renderDeliveryRequest). Validation is creation's. Nothing is sent.
 */
export function webhookPreviewRouter(deps: WebhookPreviewDeps): Router {
  const router = Router();
  router.post('/webhooks/preview', requireRole(), previewWebhook(deps));
  return router;
}

function previewWebhook(deps: WebhookPreviewDeps): RequestHandler {
  return async (req, res) => {
    const attributes = readActionDocument(req.body, 'webhook_preview');
    const problems: ErrorEntry[] = [];
    for (const key of Object.keys(attributes)) {
      if (ALLOWED.has(key)) continue;
      problems.push({
        code: 'INVALID_ATTRIBUTES',
        details: {
          field: key,
          message: `Unknown attribute "${key}"; a webhook preview has: ${[...ALLOWED].join(', ')}`,
          extraneous_attributes: [key],
        },
      });
    }
    for (const key of RENDERED) {
      if (!Object.hasOwn(attributes, key)) {
        problems.push(
          ApiError.field(
            key,
            'VALIDATION_REQUIRED',
            `${key} is required (send null if you want none)`,
          ),
        );
      }
    }
    const webhookAttributes = Object.fromEntries(
      Object.entries(attributes).filter(([key]) => !(CHOICES as readonly string[]).includes(key)),
    );
    const validated = validateUpdate(webhookAttributes, { allowCidrs: deps.ssrfAllowCidrs });
    if (!validated.ok) problems.push(...validated.errors);

    const environment = context(res).environment ?? {
      id: 'main',
      locales: ['en'],
      isPrimary: true,
    };
    const events = await chooseCarriedEvents(deps.db, attributes, environment, problems);
    const webhookId = await chooseWebhookId(deps.db, attributes['webhook_id'], problems);
    const settings = validated.ok ? validated.value : undefined;
    const flow = {
      coalesceEvents: settings?.coalesceEvents ?? false,
      batch: settings?.batch ?? null,
    };
    // What the call would carry: the events merged (coalesced), or a batch's entries.
    const content = settings && events ? callContent(flow, events.events) : undefined;
    if (content && events) checkCarried(flow, events.events, content, problems);
    if (problems.length > 0 || !settings || !events || !content) throw ApiError.many(problems);

    const rendered = await renderDeliveryRequest(deps.db, {
      webhook: {
        id: webhookId,
        url: settings.url ?? '',
        headers: settings.headers ?? {},
        customPayload: settings.customPayload ?? null,
        httpBasicUser: settings.httpBasicUser ?? null,
        httpBasicPassword: settings.httpBasicPassword ?? null,
        nestedItemsInPayload: settings.nestedItemsInPayload ?? false,
        redactHeaders: settings.redactHeaders ?? [],
        payloadChanges: settings.payloadChanges ?? false,
      },
      event: content.event,
      entries: content.entries,
      callId: PREVIEW_CALL_ID,
      siteId: deps.siteId,
      userAgent: deps.userAgent,
      attemptedAutoRetriesCount: 0,
      sign: () => MASKED_SIGNATURE,
      now: new Date(),
    });
    const destination = settings.destination ?? HTTP_DESTINATION;
    const sent = requestForDestination(rendered, { destination, auth: settings.auth ?? null });
    res.json({
      data: {
        type: 'webhook_preview',
        attributes: {
          url: sent.logged.url,
          headers: sent.logged.headers,
          body: sent.body,
          event_id: events.sample ? null : content.event.id,
          sample_event: events.sample,
          entity_type: content.event.entityType,
          event_type: content.event.eventType,
          ...carriedAttributes(events, content),
          destination: redactDestination(destination),
        },
      },
    });
  };
}

/** Flow control (extensions): every stored event the call carries, and a batch's entry count. */
function carriedAttributes(
  events: { events: StoredEvent[]; sample: boolean },
  content: CallContent,
) {
  return {
    event_ids: events.sample ? [] : events.events.map((event) => event.id),
    batch_entries: content.entries?.length ?? null,
  };
}

/**
 * `{"data":{"type":"webhook_preview","attributes":{...}}}`, else INVALID_FORMAT
 * (docs/api.md, Documents).
 */
/** The attributes of an action's document, `{"data": {"type": <type>, "attributes": {...}}}`. */
export function readActionDocument(body: unknown, type: string): Record<string, unknown> {
  const fail = (message: string, field: string): never => {
    throw new ApiError('INVALID_FORMAT', { message, field });
  };
  if (!isObject(body)) {
    return fail(`The body must be {"data": {"type": "${type}", "attributes": {...}}}`, 'data');
  }
  const data = body['data'];
  if (!isObject(data)) return fail('"data" must be one resource object', 'data');
  if (data['type'] !== type) {
    fail(`data.type must be "${type}", not ${JSON.stringify(data['type'] ?? null)}`, 'data.type');
  }
  const attributes = data['attributes'];
  if (attributes === undefined) return {};
  if (!isObject(attributes)) return fail('data.attributes must be an object', 'data.attributes');
  return attributes;
}

/** The event an action names by `event_id` (a problem when it names none), or a sample one. */
export async function chooseEvent(
  db: Db,
  given: unknown,
  environment: Environment,
  problems: ErrorEntry[],
): Promise<{ event: StoredEvent; sample: boolean } | undefined> {
  if (given === undefined || given === null)
    return { event: sampleEvent(environment), sample: true };
  if (typeof given !== 'string' || !EVENT_ID.test(given)) {
    problems.push(
      ApiError.field(
        'event_id',
        typeof given === 'string' ? 'VALIDATION_FORMAT' : 'VALIDATION_TYPE',
        `event_id must be ${EVENT_ID_RULE}`,
      ),
    );
    return undefined;
  }
  const event = await findEvent(db, given);
  if (!event) {
    problems.push(
      ApiError.field(
        'event_id',
        'VALIDATION_INCLUSION',
        `No event with id "${given}" was received`,
      ),
    );
    return undefined;
  }
  return { event, sample: false };
}

/**
 * The events the previewed call carries: `event_ids` (flow control: a coalesced call's or a
 * batch's, in the producer's order), else the one `event_id` names, else the sample event.
 */
async function chooseCarriedEvents(
  db: Db,
  attributes: Record<string, unknown>,
  environment: Environment,
  problems: ErrorEntry[],
): Promise<{ events: StoredEvent[]; sample: boolean } | undefined> {
  const ids = attributes['event_ids'];
  if (ids === undefined || ids === null) {
    const chosen = await chooseEvent(db, attributes['event_id'], environment, problems);
    return chosen && { events: [chosen.event], sample: chosen.sample };
  }
  if (attributes['event_id'] !== undefined && attributes['event_id'] !== null) {
    problems.push(
      ApiError.field('event_ids', 'VALIDATION_FORMAT', 'send either event_id or event_ids'),
    );
    return undefined;
  }
  if (!Array.isArray(ids)) {
    problems.push(
      ApiError.field('event_ids', 'VALIDATION_TYPE', 'event_ids must be an array of event ids'),
    );
    return undefined;
  }
  if (ids.length === 0 || ids.length > MAX_EVENT_IDS) {
    problems.push(
      ApiError.field(
        'event_ids',
        'VALIDATION_LENGTH',
        `event_ids must list 1 to ${MAX_EVENT_IDS} event ids (or leave it out for the sample event)`,
      ),
    );
    return undefined;
  }
  const before = problems.length;
  const seen = new Set<string>();
  ids.forEach((id: unknown, index) => {
    const field = `event_ids.${index}`;
    if (typeof id !== 'string' || !EVENT_ID.test(id)) {
      const code = typeof id === 'string' ? 'VALIDATION_FORMAT' : 'VALIDATION_TYPE';
      problems.push(ApiError.field(field, code, `${field} must be ${EVENT_ID_RULE}`));
    } else if (seen.has(id)) {
      problems.push(ApiError.field(field, 'VALIDATION_UNIQUENESS', `"${id}" is listed twice`));
    }
    if (typeof id === 'string') seen.add(id);
  });
  if (problems.length > before) return undefined;
  const events = await findEvents(db, ids as string[]);
  const found = new Set(events.map((event) => event.id));
  (ids as string[]).forEach((id, index) => {
    if (found.has(id)) return;
    problems.push(
      ApiError.field(
        `event_ids.${index}`,
        'VALIDATION_INCLUSION',
        `No event with id "${id}" was received`,
      ),
    );
  });
  return problems.length > before ? undefined : { events, sample: false };
}

/**
 * Whether one call of a webhook with these settings could carry `events` (docs/api.md, Flow
 * control): several only when it batches (at most max_events entries), or coalesces events of
 * one entity whose events are coalesced.
 */
function checkCarried(
  webhook: { coalesceEvents: boolean; batch: WebhookBatch | null },
  events: readonly StoredEvent[],
  content: CallContent,
  problems: ErrorEntry[],
): void {
  if (events.length < 2) return;
  if (webhook.batch) {
    const entries = content.entries?.length ?? 0;
    if (entries > webhook.batch.max_events) {
      problems.push(
        ApiError.field(
          'event_ids',
          'VALIDATION_LENGTH',
          `these events make ${entries} batch entries; a batch holds at most batch.max_events (${webhook.batch.max_events})`,
        ),
      );
    }
    return;
  }
  const oneEntity = new Set(events.map(entityKey)).size === 1 && events.every(isCoalescable);
  if (!webhook.coalesceEvents || !oneEntity) {
    problems.push(
      ApiError.field(
        'event_ids',
        'VALIDATION_FORMAT',
        'without batch, a call carries several events only with coalesce on, all of one entity (item, item_type, upload, environment or maintenance_mode)',
      ),
    );
  }
}

async function chooseWebhookId(db: Db, given: unknown, problems: ErrorEntry[]): Promise<string> {
  if (given === undefined || given === null) return PREVIEW_WEBHOOK_ID;
  if (typeof given !== 'string' || !(await findWebhook(db, given))) {
    problems.push(
      ApiError.field(
        'webhook_id',
        'VALIDATION_INCLUSION',
        'webhook_id must name an existing webhook',
      ),
    );
  }
  return typeof given === 'string' ? given : PREVIEW_WEBHOOK_ID;
}

/** A representative event when none is chosen: a record published in the request's environment. */
function sampleEvent(environment: Environment, now = new Date()): StoredEvent {
  const at = now.toISOString();
  const locale = environment.locales[0] ?? 'en';
  return {
    id: SAMPLE_EVENT_ID,
    seq: '0',
    environment: environment.id,
    isEnvironmentPrimary: environment.isPrimary,
    entityType: 'item',
    eventType: 'publish',
    entityId: 'sample-record-id',
    itemTypeId: 'sample-model-id',
    itemTypeApiKey: 'article',
    occurredAt: now,
    acceptedAt: now,
    matchedAt: null,
    entity: {
      type: 'item',
      id: 'sample-record-id',
      attributes: {
        title: { [locale]: 'Hello from Herald' },
        slug: 'hello-from-herald',
        body: 'A sample record, used to preview a webhook.',
      },
      relationships: {
        item_type: { data: { type: 'item_type', id: 'sample-model-id' } },
        creator: { data: { type: 'access_token', id: '1' } },
      },
      meta: {
        created_at: at,
        updated_at: at,
        published_at: at,
        first_published_at: at,
        publication_scheduled_at: null,
        unpublishing_scheduled_at: null,
        status: 'published',
        is_valid: true,
        is_current_version_valid: true,
        is_published_version_valid: true,
        current_version: '1',
        stage: null,
        has_children: null,
      },
    },
    previousEntity: null,
    // As if Herald had stored an earlier version: `changes` and `changed_fields` show something.
    previousAttributes: {
      title: { [locale]: 'Hello' },
      slug: 'hello',
      body: 'A sample record, used to preview a webhook.',
    },
    recordStatus: 'published',
    relatedEntities: [],
  };
}
