import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createPostgresDb, migrate, upsertModel } from '@herald/store';

/**
 * Generates the GET /items benchmark data set into its own database (BENCH_DATABASE_URL,
 * default herald_bench, created if missing): `records` articles (about 10 fields of mixed types,
 * localized title in en/it, 10 % with one or two blocks) plus `others` notes, their full-text
 * documents, with COPY. Kept across runs: regenerated only with --regenerate or another size.
 */

export interface GenerateOptions {
  url: string;
  records: number;
  others: number;
  regenerate: boolean;
}

const WORDS = (() => {
  const syllables = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'de', 'pa', 'zu', 'be'];
  const words: string[] = [];
  for (const a of syllables)
    for (const b of syllables) for (const c of syllables) words.push(a + b + c);
  return words; // 1,728 pseudo-words: no stop words, stable stems
})();

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const copyText = (value: string | null): string =>
  value === null
    ? '\\N'
    : value
        .replace(/\\/g, '\\\\')
        .replace(/\t/g, '\\t')
        .replace(/\n/g, '\\n')
        .replace(/\r/g, '\\r');

function progress(label: string, done: number, total: number, started: number): void {
  const width = 30;
  const ratio = total === 0 ? 1 : done / total;
  const bar = '#'.repeat(Math.round(ratio * width)).padEnd(width, '.');
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `\r  ${label.padEnd(10)} [${bar}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')} ${seconds}s`,
  );
  if (done >= total) process.stderr.write('\n');
}

const ARTICLE = 'm_article';
const NOTE = 'm_note';
const BLOCK = 'b_para';
const FULLTEXT_WORD = 'zephyr';
const CATEGORIES = 1000;

const RECORD_COLUMNS =
  'environment, id, item_type_id, is_block, root_id, block_parent_id, status, current_attributes, published_attributes, created_at, updated_at, published_at, first_published_at, current_version';

async function ensureDatabase(url: string, regenerate: boolean): Promise<void> {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    if (regenerate) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
}

