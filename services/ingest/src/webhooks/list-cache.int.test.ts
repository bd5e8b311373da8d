import { describe, expect, it } from 'vitest';
import { insertWebhook, updateWebhook, type Queryable, type WebhookInput } from '@herald/store';
import { testWebhookInput } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import { WebhookListCache } from './list-cache.js';

const testDb = suiteTestDb();

const input = (name: string): WebhookInput =>
  testWebhookInput({ name, url: 'https://example.com/', events: [] });

const names = (body: Buffer) =>
  (JSON.parse(body.toString()) as { data: { attributes: { name: string } }[] }).data.map(
    (w) => w.attributes.name,
  );

/** The real database, with a statement run right after the first query of a render. */
function afterFirstQuery(sql: string, params: unknown[]): Queryable {
  let first = true;
  return {
    async query(text, values) {
      const result = await testDb.db.query(text, values);
      if (first) {
        first = false;
        await testDb.db.query(sql, params);
      }
      return result as never;
    },
  };
}

describe('WebhookListCache', () => {
  it('re-reads changed rows and drops deleted ones', async () => {
    const cache = new WebhookListCache();
    const a = await insertWebhook(testDb.db, input('a'));
    await insertWebhook(testDb.db, input('b'));
    expect(names(await cache.render(testDb.db))).toEqual(['a', 'b']);
    await updateWebhook(testDb.db, a.id, { name: 'a2' });
    expect(names(await cache.render(testDb.db))).toEqual(['a2', 'b']);
    await testDb.db.query('DELETE FROM webhooks WHERE id = $1', [a.id]);
    expect(names(await cache.render(testDb.db))).toEqual(['b']);
  });

  it('never serves an old entry of a row changed then deleted between its two reads', async () => {
    const cache = new WebhookListCache();
    const c = await insertWebhook(testDb.db, input('c'));
    expect(names(await cache.render(testDb.db))).toContain('c');
    await updateWebhook(testDb.db, c.id, { name: 'c2' });
    const racing = afterFirstQuery('DELETE FROM webhooks WHERE id = $1', [c.id]);
    const body = await cache.render(racing);
    expect(names(body)).not.toContain('c');
    expect(names(body)).not.toContain('c2');
  });
});
