import { BLOCK_FIELD_TYPES, mapBlockRefs, type ModelInfo } from '@herald/contract';

/**
 * Text search configuration per locale language. Both the documents (record_texts) and the
 * queries (filter[query]) must use the one this returns. Configurations ship with Postgres and
 * PGlite alike; any other language gets `simple` (no stemming, no stop words).
 */
const CONFIG_BY_LANGUAGE: Readonly<Record<string, string>> = {
  ar: 'arabic',
  ca: 'catalan',
  da: 'danish',
  de: 'german',
  el: 'greek',
  en: 'english',
  es: 'spanish',
  eu: 'basque',
  fi: 'finnish',
  fr: 'french',
  ga: 'irish',
  hi: 'hindi',
  hu: 'hungarian',
  hy: 'armenian',
  id: 'indonesian',
  it: 'italian',
  lt: 'lithuanian',
  nb: 'norwegian',
  ne: 'nepali',
  nl: 'dutch',
  nn: 'norwegian',
  no: 'norwegian',
  pt: 'portuguese',
  ro: 'romanian',
  ru: 'russian',
  sr: 'serbian',
  sv: 'swedish',
  ta: 'tamil',
  tr: 'turkish',
  yi: 'yiddish',
};

export function textSearchConfig(locale: string): string {
  const language = locale.split('-')[0]?.toLowerCase() ?? '';
  return CONFIG_BY_LANGUAGE[language] ?? 'simple';
}

/** Field types whose text goes into the full-text document. */
const TEXT_FIELD_TYPES: ReadonlySet<string> = new Set(['string', 'text', 'structured_text', 'seo']);

/** A block as the text builder needs it: its model and its (current) attributes. */
export interface TextBlock {
  itemTypeId: string;
  attributes: Record<string, unknown>;
}

/**
 * The text of a record in each locale: its text fields and, recursively, its blocks'. A
 * localized field's text (and everything in a localized block field) counts in its own locale;
 * a non-localized field's in every locale.
 */
export function buildSearchTexts(input: {
  itemTypeId: string;
  attributes: Record<string, unknown>;
  locales: readonly string[];
  models: ReadonlyMap<string, ModelInfo>;
  blocks: ReadonlyMap<string, TextBlock>;
}): Map<string, string> {
  const parts = new Map<string, string[]>(input.locales.map((locale) => [locale, []]));
  const add = (locale: string | null, text: string) => {
    if (!text) return;
    if (locale === null) for (const list of parts.values()) list.push(text);
    else parts.get(locale)?.push(text);
  };
  const visit = (
    itemTypeId: string,
    attributes: Record<string, unknown>,
    locale: string | null,
    depth: number,
  ) => {
    const model = input.models.get(itemTypeId);
    if (!model || depth > 32) return;
    for (const field of model.fields) {
      const value = attributes[field.apiKey];
      if (value === undefined || value === null) continue;
      const perLocale: [string | null, unknown][] =
        field.localized && typeof value === 'object' && !Array.isArray(value)
          ? Object.entries(value).map(([l, v]) => [locale ?? l, v])
          : [[locale, value]];
      for (const [valueLocale, v] of perLocale) {
        if (TEXT_FIELD_TYPES.has(field.fieldType))
          add(valueLocale, extractText(field.fieldType, v));
        if (BLOCK_FIELD_TYPES.has(field.fieldType)) {
          mapBlockRefs(field.fieldType, v, (ref) => {
            const id = typeof ref === 'string' ? ref : (ref as { id?: unknown } | null)?.id;
            const block = typeof id === 'string' ? input.blocks.get(id) : undefined;
            if (block) visit(block.itemTypeId, block.attributes, valueLocale, depth + 1);
            return ref;
          });
        }
      }
    }
  };
  visit(input.itemTypeId, input.attributes, null, 0);
  const texts = new Map<string, string>();
  for (const [locale, list] of parts) texts.set(locale, list.join('\n'));
  return texts;
}

function extractText(fieldType: string, value: unknown): string {
  switch (fieldType) {
    case 'string':
    case 'text':
      return typeof value === 'string' ? value : '';
    case 'seo': {
      if (!value || typeof value !== 'object') return '';
      const { title, description } = value as { title?: unknown; description?: unknown };
      return [title, description].filter((v) => typeof v === 'string').join('\n');
    }
    case 'structured_text': {
      const document = (value as { document?: unknown } | null)?.document;
      const out: string[] = [];
      collectDastText(document, out, 0);
      return out.join(' ');
    }
    default:
      return '';
  }
}

function collectDastText(node: unknown, out: string[], depth: number): void {
  if (!node || typeof node !== 'object' || depth > 64) return;
  const { type, value, children } = node as { type?: unknown; value?: unknown; children?: unknown };
  if ((type === 'span' || type === 'code') && typeof value === 'string') out.push(value);
  if (Array.isArray(children)) for (const child of children) collectDastText(child, out, depth + 1);
}
