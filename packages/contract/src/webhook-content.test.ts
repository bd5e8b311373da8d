import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileContentFilter,
  contentFilterHolds,
  describeChanges,
  describeItemEvent,
  jsonEqual,
} from './webhook-content.js';
import type { WebhookEventEntry } from './webhooks.js';

const FIELDS = [
  { apiKey: 'title', fieldType: 'string', localized: true },
  { apiKey: 'views', fieldType: 'integer', localized: false },
  { apiKey: 'body', fieldType: 'single_block', localized: false },
];

function holds(
  narrowing: Partial<WebhookEventEntry>,
  versions: { previous?: Record<string, unknown> | null; next: Record<string, unknown> },
  status: string | null = 'draft',
): boolean {
  const filter = compileContentFilter({
    entity_type: 'item',
    event_types: ['update'],
    ...narrowing,
  });
  const content = describeItemEvent(
    {
      entity: { attributes: versions.next },
      previousEntity: null,
      previousAttributes: versions.previous === undefined ? {} : versions.previous,
      recordStatus: status,
    },
    FIELDS,
  );
  return filter === null || contentFilterHolds(filter, content);
}

describe('describeChanges', () => {
  it('names each field that differs, by locale when localized, ignoring key order', () => {
    const changes = describeChanges(
      { title: { en: 'a', it: 'b' }, views: 1, seo: { a: 1, b: 2 }, gone: 1 },
      { title: { en: 'a', it: 'c', fr: 'd' }, views: 1, seo: { b: 2, a: 1 }, added: null },
      (key) => key === 'title',
    );
    expect(Object.fromEntries([...changes].map(([k, v]) => [k, v && [...v].sort()]))).toEqual({
      title: ['fr', 'it'],
      gone: null,
      added: null,
    });
  });

  it('finds exactly the keys whose values are not JSON-equal, for any two versions', () => {
    const value = fc.jsonValue({ maxDepth: 2 });
    const version = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), value);
    fc.assert(
      fc.property(version, version, (before, after) => {
        const changed = [...describeChanges(before, after, () => false).keys()].sort();
        const expected = [...new Set([...Object.keys(before), ...Object.keys(after)])]
          .filter(
            (k) =>
              Object.hasOwn(before, k) !== Object.hasOwn(after, k) ||
              JSON.stringify(before[k]) !== JSON.stringify(after[k]),
          )
          .sort();
        expect(changed).toEqual(expected);
      }),
    );
  });

  it('jsonEqual is an equivalence that ignores object key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const reordered = JSON.parse(JSON.stringify(v), (_k, x: unknown) =>
          x && typeof x === 'object' && !Array.isArray(x)
            ? Object.fromEntries(Object.entries(x).reverse())
            : x,
        ) as unknown;
        expect(jsonEqual(v, reordered)).toBe(true);
      }),
    );
  });
});

describe('contentFilterHolds', () => {
  const v1 = { title: { en: 'Hello', it: 'Ciao' }, views: 5 };

  it('an entry without content keys has no filter', () => {
    expect(compileContentFilter({ entity_type: 'item', event_types: ['update'] })).toBeNull();
    expect(
      compileContentFilter({ entity_type: 'item', event_types: ['update'], changed_fields: null }),
    ).toBeNull();
  });

  it('changed_fields: one of them changed', () => {
    const next = { ...v1, views: 6 };
    expect(holds({ changed_fields: ['views'] }, { previous: v1, next })).toBe(true);
    expect(holds({ changed_fields: ['title'] }, { previous: v1, next })).toBe(false);
    expect(holds({ changed_fields: ['title', 'views'] }, { previous: v1, next })).toBe(true);
    // Unknown previous version: nothing is known to have changed.
    expect(holds({ changed_fields: ['views'] }, { previous: null, next })).toBe(false);
  });

  it('locales: a localized field changed in one of them; with changed_fields, that field', () => {
    const next = { title: { en: 'Hello', it: 'Salve' }, views: 6 };
    expect(holds({ locales: ['it'] }, { previous: v1, next })).toBe(true);
    expect(holds({ locales: ['en'] }, { previous: v1, next })).toBe(false);
    expect(holds({ changed_fields: ['title'], locales: ['en'] }, { previous: v1, next })).toBe(
      false,
    );
    // A field that is not localized counts when named.
    expect(holds({ changed_fields: ['views'], locales: ['en'] }, { previous: v1, next })).toBe(
      true,
    );
  });

  it('record_status: the status after the event', () => {
    expect(holds({ record_status: ['published'] }, { next: v1 }, 'published')).toBe(true);
    expect(holds({ record_status: ['published'] }, { next: v1 }, 'updated')).toBe(false);
    expect(holds({ record_status: ['published'] }, { next: v1 }, null)).toBe(false);
  });

  it('fields: GET /items operators on the field type, in some locale of a localized field', () => {
    expect(holds({ fields: { views: { gt: 4 } } }, { next: v1 })).toBe(true);
    expect(holds({ fields: { views: { gt: '5' } } }, { next: v1 })).toBe(false);
    expect(holds({ fields: { views: { gt: 4, lt: 5 } } }, { next: v1 })).toBe(false);
    expect(holds({ fields: { title: { eq: 'Ciao' } } }, { next: v1 })).toBe(true);
    expect(holds({ fields: { title: { eq: 'Ciao' } }, locales: ['en'] }, { next: v1 })).toBe(false);
    expect(holds({ fields: { title: { matches: '^hel' } } }, { next: v1 })).toBe(true);
    // An operator the field type does not take, an operand not of its type, an unknown field.
    expect(holds({ fields: { views: { matches: '5' } } }, { next: v1 })).toBe(false);
    expect(holds({ fields: { views: { eq: 'five' } } }, { next: v1 })).toBe(false);
    expect(holds({ fields: { colour: { exists: false } } }, { next: v1 })).toBe(false);
    // A missing value: neq holds, exists false holds.
    expect(holds({ fields: { views: { neq: 1, exists: false } } }, { next: {} })).toBe(true);
  });

  it('compares expanded blocks with the stored version by id', () => {
    const stored = { body: 'block-1' };
    const block = { type: 'item', id: 'block-1', attributes: { text: 'x' } };
    expect(holds({ changed_fields: ['body'] }, { previous: stored, next: { body: block } })).toBe(
      false,
    );
    expect(
      holds(
        { changed_fields: ['body'] },
        { previous: stored, next: { body: { ...block, id: 'b2' } } },
      ),
    ).toBe(true);
  });
});
