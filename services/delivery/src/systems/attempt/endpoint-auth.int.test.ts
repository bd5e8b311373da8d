import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { beforeEach, describe, expect, onTestFinished } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { WebhookAuth } from '@herald/contract';
import {
  makeTestPki,
  randomId,
  startReceiver,
  type Receiver,
  type TestIdentity,
} from '@herald/testkit';
import { itemEvent, itemEventsIn, pipelineTest, webhookInput } from '../../harness.test-support.js';

/**
 * docs/api.md, Endpoint authentication, end to end: a local OAuth2 token server and receivers
 * that demand its token, and a TLS receiver that demands a client certificate of its CA.
 */
const it = pipelineTest({});
const pki = makeTestPki();

let env = 'main';
beforeEach(() => {
  env = randomId('env');
});
const scoped = (url: string, overrides: Parameters<typeof webhookInput>[1] = {}) =>
  webhookInput(url, { events: itemEventsIn(env), autoRetry: false, ...overrides });
const events = (count: number) =>
  Array.from({ length: count }, () => itemEvent({ environment: env }));

async function withReceiver(respond?: Receiver['respond']): Promise<Receiver> {
  const receiver = await startReceiver(respond);
  onTestFinished(() => receiver.close());
  return receiver;
}

/** A token server issuing token-1, token-2…; `requests` counts what it was asked. */
async function tokenServer(answer?: Receiver['respond']) {
  let issued = 0;
  return withReceiver(
    answer ??
      ((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            access_token: `token-${++issued}`,
            token_type: 'Bearer',
            expires_in: 3600,
          }),
        );
      }),
  );
}

/** A receiver answering 200 to `Bearer <one of accepted>`, 401 to anything else. */
const demandingBearer =
  (accepted: () => string[]): Receiver['respond'] =>
  (req, res) => {
    const ok = accepted().some((token) => req.headers['authorization'] === `Bearer ${token}`);
    res.statusCode = ok ? 200 : 401;
    res.end(ok ? 'ok' : 'unauthorized');
  };

const oauth = (tokens: Receiver): WebhookAuth => ({
  kind: 'oauth2_client_credentials',
  token_url: `${tokens.url}/token`,
  client_id: 'herald',
  client_secret: 'the-client-secret',
  client_auth: 'basic',
  scope: null,
  audience: null,
});

describe('OAuth2 client credentials', () => {
  it('sends calls with the bearer token, one token request for many calls, none of it logged', async ({
    pipeline,
  }) => {
    const tokens = await tokenServer();
    const receiver = await withReceiver(demandingBearer(() => ['token-1']));
    const webhook = await pipeline.addWebhook(
      scoped(`${receiver.url}/hook`, {
        auth: oauth(tokens),
        httpBasicUser: 'basic-user',
        httpBasicPassword: 'basic-pass',
      }),
    );
    const sent = events(5);
    await pipeline.emit(sent);
    for (const event of sent) {
      const call = await pipeline.waitForCall(event.id, webhook.id, ['success', 'failed']);
      expect(call.status).toBe('success');
      // The call log shows the scheme only; OAuth2 replaced Basic auth.
      expect(call.requestHeaders?.['Authorization']).toBe('Bearer ***');
      expect(JSON.stringify(call)).not.toMatch(/token-1|the-client-secret|basic-pass/);
    }
    expect(receiver.requests).toHaveLength(5);
    expect(tokens.requests).toHaveLength(1);
    // Signed as any call is.
    const request = receiver.requests[0]!;
    const signed = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    expect(() => new Webhook(webhook.signingSecret).verify(request.body, signed)).not.toThrow();
  });

  it('asks for a new token once when the endpoint answers 401, and the second answer stands', async ({
    pipeline,
  }) => {
    const tokens = await tokenServer();
    // The endpoint has revoked token-1 (the one Herald gets first).
    const refreshing = await withReceiver(demandingBearer(() => ['token-2']));
    const webhook = await pipeline.addWebhook(scoped(refreshing.url, { auth: oauth(tokens) }));
    const [first] = events(1);
    await pipeline.emit([first!]);
    const call = await pipeline.waitForCall(first!.id, webhook.id, ['success', 'failed']);
    expect(call.status).toBe('success');
    expect(refreshing.requests.map((r) => r.headers['authorization'])).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
    expect(tokens.requests).toHaveLength(2);

    // An endpoint that refuses every token: one refresh, then its 401 is the outcome.
    const refusing = await withReceiver(demandingBearer(() => []));
    const other = await pipeline.addWebhook(scoped(refusing.url, { auth: oauth(tokens) }));
    const [second] = events(1);
    await pipeline.emit([second!]);
    const refused = await pipeline.waitForCall(second!.id, other.id, ['success', 'failed']);
    expect(refused.status).toBe('failed');
    expect(refused.responseStatus).toBe(401);
    expect(refused.failureReason).toBe('HTTP 401');
    expect(refusing.requests).toHaveLength(2);
    expect(tokens.requests).toHaveLength(4);
  });

  it('a token endpoint that fails is a classified failure with a readable reason, the endpoint unasked', async ({
    pipeline,
  }) => {
    const tokens = await tokenServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_client', error_description: 'bad secret' }));
    });
    const receiver = await withReceiver();
    const webhook = await pipeline.addWebhook(scoped(receiver.url, { auth: oauth(tokens) }));
    const [event] = events(1);
    await pipeline.emit([event!]);
    const call = await pipeline.waitForCall(event!.id, webhook.id, ['failed']);
    expect(call.failureReason).toBe(
      `OAuth2 token request to ${tokens.url}/token failed: HTTP 400 (invalid_client: bad secret)`,
    );
    expect(call.responseStatus).toBeNull();
    expect(receiver.requests).toHaveLength(0);
    expect(JSON.stringify(call)).not.toContain('the-client-secret');
  });
});

