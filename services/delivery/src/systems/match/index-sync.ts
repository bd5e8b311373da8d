import { errorMessage, webhooksChangedChannel, type WebhookChangedMessage } from '@herald/contract';
import type { Coordination, Logger } from '@herald/runtime';
import { findWebhook, readWebhookIndex, type Db } from '@herald/store';
import { WebhookIndex } from './webhook-index.js';

export interface WebhookIndexSyncDeps {
  db: Db;
  /** The webhooks-changed channel (Redis pub/sub, or Postgres alone). */
  coordination: Pick<Coordination, 'prefix' | 'publish' | 'subscribe'>;
  logger: Logger;
  /** How often the whole index is read again (WEBHOOK_INDEX_RELOAD_MS). */
  reloadMs: number;
}

/**
 * The match index kept in sync with Postgres: loaded at start, each webhook read again when a
 * change of it is announced on the webhooks-changed channel, and the whole index again every
 * `reloadMs` and after the channel reconnects (announcements may have been missed). An
 * announcement comes after the change's commit, maybe after events accepted since: a match first
 * brings the index up to the webhooks' generation its events were read with (`upTo`), so no event
 * misses a webhook committed before it.
 */
export class WebhookIndexSync {
  readonly index = new WebhookIndex();
  readonly #channel: string;
  #subscription: { close(): Promise<void> } | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #listeners: ((webhookId: string) => void)[] = [];
  /** The webhooks' generation the whole index was last read at (migration 032). */
  #generation = 0n;
  /** The whole index's read under way, if one is. */
  #reloading: Promise<void> | undefined;

  constructor(private readonly deps: WebhookIndexSyncDeps) {
    this.#channel = webhooksChangedChannel(deps.coordination.prefix);
  }

  async start(): Promise<void> {
    const { coordination, logger, reloadMs } = this.deps;
    await this.#reload();
    this.#subscription = await coordination.subscribe(
      this.#channel,
      (text) => this.#heard(text),
      () => {
        this.#reload().catch(() => undefined);
      },
    );
    this.#timer = setInterval(() => {
      this.#reload().catch((error: unknown) =>
        logger.warn({ err: errorMessage(error) }, 'webhook index reload failed'),
      );
    }, reloadMs);
  }

  /** Tells every process of a webhook change (the channel the API publishes on). */
  async announce(message: WebhookChangedMessage): Promise<void> {
    // Postgres holds the change; a lost announcement is caught up by the periodic reload.
    await this.deps.coordination
      .publish(this.#channel, JSON.stringify(message))
      .catch((error: unknown) => {
        this.deps.logger.warn({ err: errorMessage(error) }, 'could not announce a webhook change');
      });
  }

  /** Hears each announced webhook change (the attempts drop what they keep of it). */
  onChange(listener: (webhookId: string) => void): void {
    this.#listeners.push(listener);
  }

  /** Stops the periodic reload (announcements are still heard until `stop`). */
  stopReloading(): void {
    clearInterval(this.#timer);
  }

  async stop(): Promise<void> {
    this.stopReloading();
    await this.#subscription?.close();
  }

  /**
   * Resolves once the index holds every webhook change of `generation` (read in the statement
   * that read a match's events): at once when it does, else after reading it all again.
   */
  async upTo(generation: bigint): Promise<void> {
    while (this.#generation < generation) await this.#reload();
  }

  /** Reads the whole index again; calls meanwhile share the read under way. */
  #reload(): Promise<void> {
    this.#reloading ??= readWebhookIndex(this.deps.db)
      .then(({ generation, webhooks }) => {
        this.index.replaceAll(webhooks);
        if (generation > this.#generation) this.#generation = generation;
      })
      .finally(() => (this.#reloading = undefined));
    return this.#reloading;
  }

  #heard(text: string): void {
    let message: WebhookChangedMessage;
    try {
      message = JSON.parse(text) as WebhookChangedMessage;
    } catch {
      return;
    }
    const { db, logger } = this.deps;
    for (const listener of this.#listeners) listener(message.id);
    findWebhook(db, message.id)
      .then((webhook) => this.index.upsert(message.id, webhook))
      .catch((error: unknown) =>
        logger.warn({ err: errorMessage(error) }, 'webhook index refresh failed'),
      );
  }
}
