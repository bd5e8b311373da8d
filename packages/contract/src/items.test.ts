import { describe, expect, it } from 'vitest';
import { serializeItem, type ModelInfo, type StoredItem } from './items.js';
import { eventJobId } from './events.js';

const at = new Date('2026-04-21T07:57:11.124Z');
const stored = (over: Partial<StoredItem>): StoredItem => ({
  id: 'r1',
  itemTypeId: 'post',
  isBlock: false,
  rootId: null,
  parentId: null,
  position: null,
  status: 'updated',
  currentAttributes: { title: 'new', content: ['b1'], story: null, hero: 'b2' },
  publishedAttributes: { title: 'old', content: [], story: null, hero: null },
  creator: { type: 'access_token', id: '322' },
  createdAt: at,
  updatedAt: at,
  publishedAt: at,
  firstPublishedAt: at,
  publicationScheduledAt: null,
  unpublishingScheduledAt: null,
  isValid: true,
  isCurrentVersionValid: true,
  isPublishedVersionValid: true,
  currentVersion: '4234',
  stage: null,
  ...over,
});

/** A model whose id and api_key are `id`, neither sortable nor a tree. */
const model = (
  id: string,
  kind: Pick<ModelInfo, 'modularBlock' | 'draftModeActive'>,
  fields: ModelInfo['fields'],
): [string, ModelInfo] => [id, { id, apiKey: id, sortable: false, tree: false, ...kind, fields }];

const models = new Map<string, ModelInfo>([
  model('post', { modularBlock: false, draftModeActive: true }, [
    { apiKey: 'title', fieldType: 'string', localized: false },
    { apiKey: 'content', fieldType: 'rich_text', localized: false },
    { apiKey: 'hero', fieldType: 'single_block', localized: true },
  ]),
  model('section', { modularBlock: true, draftModeActive: false }, [
    { apiKey: 'heading', fieldType: 'string', localized: false },
    { apiKey: 'story', fieldType: 'structured_text', localized: false },
  ]),
]);

describe('serializeItem', () => {
  it('renders the item resource (docs/api.md, GET /items) for the asked version', () => {
    const item = stored({});
    expect(serializeItem(item, { version: 'current' })).toEqual({
      type: 'item',
      id: 'r1',
      attributes: { title: 'new', content: ['b1'], story: null, hero: 'b2' },
      relationships: {
        item_type: { data: { type: 'item_type', id: 'post' } },
        creator: { data: { type: 'access_token', id: '322' } },
      },
      meta: {
        created_at: '2026-04-21T07:57:11.124Z',
        updated_at: '2026-04-21T07:57:11.124Z',
        published_at: '2026-04-21T07:57:11.124Z',
        first_published_at: '2026-04-21T07:57:11.124Z',
        publication_scheduled_at: null,
        unpublishing_scheduled_at: null,
        status: 'updated',
        is_valid: true,
        is_current_version_valid: true,
        is_published_version_valid: true,
        current_version: '4234',
        stage: null,
        has_children: null,
      },
    });
    expect(serializeItem(item, { version: 'published' })?.attributes['title']).toBe('old');
    expect(
      serializeItem(stored({ publishedAttributes: null }), { version: 'published' }),
    ).toBeNull();
  });

  it('expands blocks recursively with nested, in localized and structured text fields', () => {
    const block = (id: string, attributes: Record<string, unknown>): StoredItem =>
      stored({
        id,
        itemTypeId: 'section',
        isBlock: true,
        rootId: 'r1',
        currentAttributes: attributes,
        publishedAttributes: null,
        creator: null,
      });
    const blocks = new Map([
      [
        'b1',
        block('b1', {
          heading: 'one',
          story: {
            schema: 'dast',
            document: { type: 'root', children: [{ type: 'block', item: 'b3' }] },
          },
        }),
      ],
      ['b2', block('b2', { heading: 'two', story: null })],
      ['b3', block('b3', { heading: 'three', story: null })],
    ]);
    const item = stored({
      currentAttributes: { title: 't', content: ['b1'], hero: { en: 'b2', it: null } },
    });
    const nested = serializeItem(item, { version: 'current', nested: true, blocks, models });
    const ref = (id: string) => ({ item_type: { data: { type: 'item_type', id } } });
    expect(nested?.attributes).toEqual({
      title: 't',
      content: [
        {
          type: 'item',
          id: 'b1',
          attributes: {
            heading: 'one',
            story: {
              schema: 'dast',
              document: {
                type: 'root',
                children: [
                  {
                    type: 'block',
                    item: {
                      type: 'item',
                      id: 'b3',
                      attributes: { heading: 'three', story: null },
                      relationships: ref('section'),
                    },
                  },
                ],
              },
            },
          },
          relationships: ref('section'),
        },
      ],
      hero: {
        en: {
          type: 'item',
          id: 'b2',
          attributes: { heading: 'two', story: null },
          relationships: ref('section'),
        },
        it: null,
      },
    });
    // Without nested, ids stay ids.
    expect(
      serializeItem(item, { version: 'current', blocks, models })?.attributes['content'],
    ).toEqual(['b1']);
  });
});

describe('eventJobId', () => {
  it('is the event id where BullMQ accepts it, and one-to-one elsewhere', () => {
    expect(eventJobId('evt-000123')).toBe('evt-000123');
    expect(eventJobId('a:b')).toBe('a%b');
    expect(eventJobId('123')).toBe('#123');
    expect(eventJobId('0123')).toBe('0123');
    const ids = ['a:b', 'a%b', '1', '#1', '1:2', '1%2'];
    expect(
      new Set(ids.filter((id) => !id.includes('%') && !id.includes('#')).map(eventJobId)).size,
    ).toBe(3);
  });
});
