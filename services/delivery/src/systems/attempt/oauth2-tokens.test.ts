import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { parseCidrList, type WebhookAuth } from '@herald/contract';
import { startReceiver, type Received, type Receiver } from '@herald/testkit';
import { HttpClient } from './http-client.js';
import { OAuth2Tokens } from './oauth2-tokens.js';

/** docs/api.md, Endpoint authentication: the token, asked for, kept and renewed. */

let server: Receiver;
/** What the token server answers next (a function of the request count). */
let answer: (n: number, req: Received, res: ServerResponse) => void;
const client = new HttpClient({
  connectTimeoutMs: 500,
  totalTimeoutMs: 1500,
  allowCidrs: parseCidrList('127.0.0.0/8'),
  maxResponseBytes: 65_536,
  connectionsPerOrigin: 4,
});

beforeAll(async () => {
  server = await startReceiver((req, res) => answer(server.requests.length, req, res));
});
afterAll(async () => {
  await server.close();
  await client.close();
});

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const issue =
  (expiresIn?: number) =>
  (n: number, _req: Received, res: ServerResponse): void =>
    json(res, 200, { access_token: `token-${n}`, token_type: 'Bearer', expires_in: expiresIn });

const authFor = (overrides: Partial<WebhookAuth> = {}): WebhookAuth => ({
  kind: 'oauth2_client_credentials',
  token_url: `${server.url}/oauth/token?tenant=t1`,
  client_id: 'herald app',
  client_secret: 's3cret:&=',
  client_auth: 'basic',
  scope: 'hooks:write',
  audience: 'https://api.example.com',
  ...overrides,
});

/** A store of its own; given `answerWith`, the server answers with it from a clean request log. */
function tokens(answerWith?: typeof answer) {
  if (answerWith) {
    server.requests.length = 0;
    answer = answerWith;
  }
  let now = 1_000_000;
  const store = new OAuth2Tokens({
    send: (url, headers, body) => client.send(url, headers, body),
    now: () => now,
  });
  return { store, advance: (ms: number) => (now += ms) };
}

/** The form-encoded fields a token request sent. */
const formOf = (request: Received | undefined) =>
  Object.fromEntries(new URLSearchParams(request?.body));

describe('OAuth2Tokens', () => {
  it('asks with client_credentials, Basic client auth (form-encoded parts), scope and audience', async () => {
    const { store } = tokens(issue(3600));
    expect(await store.token('w1', authFor())).toEqual({ ok: true, token: 'token-1' });
    const [request] = server.requests;
    expect(request?.url).toBe('/oauth/token?tenant=t1');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const basic = String(request?.headers['authorization']).replace(/^Basic /, '');
    expect(Buffer.from(basic, 'base64').toString()).toBe('herald+app:s3cret%3A%26%3D');
    expect(formOf(request)).toEqual({
      grant_type: 'client_credentials',
      scope: 'hooks:write',
      audience: 'https://api.example.com',
    });
  });

  it('sends the client in the body when client_auth is body, and leaves out what is not set', async () => {
    const { store } = tokens(issue(3600));
    await store.token('w1', authFor({ client_auth: 'body', scope: null, audience: null }));
    const [request] = server.requests;
    expect(request?.headers['authorization']).toBeUndefined();
    expect(formOf(request)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'herald app',
      client_secret: 's3cret:&=',
    });
  });

  it('asks once for many attempts, keeps the token until shortly before it expires', async () => {
    const { store, advance } = tokens(issue(100));
    const auth = authFor();
    const many = await Promise.all(Array.from({ length: 20 }, () => store.token('w1', auth)));
    expect(new Set(many.map((t) => (t.ok ? t.token : t.reason)))).toEqual(new Set(['token-1']));
    expect(server.requests).toHaveLength(1);
    // A tenth of 100 s early (at most 30 s): kept for 90 s.
    advance(89_000);
    expect(await store.token('w1', auth)).toEqual({ ok: true, token: 'token-1' });
    advance(2_000);
    expect(await store.token('w1', auth)).toEqual({ ok: true, token: 'token-2' });
    expect(server.requests).toHaveLength(2);
    // Another webhook, or changed settings, ask for their own.
    expect(await store.token('w2', auth)).toEqual({ ok: true, token: 'token-3' });
    expect(await store.token('w1', authFor({ scope: 'other' }))).toEqual({
      ok: true,
      token: 'token-4',
    });
  });

  it('drops a token the endpoint refused (once for the attempts that saw it) and a forgotten one', async () => {
    const { store } = tokens(issue(3600));
    const auth = authFor();
    await store.token('w1', auth);
    store.refused('w1', 'token-1');
    expect(await store.token('w1', auth)).toEqual({ ok: true, token: 'token-2' });
    // A second 401 with the old token leaves the new one.
    store.refused('w1', 'token-1');
    expect(await store.token('w1', auth)).toEqual({ ok: true, token: 'token-2' });
    store.forget('w1');
    expect(await store.token('w1', auth)).toEqual({ ok: true, token: 'token-3' });
  });

  it('fails with a readable reason that holds neither the secret nor a token', async () => {
    const { store } = tokens();
    answer = (_n, _req, res) =>
      json(res, 401, { error: 'invalid_client', error_description: 'unknown client' });
    const refused = await store.token('w1', authFor());
    expect(refused).toEqual({
      ok: false,
      reason: `OAuth2 token request to ${server.url}/oauth/token failed: HTTP 401 (invalid_client: unknown client)`,
    });
    answer = (_n, _req, res) => json(res, 200, { token_type: 'Bearer' });
    const empty = await store.token('w1', authFor());
    expect(empty.ok).toBe(false);
    expect(!empty.ok && empty.reason).toContain('without an access_token');
    answer = (_n, _req, res) => json(res, 200, { access_token: 'mac-1', token_type: 'mac' });
    const mac = await store.token('w1', authFor());
    expect(!mac.ok && mac.reason).toContain('not Bearer');
    expect(!mac.ok && mac.reason).not.toContain('mac-1');

    const closed = new OAuth2Tokens({
      send: (url, headers, body) => client.send(url, headers, body),
    });
    const away = await closed.token('w1', authFor({ token_url: 'http://127.0.0.1:9/token' }));
    expect(away).toEqual({
      ok: false,
      reason: 'OAuth2 token request to http://127.0.0.1:9/token failed: connection refused',
    });
    const guarded = new HttpClient({
      connectTimeoutMs: 500,
      totalTimeoutMs: 1500,
      allowCidrs: [],
      maxResponseBytes: 1024,
      connectionsPerOrigin: 1,
    });
    const blocked = await new OAuth2Tokens({
      send: (url, headers, body) => guarded.send(url, headers, body),
    }).token('w1', authFor());
    await guarded.close();
    expect(!blocked.ok && blocked.reason).toMatch(/^OAuth2 token request to .* failed: .*loopback/);
    for (const result of [refused, empty, mac, away, blocked]) {
      expect(JSON.stringify(result)).not.toContain('s3cret');
    }
  });
});
