/**
 * The rows Herald writes for a batch of item create events (bench/ingest's `itemEvent` shape), by
 * hand: the event, its record and its search document, in one statement (one round trip, one
 * commit), with no validation. Shared by the in-process baseline and the `node:http` one.
 */

/** An item create event as the benchmark posts it. */
export interface BenchItemEvent {
  id: string;
  attributes: {
    occurred_at: string;
    entity: {
      id: string;
      attributes: { title: string; body: string };
      meta: { created_at: string; updated_at: string };
    };
  };
}

export function sameRowsStatement(
  list: readonly BenchItemEvent[],
  locale: string,
  searchConfig: string,
): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const slots = (values: unknown[]) => {
    const base = params.length;
    params.push(...values);
    return `(${values.map((_, k) => `$${base + k + 1}`).join(', ')})`;
  };
  const events: string[] = [];
  const records: string[] = [];
  const texts: string[] = [];
  for (const event of list) {
    const { entity, occurred_at: occurredAt } = event.attributes;
    events.push(
      slots([
        event.id,
        'main',
        true,
        'item',
        'create',
        entity.id,
        'article',
        occurredAt,
        JSON.stringify(entity),
      ]),
    );
    records.push(
      slots([
        'main',
        entity.id,
        'article',
        JSON.stringify(entity.attributes),
        entity.meta.created_at,
        entity.meta.updated_at,
        event.id,
      ]),
    );
    const text = slots([
      'main',
      entity.id,
      'current',
      locale,
      'article',
      `${entity.attributes.title}\n${entity.attributes.body}`,
    ]);
    texts.push(text.replace(/, (\$\d+)\)$/, `, to_tsvector('${searchConfig}', $1))`));
  }
  return {
    text: `WITH e AS (INSERT INTO events (id, environment, is_environment_primary, entity_type,
         event_type, entity_id, item_type_id, occurred_at, entity)
       VALUES ${events.join(', ')}),
     r AS (INSERT INTO records (environment, id, item_type_id, current_attributes,
         created_at, updated_at, last_event_id)
       VALUES ${records.join(', ')})
     INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
       VALUES ${texts.join(', ')}`,
    params,
  };
}
