import { describe, expect, it } from 'vitest';
import type { LoggedEventResource } from '@herald/contract/tables';
import { flowAttributes, flowForm, flowProblems, previewEventIds } from './flow-control.js';

const event = (id: string, entityType: string, entityId: string): LoggedEventResource => ({
  type: 'event',
  id,
  attributes: {
    environment: 'main',
    entity_type: entityType,
    event_type: 'update',
    entity_id: entityId,
    item_type_id: null,
    item_type_api_key: null,
    occurred_at: '2026-11-24T09:00:00Z',
    accepted_at: '2026-11-24T09:00:00Z',
    matched_at: null,
  },
});

describe('flow control form', () => {
  it('round-trips the three attributes, a batch with both keys', () => {
    const attributes = {
      delivery_order: 'per_entity',
      coalesce: true,
      batch: { window_ms: 2500, max_events: 20 },
    };
    expect(flowAttributes(flowForm(attributes))).toEqual(attributes);
    expect(flowAttributes(flowForm(undefined))).toEqual({
      delivery_order: 'any',
      coalesce: false,
      batch: null,
    });
  });

  it('keeps the batch as typed while it is off, and sends max_events only when given', () => {
    const form = { ...flowForm({ batch: null }), batch: true, windowMs: ' 750 ' };
    expect(flowAttributes(form).batch).toEqual({ window_ms: 750 });
    expect(flowAttributes({ ...form, batch: false }).batch).toBeNull();
    // Text that is no number goes as typed: the server names the field.
    expect(flowAttributes({ ...form, windowMs: 'soon' }).batch).toEqual({ window_ms: 'soon' });
  });

  it('checks the documented ranges of a batch that is on', () => {
    const on = { ...flowForm(undefined), batch: true };
    expect(flowProblems({ ...on, windowMs: '10', maxEvents: '' })).toEqual([]);
    expect(flowProblems({ ...on, windowMs: '600000', maxEvents: '1000' })).toEqual([]);
    expect(flowProblems({ ...on, windowMs: '9', maxEvents: '1001' }).map((p) => p.field)).toEqual([
      'batch.window_ms',
      'batch.max_events',
    ]);
    expect(flowProblems({ ...on, windowMs: '' })).toHaveLength(1);
    expect(flowProblems({ ...on, windowMs: '100.5' })).toHaveLength(1);
    expect(flowProblems({ ...on, batch: false, windowMs: 'x' })).toEqual([]);
  });

  it("previews a batch of the latest events, or the latest events of the newest entity's", () => {
    const events = [
      event('e6', 'build_trigger', 'b1'),
      event('e5', 'item', 'rec-1'),
      event('e4', 'upload', 'rec-1'),
      event('e3', 'item', 'rec-2'),
      event('e2', 'item', 'rec-1'),
      event('e1', 'item', 'rec-1'),
    ];
    const form = flowForm(undefined);
    expect(previewEventIds(form, events)).toEqual([]);
    // Coalescing: the newest coalesced event's entity (same type and id).
    expect(previewEventIds({ ...form, coalesce: true }, events)).toEqual(['e5', 'e2', 'e1']);
    expect(previewEventIds({ ...form, coalesce: true }, events.slice(0, 1))).toEqual([]);
    // A batch: the latest events, no more than it holds (nor than the preview shows).
    const batch = { ...form, batch: true };
    expect(previewEventIds(batch, events)).toEqual(['e6', 'e5', 'e4', 'e3', 'e2']);
    expect(previewEventIds({ ...batch, maxEvents: '2' }, events)).toEqual(['e6', 'e5']);
    expect(previewEventIds(batch, [])).toEqual([]);
  });
});
