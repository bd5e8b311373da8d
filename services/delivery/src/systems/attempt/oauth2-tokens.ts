import { createHash } from 'node:crypto';
import type { WebhookAuth } from '@herald/contract';
import type { SendResult } from './http-client.js';

/** A token to send, or why there is none (for the call log: never the secret nor a token). */
export type TokenResult = { ok: true; token: string } | { ok: false; reason: string };

export interface OAuth2TokensDeps {
  /** The delivery client's POST: the token request goes through the same SSRF guard. */
  send: (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;
  /** Epoch ms (Date.now). */
  now?: () => number;
}

/** A token's lifetime when the token endpoint gives no `expires_in` (RFC 6749 §5.1: RECOMMENDED). */
const DEFAULT_LIFETIME_MS = 5 * 60_000;
/** A token is taken again this long before it expires: a tenth of its lifetime, at most 30 s. */
const MAX_EARLY_MS = 30_000;
/** The part of a token endpoint's error description kept in a failure reason. */
const MAX_DESCRIPTION_CHARS = 200;

interface Cached {
  /** The auth settings the token was had with: a change takes a new one. */
  fingerprint: string;
  /** The token, or the request on its way (one request however many attempts wait for it). */
  pending?: Promise<TokenResult>;
  token?: string;
  /** When to take a new one (epoch ms). */
  renewAt: number;
}

/**
 * OAuth2 client credentials (RFC 6749 §4.4) for webhooks whose endpoint wants a bearer token
 * (docs/api.md, Endpoint authentication): one token per webhook, requested once for every attempt
 * waiting on it, kept until shortly before it expires, dropped when the endpoint answers 401 with
 * it (the attempt asks again once) or when the webhook's auth changes.
 */
export class OAuth2Tokens {
  readonly #cache = new Map<string, Cached>();
  readonly #now: () => number;

  constructor(private readonly deps: OAuth2TokensDeps) {
    this.#now = deps.now ?? Date.now;
  }

  /** The webhook's token: the cached one while it lasts, otherwise a new one. */
  token(webhookId: string, auth: WebhookAuth): Promise<TokenResult> {
    const fingerprint = fingerprintOf(auth);
    const cached = this.#cache.get(webhookId);
    if (cached?.fingerprint === fingerprint) {
      if (cached.pending) return cached.pending;
      if (cached.token !== undefined && this.#now() < cached.renewAt) {
        return Promise.resolve({ ok: true, token: cached.token });
      }
    }
    const entry: Cached = { fingerprint, renewAt: 0 };
    entry.pending = this.#request(auth).then((result) => {
      delete entry.pending;
      if (this.#cache.get(webhookId) !== entry) return result;
      if (result.ok) {
        entry.token = result.token;
        entry.renewAt = result.renewAt;
      } else {
        // A failure is not kept: the next attempt (a retry) asks again.
        this.#cache.delete(webhookId);
      }
      return result.ok ? { ok: true, token: result.token } : result;
    });
    this.#cache.set(webhookId, entry);
    return entry.pending;
  }

  /**
   * The endpoint refused `token` (401): it is not used again. Only that token: attempts that got
   * 401 with it at once take one new token between them.
   */
  refused(webhookId: string, token: string): void {
    const cached = this.#cache.get(webhookId);
    if (cached?.token === token) this.#cache.delete(webhookId);
  }

  /** The webhook changed or went: its token goes. */
  forget(webhookId: string): void {
    this.#cache.delete(webhookId);
  }

  async #request(
    auth: WebhookAuth,
  ): Promise<{ ok: true; token: string; renewAt: number } | { ok: false; reason: string }> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (auth.client_auth === 'body') {
      form.set('client_id', auth.client_id);
      form.set('client_secret', auth.client_secret);
    } else {
      // RFC 6749 §2.3.1: each part form-encoded, then Basic.
      const encode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
      const pair = `${encode(auth.client_id)}:${encode(auth.client_secret)}`;
      headers['authorization'] = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    if (auth.scope !== null) form.set('scope', auth.scope);
    if (auth.audience !== null) form.set('audience', auth.audience);

    const where = `OAuth2 token request to ${shownUrl(auth.token_url)}`;
    const requestedAt = this.#now();
    const result = await this.deps.send(auth.token_url, headers, form.toString());
    if (result.kind === 'error') return { ok: false, reason: `${where} failed: ${result.reason}` };
    const body = parseJson(result.body);
    if (result.status < 200 || result.status >= 300) {
      return { ok: false, reason: `${where} failed: HTTP ${result.status}${oauthError(body)}` };
    }
    const token = body?.['access_token'];
    if (typeof token !== 'string' || token === '') {
      return { ok: false, reason: `${where} answered ${result.status} without an access_token` };
    }
    const tokenType = body?.['token_type'];
    if (typeof tokenType === 'string' && tokenType.toLowerCase() !== 'bearer') {
      return {
        ok: false,
        reason: `${where} answered a token of type "${tokenType.slice(0, 40)}", not Bearer`,
      };
    }
    const expiresIn = Number(body?.['expires_in']);
    const lifetimeMs =
      Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : DEFAULT_LIFETIME_MS;
    const early = Math.min(MAX_EARLY_MS, lifetimeMs / 10);
    return { ok: true, token, renewAt: requestedAt + lifetimeMs - early };
  }
}

function fingerprintOf(auth: WebhookAuth): string {
  const { kind, token_url, client_id, client_secret, client_auth, scope, audience } = auth;
  return createHash('sha256')
    .update(
      JSON.stringify([kind, token_url, client_id, client_secret, client_auth, scope, audience]),
    )
    .digest('base64');
}

/** The token URL as a reason shows it: no query (it may carry anything), no credentials. */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'the token URL';
  }
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** ` (invalid_client: …)` from an RFC 6749 §5.2 error answer, or nothing. */
function oauthError(body: Record<string, unknown> | undefined): string {
  const error = body?.['error'];
  if (typeof error !== 'string') return '';
  const description = body?.['error_description'];
  const told =
    typeof description === 'string' ? `: ${description.slice(0, MAX_DESCRIPTION_CHARS)}` : '';
  return ` (${error.slice(0, 64)}${told})`;
}