/** Returns true when it generated, false when the data set was already there. */
export async function generate(options: GenerateOptions): Promise<boolean> {
  await ensureDatabase(options.url, false);
  const client = new pg.Client({ connectionString: options.url });
  await client.connect();
  const existing = await client
    .query<{ records: string; others: string }>('SELECT records, others FROM bench_meta')
    .catch(() => null);
  await client.end();
  const same =
    existing?.rows[0] &&
    Number(existing.rows[0].records) === options.records &&
    Number(existing.rows[0].others) === options.others;
  if (same && !options.regenerate) return false;
  await ensureDatabase(options.url, true);

  const db = createPostgresDb({ connectionString: options.url, maxConnections: 2 });
  await migrate(db);
  await db.query(`UPDATE environments SET locales = ARRAY['en', 'it'] WHERE id = 'main'`);
  const field = (apiKey: string, fieldType: string, localized = false, position = 0) => ({
    apiKey,
    fieldType,
    localized,
    id: null,
    label: apiKey,
    position,
    attributes: {},
  });
  const model = (id: string, apiKey: string, modularBlock = false) => ({
    id,
    apiKey,
    name: apiKey,
    modularBlock,
    sortable: false,
    tree: false,
    draftModeActive: true,
    attributes: {},
  });
  await upsertModel(db, 'main', model(BLOCK, 'paragraph', true), [field('text', 'text')]);
  await upsertModel(db, 'main', model(ARTICLE, 'article'), [
    field('title', 'string', true, 0),
    field('slug', 'slug', false, 1),
    field('body', 'text', false, 2),
    field('views', 'integer', false, 3),
    field('rating', 'float', false, 4),
    field('published_on', 'date', false, 5),
    field('starts_at', 'date_time', false, 6),
    field('featured', 'boolean', false, 7),
    field('category', 'string', false, 8),
    field('author', 'link', false, 9),
    field('sections', 'rich_text', false, 10),
  ]);
  await upsertModel(db, 'main', model(NOTE, 'note'), [
    field('title', 'string', false, 0),
    field('n', 'integer', false, 1),
    field('body', 'text', false, 2),
  ]);
  await db.close();

  const copyClient = new pg.Client({ connectionString: options.url });
  await copyClient.connect();
  await copyClient.query('SET synchronous_commit = off');
  await copyClient.query(
    'CREATE UNLOGGED TABLE bench_texts (record_id text, item_type_id text, en text, it text)',
  );
  const total = options.records + options.others;
  const rand = random(42);
  const base = Date.UTC(2020, 0, 1);
  const words = (n: number) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(rand() * WORDS.length)]!);
    return out.join(' ');
  };
  const CHUNK = 50_000;
  const started = Date.now();
  progress('records', 0, total, started);
  for (let start = 0; start < total; start += CHUNK) {
    const records: string[] = [];
    const texts: string[] = [];
    for (let i = start; i < Math.min(total, start + CHUNK); i++) {
      const isArticle = i < options.records;
      const id = `${isArticle ? 'a' : 'n'}${i.toString(36).padStart(5, '0')}`;
      const created = new Date(base + i * 1000).toISOString();
      let attributes: Record<string, unknown>;
      let en: string;
      let it: string;
      const blocks: { id: string; text: string }[] = [];
      if (isArticle) {
        const body = `${words(12)}${i % 100 === 7 ? ` ${FULLTEXT_WORD}` : ''}`;
        if (i % 10 === 3) {
          const count = 1 + (i % 2);
          for (let b = 0; b < count; b++) blocks.push({ id: `${id}-b${b}`, text: words(8) });
        }
        const titleEn = words(4);
        const titleIt = words(4);
        attributes = {
          title: { en: titleEn, it: titleIt },
          slug: `${id}-slug`,
          body,
          views: Math.floor(rand() * 100_000),
          rating: Math.round(rand() * 500) / 100,
          published_on: new Date(base + Math.floor(rand() * 2000) * 86_400_000)
            .toISOString()
            .slice(0, 10),
          starts_at: new Date(base + Math.floor(rand() * 2e11)).toISOString(),
          featured: rand() < 0.1,
          category: `cat-${String(Math.floor(rand() * CATEGORIES)).padStart(4, '0')}`,
          author: `n${Math.floor(rand() * Math.max(1, options.others))
            .toString(36)
            .padStart(5, '0')}`,
          sections: blocks.map((b) => b.id),
        };
        const blockText = blocks.map((b) => b.text).join(' ');
        en = `${titleEn} ${body} ${blockText}`;
        it = `${titleIt} ${body} ${blockText}`;
      } else {
        const title = words(3);
        const body = words(10);
        attributes = { title, n: i, body };
        en = `${title} ${body}`;
        it = en;
      }
      const json = JSON.stringify(attributes);
      records.push(
        [
          'main',
          id,
          isArticle ? ARTICLE : NOTE,
          'f',
          null,
          null,
          'published',
          json,
          json,
          created,
          created,
          created,
          created,
          '1',
        ]
          .map(copyText)
          .join('\t'),
      );
      for (const block of blocks) {
        const blockJson = JSON.stringify({ text: block.text });
        records.push(
          [
            'main',
            block.id,
            BLOCK,
            't',
            id,
            id,
            'draft',
            blockJson,
            blockJson,
            created,
            created,
            null,
            null,
            null,
          ]
            .map(copyText)
            .join('\t'),
        );
      }
      texts.push([id, isArticle ? ARTICLE : NOTE, en, it].map(copyText).join('\t'));
    }
    await pipeline(
      Readable.from([records.join('\n') + '\n']),
      copyClient.query(copyFrom(`COPY records (${RECORD_COLUMNS}) FROM STDIN`)),
    );
    await pipeline(
      Readable.from([texts.join('\n') + '\n']),
      copyClient.query(copyFrom('COPY bench_texts FROM STDIN')),
    );
    progress('records', Math.min(total, start + CHUNK), total, started);
  }

  const textStarted = Date.now();
  const TEXT_CHUNK = 100_000;
  progress('full text', 0, total, textStarted);
  const { rows } = await copyClient.query<{ record_id: string }>(
    `SELECT record_id FROM bench_texts ORDER BY record_id`,
  );
  const ids = rows.map((r) => r.record_id);
  for (let start = 0; start < ids.length; start += TEXT_CHUNK) {
    const from = ids[start]!;
    const to = ids[Math.min(ids.length, start + TEXT_CHUNK) - 1]!;
    await copyClient.query(
      `INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
       SELECT 'main', record_id, v.version, l.locale, item_type_id,
         CASE l.locale WHEN 'en' THEN to_tsvector('english', en) ELSE to_tsvector('italian', it) END
       FROM bench_texts CROSS JOIN (VALUES ('en'), ('it')) AS l(locale)
         CROSS JOIN (VALUES ('published'), ('current')) AS v(version)
       WHERE record_id BETWEEN $1 AND $2`,
      [from, to],
    );
    progress('full text', Math.min(ids.length, start + TEXT_CHUNK), ids.length, textStarted);
  }
  process.stderr.write('  analyze...\n');
  await copyClient.query('DROP TABLE bench_texts');
  await copyClient.query('VACUUM ANALYZE records');
  await copyClient.query('VACUUM ANALYZE record_texts');
  await copyClient.query('CREATE TABLE bench_meta (records bigint, others bigint)');
  await copyClient.query('INSERT INTO bench_meta VALUES ($1, $2)', [
    options.records,
    options.others,
  ]);
  await copyClient.end();
  return true;
}
