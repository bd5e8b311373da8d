import { findWebhooks, listWebhookVersions, type Queryable } from '@herald/store';
import { serializeWebhook } from './serialize.js';

/**
 * GET /webhooks serves every webhook unpaginated, and 10,000 is an ordinary deployment: reading
 * and serializing them all per request costs more than the 200 ms budget on a small machine. This
 * keeps each webhook's serialized JSON per process, keyed by its version (bumped by a trigger on
 * every update), so a request reads only ids and versions and re-reads just the rows that changed.
 * Postgres stays the source of truth: nothing is served without checking its current version.
 */
export class WebhookListCache {
  readonly #entries = new Map<string, { version: number; json: string }>();
  /** The last body rendered and the ids:versions it was rendered from. */
  #last: { key: string; body: Buffer } | undefined;

  /** The GET /webhooks body `{"data":[...]}`, oldest webhook first. */
  async render(db: Queryable): Promise<Buffer> {
    const versions = await listWebhookVersions(db);
    const key = versions.map(({ id, version }) => `${id}:${version}`).join(',');
    if (this.#last?.key === key) return this.#last.body;
    const stale = versions
      .filter(({ id, version }) => this.#entries.get(id)?.version !== version)
      .map(({ id }) => id);
    if (stale.length) {
      // Rows deleted since the versions were read must not be served from an older entry.
      for (const id of stale) this.#entries.delete(id);
      for (const webhook of await findWebhooks(db, stale)) {
        this.#entries.set(webhook.id, {
          version: webhook.version,
          json: JSON.stringify(serializeWebhook(webhook)),
        });
      }
    }
    if (this.#entries.size > versions.length) {
      const live = new Set(versions.map(({ id }) => id));
      for (const id of this.#entries.keys()) if (!live.has(id)) this.#entries.delete(id);
    }
    const parts: string[] = [];
    for (const { id } of versions) {
      // A webhook deleted between the two reads is simply left out.
      const entry = this.#entries.get(id);
      if (entry) parts.push(entry.json);
    }
    const body = Buffer.from(`{"data":[${parts.join(',')}]}`);
    this.#last = { key, body };
    return body;
  }
}
