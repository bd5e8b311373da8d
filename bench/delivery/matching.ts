/**
 * Matching one event against 10,000 webhooks in the in-memory index (µs per event): the webhooks
 * as they were before field-aware matching, and the same with a quarter of them narrowing on
 * content (changed_fields, locales, record_status, field conditions), the events then described
 * first (what changed, against their previous version) as the match worker does.
 */
import {
  describeItemEvent,
  type ItemEventVersions,
  type ModelField,
  type WebhookEventEntry,
} from '@herald/contract';
import { WebhookIndex, type MatchableEvent } from '@herald/delivery';
import type { WebhookRecord } from '@herald/store';

const MATCH_WEBHOOKS = 10_000;
const MATCH_EVENTS = 100_000;

/** The model every event's record has (what the match worker reads from its model cache). */
const FIELDS: ModelField[] = [
  { apiKey: 'title', fieldType: 'string', localized: true },
  { apiKey: 'views', fieldType: 'integer', localized: false },
  { apiKey: 'slug', fieldType: 'slug', localized: false },
  { apiKey: 'body', fieldType: 'text', localized: true },
];

/** Content keys of the field-aware webhooks, in turn. */
const CONTENT: Partial<WebhookEventEntry>[] = [
  { changed_fields: ['title'] },
  { fields: { views: { gt: 10 } } },
  { record_status: ['published'] },
  { locales: ['it'], changed_fields: ['title', 'body'] },
];

export interface MatchingRun {
  usPerEvent: number;
  matchesPerEvent: number;
}

function webhooks(fieldAware: boolean): WebhookRecord[] {
  const list: WebhookRecord[] = [];
  for (let n = 0; n < MATCH_WEBHOOKS; n++) {
    let events: WebhookEventEntry[];
    if (n % 20 === 0) {
      // specific records
      events = [
        {
          entity_type: 'item',
          event_types: ['create', 'update', 'delete'],
          filters: [{ entity_type: 'item', entity_ids: [`rec-${n}`, `rec-${n + 1}`] }],
        },
      ];
    } else if (n % 20 === 1) {
      events = [{ entity_type: 'item_type', event_types: ['create', 'update', 'delete'] }];
    } else {
      events = [
        {
          entity_type: 'item',
          event_types: ['publish', 'unpublish', 'update'],
          filters: [
            { entity_type: 'item_type', entity_ids: [`model-${n % 500}`, `m${n % 500}`] },
            ...(n % 3 === 0
              ? [{ entity_type: 'environment_type' as const, entity_ids: ['primary'] }]
              : []),
          ],
          ...(fieldAware && n % 4 === 2 ? CONTENT[(n >> 2) % CONTENT.length] : {}),
        },
      ];
    }
    list.push({ id: String(n + 1), enabled: true, events } as WebhookRecord);
  }
  return list;
}

type BenchEvent = MatchableEvent & ItemEventVersions;

function events(): BenchEvent[] {
  return Array.from({ length: 1000 }, (_, i) => {
    const before = {
      title: { en: `Title ${i}`, it: `Titolo ${i}` },
      views: i % 20,
      slug: `post-${i}`,
      body: { en: 'Some text '.repeat(20), it: 'Del testo '.repeat(20) },
    };
    const after = {
      ...before,
      ...(i % 3 === 0 && { title: { ...before.title, it: `Nuovo ${i}` } }),
      ...(i % 3 === 1 && { views: before.views + 1 }),
    };
    return {
      environment: 'main',
      isEnvironmentPrimary: i % 4 !== 0,
      entityType: 'item',
      eventType: i % 2 === 0 ? 'publish' : 'update',
      entityId: `rec-${(i * 37) % MATCH_WEBHOOKS}`,
      itemTypeId: `model-${(i * 7) % 500}`,
      itemTypeApiKey: `m${(i * 7) % 500}`,
      entity: { type: 'item', id: `rec-${i}`, attributes: after },
      previousEntity: null,
      previousAttributes: before,
      recordStatus: i % 2 === 0 ? 'published' : 'updated',
    };
  });
}

function run(index: WebhookIndex, sample: readonly BenchEvent[], count: number): number {
  let matches = 0;
  for (let i = 0; i < count; i++) {
    const event = sample[i % sample.length]!;
    // As the match worker does (event-content.ts), with the model at hand.
    const content = index.needsContent(event) ? describeItemEvent(event, FIELDS) : undefined;
    matches += index.match(event, content).length;
  }
  return matches;
}

function measure(fieldAware: boolean): MatchingRun {
  const index = new WebhookIndex();
  index.replaceAll(webhooks(fieldAware));
  const sample = events();
  run(index, sample, 20_000); // warm
  const started = performance.now();
  const matches = run(index, sample, MATCH_EVENTS);
  const elapsed = performance.now() - started;
  return { usPerEvent: (elapsed * 1000) / MATCH_EVENTS, matchesPerEvent: matches / MATCH_EVENTS };
}

/** Both runs, alternated twice so that neither gets the machine's quiet moments alone. */
export function matchingBench(): { plain: MatchingRun; fieldAware: MatchingRun } {
  const runs = [measure(false), measure(true), measure(false), measure(true)];
  const best = (a: MatchingRun, b: MatchingRun) => (a.usPerEvent <= b.usPerEvent ? a : b);
  return { plain: best(runs[0]!, runs[2]!), fieldAware: best(runs[1]!, runs[3]!) };
}

export function matchingRows(result: ReturnType<typeof matchingBench>): string[] {
  const row = (name: string, r: MatchingRun) =>
    `| ${name} | ${r.matchesPerEvent.toFixed(1)} | ${r.usPerEvent.toFixed(2)} µs | ≤ 50 µs ${r.usPerEvent <= 50 ? '✔' : '✘'} |`;
  return [
    `| matching one event, ${MATCH_WEBHOOKS} webhooks | matches/event | per event (one core, CPU-bound) | target |`,
    '|---|---|---|---|',
    row('baseline: no entry with content keys', result.plain),
    row(
      'a quarter of the entries with content keys (changed_fields, locales, record_status, fields); events described first',
      result.fieldAware,
    ),
  ];
}

if (process.argv[1]?.endsWith('matching.js')) {
  process.stdout.write(`${matchingRows(matchingBench()).join('\n')}\n`);
}
