import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { findWebhook } from '@herald/store';
import { makeTestPki, testWebhookAttributes, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/** docs/api.md, Endpoint authentication: `auth` and `tls`, validated at creation and update. */
const it = appTest(createApp);
const pki = makeTestPki();

interface ErrorBody {
  data: { attributes: { code: string; details: { field?: string; code?: string } } }[];
}
interface WebhookBody {
  data: { id: string; attributes: Record<string, unknown> };
}

const oauth = (overrides: Record<string, unknown> = {}) => ({
  kind: 'oauth2_client_credentials',
  token_url: 'https://auth.example.com/oauth/token',
  client_id: 'herald',
  client_secret: 'client-secret-123',
  scope: 'webhooks:write',
  audience: 'https://api.example.com',
  ...overrides,
});
const mtls = (overrides: Record<string, unknown> = {}) => ({
  client_certificate: pki.client.certificate,
  client_key: pki.client.key,
  ca_certificate: pki.ca.certificate,
  ...overrides,
});

const create = (api: TestApi, attributes: Record<string, unknown>) =>
  api.call<WebhookBody & ErrorBody>(
    'POST',
    '/webhooks',
    JSON.stringify({
      data: { type: 'webhook', attributes: { ...testWebhookAttributes(), ...attributes } },
    }),
  );
const update = (api: TestApi, id: string, attributes: Record<string, unknown>) =>
  api.call<WebhookBody & ErrorBody>(
    'PUT',
    `/webhooks/${id}`,
    JSON.stringify({ data: { type: 'webhook', id, attributes } }),
  );

/** The (field, code) pairs of a 422. */
const problems = (body: ErrorBody) =>
  body.data.map(({ attributes }) => [attributes.details.field, attributes.details.code]);

const corrupt = (pem: string) => pem.replace(/\n[A-Za-z0-9+/]{10}/, '\n!!!!!!!!!!');

describe('endpoint authentication attributes', () => {
  it('stores auth and tls, and never answers client_secret or client_key', async ({ api, db }) => {
    const created = await create(api, { auth: oauth(), tls: mtls() });
    expect(created.status).toBe(201);
    const { id, attributes } = created.body.data;
    expect(attributes['auth']).toEqual({
      kind: 'oauth2_client_credentials',
      token_url: 'https://auth.example.com/oauth/token',
      client_id: 'herald',
      client_auth: 'basic',
      scope: 'webhooks:write',
      audience: 'https://api.example.com',
    });
    expect(attributes['tls']).toEqual({
      client_certificate: pki.client.certificate,
      ca_certificate: pki.ca.certificate,
    });
    for (const answer of [
      created,
      await api.call('GET', `/webhooks/${id}`),
      await api.call('GET', '/webhooks'),
    ]) {
      expect(JSON.stringify(answer.body)).not.toContain('client-secret-123');
      expect(JSON.stringify(answer.body)).not.toContain('PRIVATE KEY');
    }
    const stored = await findWebhook(db, id);
    expect(stored?.auth?.client_secret).toBe('client-secret-123');
    expect(stored?.tls?.client_key).toBe(pki.client.key);
  });

  it('defaults to none, and an update may leave the secrets out to keep them', async ({
    api,
    db,
  }) => {
    const plain = await create(api, {});
    expect(plain.body.data.attributes['auth']).toBeNull();
    expect(plain.body.data.attributes['tls']).toBeNull();
    const { id } = (await create(api, { auth: oauth(), tls: mtls() })).body.data;

    const { client_secret: _secret, ...withoutSecret } = oauth({ scope: 'other' });
    const { client_key: _key, ...withoutKey } = mtls({ ca_certificate: null });
    const kept = await update(api, id, { auth: withoutSecret, tls: withoutKey });
    expect(kept.status).toBe(200);
    const stored = await findWebhook(db, id);
    expect(stored?.auth).toMatchObject({ scope: 'other', client_secret: 'client-secret-123' });
    expect(stored?.tls).toMatchObject({ client_key: pki.client.key, ca_certificate: null });

    // Another token URL or certificate needs its secret again.
    const moved = await update(api, id, {
      auth: { ...withoutSecret, token_url: 'https://evil.example.com/token' },
      tls: { ...withoutKey, client_certificate: pki.stranger.certificate },
    });
    expect(moved.status).toBe(422);
    expect(problems(moved.body)).toEqual([
      ['auth.client_secret', 'VALIDATION_REQUIRED'],
      ['tls.client_key', 'VALIDATION_REQUIRED'],
    ]);

    const cleared = await update(api, id, { auth: null, tls: null });
    expect(cleared.body.data.attributes['auth']).toBeNull();
    expect((await findWebhook(db, id))?.tls).toBeNull();
  });

  const RULES: [string, Record<string, unknown>, string, string][] = [
    ['auth not an object', { auth: 'token' }, 'auth', 'VALIDATION_TYPE'],
    ['auth unknown kind', { auth: oauth({ kind: 'jwt' }) }, 'auth.kind', 'VALIDATION_INCLUSION'],
    [
      'token_url ftp',
      { auth: oauth({ token_url: 'ftp://x.example.com/t' }) },
      'auth.token_url',
      'VALIDATION_FORMAT',
    ],
    [
      'token_url relative',
      { auth: oauth({ token_url: '/token' }) },
      'auth.token_url',
      'VALIDATION_FORMAT',
    ],
    [
      'token_url loopback',
      { auth: oauth({ token_url: 'http://127.0.0.1/t' }) },
      'auth.token_url',
      'VALIDATION_FORMAT',
    ],
    [
      'client_id missing',
      { auth: oauth({ client_id: undefined }) },
      'auth.client_id',
      'VALIDATION_REQUIRED',
    ],
    [
      'client_secret missing',
      { auth: oauth({ client_secret: undefined }) },
      'auth.client_secret',
      'VALIDATION_REQUIRED',
    ],
    [
      'client_secret not a string',
      { auth: oauth({ client_secret: 7 }) },
      'auth.client_secret',
      'VALIDATION_TYPE',
    ],
    [
      'client_auth unknown',
      { auth: oauth({ client_auth: 'jwt' }) },
      'auth.client_auth',
      'VALIDATION_INCLUSION',
    ],
    ['auth unknown key', { auth: oauth({ grant: 'x' }) }, 'auth.grant', 'VALIDATION_FORMAT'],
    ['tls not an object', { tls: [] }, 'tls', 'VALIDATION_TYPE'],
    [
      'certificate not PEM',
      { tls: mtls({ client_certificate: 'hello' }) },
      'tls.client_certificate',
      'VALIDATION_FORMAT',
    ],
    [
      'certificate corrupt',
      { tls: mtls({ client_certificate: corrupt(pki.client.certificate) }) },
      'tls.client_certificate',
      'VALIDATION_FORMAT',
    ],
    ['key not PEM', { tls: mtls({ client_key: 'hello' }) }, 'tls.client_key', 'VALIDATION_FORMAT'],
    [
      'key corrupt',
      { tls: mtls({ client_key: corrupt(pki.client.key) }) },
      'tls.client_key',
      'VALIDATION_FORMAT',
    ],
    [
      'key of another certificate',
      { tls: mtls({ client_key: pki.stranger.key }) },
      'tls.client_key',
      'VALIDATION_FORMAT',
    ],
    [
      'key missing',
      { tls: mtls({ client_key: undefined }) },
      'tls.client_key',
      'VALIDATION_REQUIRED',
    ],
    [
      'ca corrupt',
      { tls: mtls({ ca_certificate: corrupt(pki.ca.certificate) }) },
      'tls.ca_certificate',
      'VALIDATION_FORMAT',
    ],
    ['tls empty', { tls: {} }, 'tls.client_certificate', 'VALIDATION_REQUIRED'],
  ];

  it.for(RULES)('422 at create and update: %s', async ([, attributes, field, code], { api }) => {
    const created = await create(api, attributes);
    expect(created.status).toBe(422);
    expect(created.body.data[0]?.attributes.code).toBe('INVALID_FIELD');
    expect(problems(created.body)).toContainEqual([field, code]);
    const { id } = (await create(api, {})).body.data;
    const updated = await update(api, id, attributes);
    expect(updated.status).toBe(422);
    expect(problems(updated.body)).toContainEqual([field, code]);
  });

  it('takes a CA bundle alone, and client_auth body', async ({ api }) => {
    const created = await create(api, {
      auth: oauth({ client_auth: 'body', scope: null, audience: undefined }),
      tls: { ca_certificate: pki.ca.certificate + pki.server.certificate },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.attributes['auth']).toMatchObject({
      client_auth: 'body',
      scope: null,
      audience: null,
    });
    expect(created.body.data.attributes['tls']).toEqual({
      client_certificate: null,
      ca_certificate: pki.ca.certificate + pki.server.certificate,
    });
  });

  it('any auth or tls is stored or refused in the envelope, never a 5xx', async ({ api }) => {
    const pem = fc.constantFrom(
      pki.client.certificate,
      pki.client.key,
      pki.ca.certificate,
      pki.stranger.key,
      corrupt(pki.client.certificate),
      '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----',
      '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----',
    );
    const value = fc.oneof(fc.constant(null), fc.string(), pem, fc.integer(), fc.anything());
    const auth = fc.oneof(
      fc.anything(),
      fc.record(
        {
          kind: fc.oneof(fc.constant('oauth2_client_credentials'), value),
          token_url: fc.oneof(fc.webUrl(), fc.constant('http://[::1]/t'), value),
          client_id: value,
          client_secret: value,
          client_auth: fc.oneof(fc.constantFrom('basic', 'body'), value),
          scope: value,
          audience: value,
        },
        { requiredKeys: [] },
      ),
    );
    const tls = fc.oneof(
      fc.anything(),
      fc.record(
        {
          client_certificate: fc.oneof(pem, value),
          client_key: fc.oneof(pem, value),
          ca_certificate: fc.oneof(pem, value),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(auth, tls, async (authValue, tlsValue) => {
        const answer = await create(api, { auth: authValue, tls: tlsValue });
        expect([201, 422]).toContain(answer.status);
        if (answer.status === 422) {
          expect(answer.body.data[0]?.attributes.code).toMatch(/^INVALID_/);
        }
      }),
      { numRuns: 150 },
    );
  });
});
