import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventInput, ItemEntity } from '@herald/contract';
import { parseItemEventFast, validateEventsBody } from './validate-events.js';

/** Values that are sometimes right for a slot and often wrong, to probe both sides. */
const anyScalar = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 5 }),
  fc.constantFrom('', 'a'.repeat(65), 'a'.repeat(129), 'ok-id_1', 'x:y.z', 'sp ace'),
  fc.constantFrom('2026-01-02T03:04:05Z', '2026-01-02T03:04:05.123+02:00', '2026-01-02', 'now'),
  fc.constantFrom('draft', 'published', 'weird'),
  fc.constant([]),
  fc.constant({}),
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
const slot = <T>(good: fc.Arbitrary<T>) => fc.oneof({ arbitrary: good, weight: 15 }, anyScalar);
/** A key that is mostly absent (an unknown key makes zod strip or keep it). */
const rare = fc.oneof({ arbitrary: fc.constant(undefined), weight: 8 }, anyScalar);
const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** An entry of POST /events: event `id`, `eventType` of `entity`, at a fixed time. */
const eventOf = <E>(id: string, entityType: string, eventType: string, entity: E) => ({
  type: 'event',
  id,
  attributes: {
    entity_type: entityType,
    event_type: eventType,
    occurred_at: '2026-01-02T03:04:05Z',
    entity,
  },
});

const ref = (type: string) =>
  fc.record({ type: slot(fc.constant(type)), id: slot(fc.constantFrom('post', 'u1')) });
const itemEntity = fc
  .record({
    type: slot(fc.constant('item')),
    id: slot(fc.constantFrom('rec-1', 'R_2')),
    attributes: maybe(slot(fc.dictionary(fc.string({ maxLength: 4 }), anyScalar))),
    relationships: maybe(
      slot(
        fc
          .record({
            item_type: slot(fc.record({ data: slot(ref('item_type')) })),
            creator: maybe(slot(fc.record({ data: fc.oneof(fc.constant(null), ref('user')) }))),
            extra: rare,
          })
          .map(defined),
      ),
    ),
    meta: maybe(
      slot(
        fc
          .record({
            created_at: maybe(anyScalar),
            updated_at: maybe(anyScalar),
            status: maybe(anyScalar),
            is_valid: maybe(anyScalar),
            current_version: maybe(anyScalar),
            position: maybe(anyScalar),
            stage: maybe(anyScalar),
            other: rare,
          })
          .map(defined),
      ),
    ),
    other: rare,
  })
  .map(defined);
const event = fc
  .record({
    type: slot(fc.constant('event')),
    id: maybe(slot(fc.constantFrom('ev-1', 'ev:2.3'))),
    attributes: slot(
      fc
        .record({
          entity_type: slot(fc.constantFrom('item', 'upload')),
          event_type: slot(fc.constantFrom('create', 'update', 'publish', 'delete', 'change')),
          environment: maybe(slot(fc.constantFrom('main', 'sandbox-1'))),
          occurred_at: maybe(slot(fc.constant('2026-01-02T03:04:05Z'))),
          entity: slot(itemEntity),
          previous_entity: maybe(fc.oneof(fc.constant(null), itemEntity)),
          related_entities: maybe(
            fc.oneof(fc.constant([]), fc.array(itemEntity, { maxLength: 1 })),
          ),
          unknown: rare,
        })
        .map(defined),
    ),
    unknown: rare,
  })
  .map(defined);

describe('parseItemEventFast', () => {
  it('accepts only what EventInput and ItemEntity accept, and gives what they give', () => {
    let fast = 0;
    fc.assert(
      fc.property(event, (raw) => {
        const input = JSON.parse(JSON.stringify(raw)) as unknown;
        const parsed = parseItemEventFast(input);
        if (!parsed) return;
        fast++;
        const zod = EventInput.safeParse(input);
        expect(zod.success).toBe(true);
        expect(parsed).toEqual(zod.data);
        const item = ItemEntity.safeParse(parsed.attributes.entity);
        expect(item.success).toBe(true);
        expect(item.data?.relationships).toBeDefined();
      }),
      { numRuns: 6000 },
    );
    // The generator reaches the fast path often enough for the property to mean something.
    expect(fast).toBeGreaterThan(40);
  });

  it("refuses Herald's own notices from a producer", () => {
    const notice = eventOf('ev-notice', 'notice', 'failing', {
      type: 'notice',
      id: 'n-1',
      attributes: { webhook_id: '1' },
    });
    expect(() => validateEventsBody({ data: [notice] })).toThrow(/expected one of "item/);
  });

  it('gives validateEventsBody the same events as zod does', () => {
    const raw = eventOf('ev-1', 'item', 'create', {
      type: 'item',
      id: 'rec-1',
      attributes: { title: 'Hello' },
      relationships: {
        item_type: { data: { type: 'item_type', id: 'post' } },
        creator: { data: { type: 'user', id: 'u1' } },
      },
      meta: { created_at: '2026-01-02T03:04:05Z', status: 'draft', custom: 1 },
    });
    expect(parseItemEventFast(raw)).toBeDefined();
    const [event] = validateEventsBody({ data: [raw] });
    const zod = EventInput.parse(raw);
    expect(event).toEqual({
      ...zod,
      index: 0,
      entityJson: JSON.stringify(zod.attributes.entity),
      kind: 'item',
      item: ItemEntity.parse(raw.attributes.entity),
    });
  });
});
