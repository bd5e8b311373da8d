import {
  BATCH_LIMITS,
  COALESCED_ENTITY_TYPES,
  type DeliveryOrder,
  type LoggedEventResource,
  type WebhookBatch,
} from '@herald/contract/tables';
import { isInRange } from './delivery-policy.js';
import type { FieldProblem } from './errors.js';

/**
 * The webhook form's flow control (docs/api.md, Flow control): `delivery_order`, `coalesce` and
 * `batch`, the batch's numbers as typed. The ranges mirror the server's, so a mistake is said as
 * it is typed; the server still validates.
 */
export interface FlowForm {
  deliveryOrder: string;
  coalesce: boolean;
  /** Whether the webhook batches; the window and size are kept while it is off. */
  batch: boolean;
  windowMs: string;
  /** Empty: the server's default (100). */
  maxEvents: string;
}

/** The orders, with what each means in a word. */
export const DELIVERY_ORDER_LABELS: Record<DeliveryOrder, string> = {
  any: 'As they come (any)',
  per_entity: 'One entity at a time, in event order (per_entity)',
};

/** The window a batch toggled on starts with. */
const DEFAULT_WINDOW_MS = '1000';

export function flowForm(
  attributes:
    { delivery_order?: string; coalesce?: boolean; batch?: WebhookBatch | null } | undefined,
): FlowForm {
  const batch = attributes?.batch ?? null;
  return {
    deliveryOrder: attributes?.delivery_order ?? 'any',
    coalesce: attributes?.coalesce ?? false,
    batch: batch !== null,
    windowMs: batch ? String(batch.window_ms) : DEFAULT_WINDOW_MS,
    maxEvents: batch ? String(batch.max_events) : '',
  };
}

/** A typed number as sent: the number when it is one, else the text (the server names it). */
const typedNumber = (text: string): number | string | null => {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : trimmed;
};

/** The three attributes, as a create, an update or a preview sends them. */
export function flowAttributes(form: FlowForm): {
  delivery_order: string;
  coalesce: boolean;
  batch: { window_ms: number | string | null; max_events?: number | string } | null;
} {
  const maxEvents = typedNumber(form.maxEvents);
  return {
    delivery_order: form.deliveryOrder,
    coalesce: form.coalesce,
    batch: form.batch
      ? {
          window_ms: typedNumber(form.windowMs),
          ...(maxEvents !== null && { max_events: maxEvents }),
        }
      : null,
  };
}

/** What is wrong with the typed batch, by field path (`batch.window_ms`). */
export function flowProblems(form: FlowForm): FieldProblem[] {
  if (!form.batch) return [];
  const problems: FieldProblem[] = [];
  const { window_ms: window, max_events: size } = BATCH_LIMITS;
  if (!isInRange(form.windowMs, { ...window, integer: true })) {
    problems.push({
      field: 'batch.window_ms',
      code: 'VALIDATION_FORMAT',
      message: `Must be a whole number of milliseconds from ${window.min} to ${window.max}.`,
    });
  }
  if (form.maxEvents.trim() !== '' && !isInRange(form.maxEvents, { ...size, integer: true })) {
    problems.push({
      field: 'batch.max_events',
      code: 'VALIDATION_FORMAT',
      message: `Must be a whole number from ${size.min} to ${size.max}, or empty for ${size.default}.`,
    });
  }
  return problems;
}

/** How many recent events the preview of a coalesced or batched call carries at most. */
export const PREVIEW_FLOW_EVENTS = 5;

/**
 * The events (newest first, as GET /events lists them) that the live preview renders as one
 * call (POST /webhooks/preview `event_ids`): with a batch, the most recent ones, no more than
 * the batch holds; coalescing alone, the most recent events of the newest coalesced event's
 * entity. Empty when there are none: the preview uses its sample event.
 */
export function previewEventIds(form: FlowForm, events: readonly LoggedEventResource[]): string[] {
  if (form.batch) {
    const size = Number(form.maxEvents.trim() || BATCH_LIMITS.max_events.default);
    const limit = Number.isInteger(size) && size >= 1 ? size : 1;
    return events.slice(0, Math.min(limit, PREVIEW_FLOW_EVENTS)).map((event) => event.id);
  }
  if (!form.coalesce) return [];
  const coalesced = (event: LoggedEventResource) =>
    (COALESCED_ENTITY_TYPES as readonly string[]).includes(event.attributes.entity_type);
  const newest = events.find(coalesced);
  if (!newest) return [];
  const { entity_type: type, entity_id: id } = newest.attributes;
  return events
    .filter((event) => event.attributes.entity_type === type && event.attributes.entity_id === id)
    .slice(0, PREVIEW_FLOW_EVENTS)
    .map((event) => event.id);
}
