import type { ItemVersion, ModelInfo } from '@herald/contract';
import {
  buildSearchTexts,
  textSearchConfig,
  type RecordText,
  type RecordWrite,
  type TextBlock,
} from '@herald/store';

/** What a record's documents are built against. */
export interface SearchContext {
  /** The environment's locales: one document per locale, empty when it has no text. */
  locales: readonly string[];
  /** The environment's models, for the record's and its blocks' fields. */
  models: ReadonlyMap<string, ModelInfo>;
  /** The record's blocks by id, whose text is the record's too. */
  blocks: ReadonlyMap<string, TextBlock>;
}

/**
 * The full-text documents a record write leaves: one per locale (empty ones included) for the
 * current version, and for the published one too when it publishes.
 */
export function searchRows(write: RecordWrite, context: SearchContext): RecordText[] {
  const versions: ItemVersion[] = write.mode === 'publish' ? ['current', 'published'] : ['current'];
  const byLocale = buildSearchTexts({
    itemTypeId: write.itemTypeId,
    attributes: write.attributes,
    locales: context.locales,
    models: context.models,
    blocks: context.blocks,
  });
  const rows: RecordText[] = [];
  for (const [locale, text] of byLocale) {
    for (const version of versions) {
      rows.push({
        environment: write.environment,
        recordId: write.id,
        itemTypeId: write.itemTypeId,
        version,
        locale,
        config: textSearchConfig(locale),
        text,
      });
    }
  }
  return rows;
}
