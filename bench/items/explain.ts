import { parseQueryString } from '@herald/runtime';
import {
  createPostgresDb,
  findEnvironment,
  findModelsByIdOrApiKey,
  textSearchConfig,
} from '@herald/store';
import { compileListQuery, parseListParams, resolveListQuery } from '@herald/read';

/** node bench/dist/items/explain.js '<query string>': EXPLAIN ANALYZE of the SQL GET /items runs. */
const db = createPostgresDb({
  connectionString:
    process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/herald_bench',
});
const params = parseListParams(parseQueryString(process.argv[2] ?? ''));
const env = (await findEnvironment(db, 'main'))!;
const models = params.types
  ? [...(await findModelsByIdOrApiKey(db, 'main', params.types)).values()]
  : [];
const compiled = compileListQuery(
  resolveListQuery(params, { locales: env.locales, models, textSearchConfig }),
  'main',
);
for (const q of [compiled.count, compiled.list]) {
  process.stdout.write(`${q.text}\n${JSON.stringify(q.values)}\n`);
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS) ${q.text}`,
    q.values,
  );
  process.stdout.write(`${rows.map((r) => r['QUERY PLAN']).join('\n')}\n\n`);
}
await db.close();
