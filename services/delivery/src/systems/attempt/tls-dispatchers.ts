import { createHash } from 'node:crypto';
import type { WebhookTls } from '@herald/contract';
import type { Agent } from 'undici';
import type { TlsIdentity } from './http-client.js';

interface Pooled {
  agent: Agent;
  /** The webhooks that use it: closed when the last one changes or goes. */
  webhooks: Set<string>;
}

/**
 * The undici Agents of mutual TLS (docs/api.md, Endpoint authentication): one per distinct TLS
 * identity (certificate, key, CA bundle), shared by the webhooks that have it, each made by the
 * delivery client (its SSRF lookup and timeouts). A webhook whose `tls` changes or that goes
 * leaves its Agent, which is closed once no webhook uses it; all close at shutdown.
 */
export class TlsDispatchers {
  readonly #pool = new Map<string, Pooled>();
  /** Each webhook's identity, as its last attempt had it. */
  readonly #byWebhook = new Map<string, string>();

  constructor(private readonly createAgent: (tls: TlsIdentity) => Agent) {}

  /** The Agent for the webhook's `tls`; undefined for none (the process's Agent). */
  for(webhookId: string, tls: WebhookTls | null): Agent | undefined {
    const identity = tls ? identityOf(tls) : undefined;
    const before = this.#byWebhook.get(webhookId);
    if (before !== identity) this.#leave(webhookId);
    if (!tls || identity === undefined) return undefined;
    let pooled = this.#pool.get(identity);
    if (!pooled) {
      const agent = this.createAgent({
        ...(tls.client_certificate !== null && { cert: tls.client_certificate }),
        ...(tls.client_key !== null && { key: tls.client_key }),
        ...(tls.ca_certificate !== null && { ca: tls.ca_certificate }),
      });
      this.#pool.set(identity, (pooled = { agent, webhooks: new Set() }));
    }
    pooled.webhooks.add(webhookId);
    this.#byWebhook.set(webhookId, identity);
    return pooled.agent;
  }

  /** The webhook changed or went: it leaves its Agent (closed if no other webhook uses it). */
  forget(webhookId: string): void {
    this.#leave(webhookId);
  }

  /** How many Agents are open. */
  get size(): number {
    return this.#pool.size;
  }

  async close(): Promise<void> {
    const agents = [...this.#pool.values()].map(({ agent }) => agent);
    this.#pool.clear();
    this.#byWebhook.clear();
    await Promise.all(agents.map((agent) => agent.close()));
  }

  #leave(webhookId: string): void {
    const identity = this.#byWebhook.get(webhookId);
    if (identity === undefined) return;
    this.#byWebhook.delete(webhookId);
    const pooled = this.#pool.get(identity);
    if (!pooled) return;
    pooled.webhooks.delete(webhookId);
    if (pooled.webhooks.size > 0) return;
    this.#pool.delete(identity);
    // Requests in flight on it finish first (Agent#close waits for them).
    void pooled.agent.close().catch(() => undefined);
  }
}

function identityOf(tls: WebhookTls): string {
  return createHash('sha256')
    .update(JSON.stringify([tls.client_certificate, tls.client_key, tls.ca_certificate]))
    .digest('base64');
}
