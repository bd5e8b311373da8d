import { describe, expect, it } from 'vitest';
import type { ModelInfo } from '@herald/contract';
import { buildSearchTexts, textSearchConfig } from './search-text.js';

const model = (id: string, fields: [string, string, boolean][]): ModelInfo => ({
  id,
  apiKey: id,
  modularBlock: id === 'block',
  sortable: false,
  tree: false,
  draftModeActive: false,
  fields: fields.map(([apiKey, fieldType, localized]) => ({ apiKey, fieldType, localized })),
});

describe('buildSearchTexts', () => {
  const models = new Map([
    [
      'post',
      model('post', [
        ['title', 'string', false],
        ['body', 'text', true],
        ['blocks', 'rich_text', true],
        ['n', 'integer', false],
      ]),
    ],
    [
      'block',
      model('block', [
        ['caption', 'string', false],
        ['more', 'rich_text', false],
        ['seo', 'seo', false],
      ]),
    ],
  ]);

  it('puts non-localized text in every locale and localized text (with its blocks) in its own', () => {
    const texts = buildSearchTexts({
      itemTypeId: 'post',
      attributes: {
        title: 'Everywhere',
        body: { en: 'English body', it: 'Corpo' },
        blocks: { it: ['b1'] },
        n: 3,
      },
      locales: ['en', 'it'],
      models,
      blocks: new Map([
        ['b1', { itemTypeId: 'block', attributes: { caption: 'Didascalia', more: ['b2'] } }],
        [
          'b2',
          {
            itemTypeId: 'block',
            attributes: { caption: 'Profonda', seo: { title: 'Titolo', description: null } },
          },
        ],
      ]),
    });
    expect(texts.get('en')).toBe('Everywhere\nEnglish body');
    expect(texts.get('it')).toBe('Everywhere\nCorpo\nDidascalia\nProfonda\nTitolo');
  });

  it('maps locales to a shipped text search configuration', () => {
    expect(textSearchConfig('en')).toBe('english');
    expect(textSearchConfig('pt-BR')).toBe('portuguese');
    expect(textSearchConfig('ja')).toBe('simple');
  });
});