/** An HTTPS receiver (certificate of the test CA) that accepts only client certificates of it. */
async function mtlsReceiver() {
  const received: { body: string; headers: IncomingMessage['headers']; subject: string }[] = [];
  const sockets = new Set<Socket>();
  const server = createServer(
    {
      cert: pki.server.certificate,
      key: pki.server.key,
      ca: pki.ca.certificate,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        received.push({
          body: Buffer.concat(chunks).toString('utf8'),
          headers: req.headers,
          subject: String(peer.subject?.CN),
        });
        res.end('ok');
      });
    },
  );
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

describe('mutual TLS', () => {
  /** A webhook's TLS settings: this client identity (none: null), trusting `ca` (null: the system's). */
  const tlsWith = (identity: TestIdentity | null, ca: string | null) => ({
    tls: {
      client_certificate: identity?.certificate ?? null,
      client_key: identity?.key ?? null,
      ca_certificate: ca,
    },
  });

  it('receives signed calls only from the webhook with the right client certificate', async ({
    pipeline,
  }) => {
    const receiver = await mtlsReceiver();
    const ca = pki.ca.certificate;
    const good = await pipeline.addWebhook(scoped(`${receiver.url}/hook`, tlsWith(pki.client, ca)));
    const none = await pipeline.addWebhook(scoped(`${receiver.url}/none`, tlsWith(null, ca)));
    const stranger = await pipeline.addWebhook(
      scoped(`${receiver.url}/stranger`, tlsWith(pki.stranger, ca)),
    );
    const [event] = events(1);
    await pipeline.emit([event!]);

    const delivered = await pipeline.waitForCall(event!.id, good.id, ['success', 'failed']);
    expect(delivered.status).toBe('success');
    expect(receiver.received).toHaveLength(1);
    const request = receiver.received[0]!;
    expect(request.subject).toBe('herald-client');
    const signed = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    expect(() => new Webhook(good.signingSecret).verify(request.body, signed)).not.toThrow();

    for (const webhook of [none, stranger]) {
      const call = await pipeline.waitForCall(event!.id, webhook.id, ['success', 'failed']);
      expect(call.status).toBe('failed');
      expect(call.responseStatus).toBeNull();
      // TLS 1.3: the server refuses the certificate after the client's side of the handshake.
      expect(call.failureReason).toMatch(/^(TLS handshake failed|connection reset)/);
      expect(call.failureReason).toContain('client certificate');
      expect(call.failureReason).not.toContain('PRIVATE KEY');
    }
    expect(receiver.received).toHaveLength(1);
  });

  it('a webhook without the CA does not trust the endpoint: a classified TLS failure', async ({
    pipeline,
  }) => {
    const receiver = await mtlsReceiver();
    const webhook = await pipeline.addWebhook(scoped(receiver.url, tlsWith(pki.client, null)));
    const [event] = events(1);
    await pipeline.emit([event!]);
    const call = await pipeline.waitForCall(event!.id, webhook.id, ['failed']);
    expect(call.failureReason).toMatch(
      /^TLS handshake failed \((UNABLE_TO|SELF_SIGNED|DEPTH_ZERO)/,
    );
    expect(receiver.received).toHaveLength(0);
  });
});
