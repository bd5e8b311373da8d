import { describe, expect } from 'vitest';
import { ApiError, buildClient } from '@datocms/cma-client-node';
import { registerBootstrapToken } from '@herald/store';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/**
 * The official DatoCMS client manages Herald's tokens (docs/api.md, Access tokens). Tokens are
 * trusted for a minute here, as a long AUTH_CACHE_TTL_MS would: a change must still apply at once.
 */
const it = appTest(createApp, { http: { authCacheTtlMs: 60_000 } }).extend('client', ({ api }) =>
  buildClient({ apiToken: api.token, baseUrl: api.url, autoRetry: false }),
);

const BOOTSTRAP = 'hrld_admin_from-the-configuration-0123456789';
let bootstrapId: string;

it.beforeAll(async ({ db }) => {
  bootstrapId = (await registerBootstrapToken(db, { token: BOOTSTRAP, name: 'HERALD_ADMIN_TOKEN' }))
    .record.id;
});

/** A model's creation: the smallest event a producer can post. */
const modelEvent = (id: string) => ({
  data: [
    {
      type: 'event',
      attributes: {
        entity_type: 'item_type',
        event_type: 'create',
        entity: { type: 'item_type', id, attributes: { name: id, api_key: id } },
        related_entities: [],
      },
    },
  ],
});

type Client = ReturnType<typeof buildClient>;
/** The flags DatoCMS's client types ask for; Herald's tokens are all for its API. */
const API_ONLY = { can_access_cda: false, can_access_cda_preview: false, can_access_cma: true };

/** Creates a token with the official client, as its documentation does. */
const createToken = (client: Client, name: string, role: string) =>
  client.accessTokens.create({ name, ...API_ONLY, role: { type: 'role', id: role } });

/** The client's error, which the test expects the call to throw. */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('@datocms/cma-client-node', () => {
  it('roles.list: the three built-in roles, their ids their names', async ({ client }) => {
    const roles = await client.roles.list();
    expect(roles.map((role) => [role.id, role.name])).toEqual([
      ['admin', 'admin'],
      ['read_only', 'read_only'],
      ['producer', 'producer'],
    ]);
    expect(roles[0]).toMatchObject({ can_manage_access_tokens: true, can_manage_webhooks: true });
    expect(roles[2]).toMatchObject({ can_manage_access_tokens: false });
    expect(await client.roles.find('read_only')).toMatchObject({ id: 'read_only' });
    expect((await failure(client.roles.find('owner'))).errors[0]!.attributes.code).toBe(
      'NOT_FOUND',
    );
  });

  it('creates a producer token that posts an event; its value is shown once', async ({
    client,
    api,
  }) => {
    const created = await createToken(client, 'CMS publisher', 'producer');
    expect(created).toMatchObject({
      type: 'access_token',
      name: 'CMS publisher',
      hardcoded_type: null,
      can_access_cma: true,
      last_cma_access: 'never',
      role: { type: 'role', id: 'producer' },
    });
    expect(created.token).toMatch(/^hrld_[A-Za-z0-9_-]{32}$/);
    const producer = api.as(created.token!);
    const posted = await producer.call('POST', '/events', modelEvent('article'));
    expect(posted.status).toBe(202);
    // A producer may not manage tokens.
    expect((await producer.call('GET', '/access_tokens')).status).toBe(403);

    const found = await client.accessTokens.find(created.id);
    expect(found).toMatchObject({
      name: 'CMS publisher',
      token: null,
      last_cma_access: 'today',
      // Extension: enough of the value to recognize it.
      token_hint: `${created.token!.slice(0, 9)}…`,
    });
  });

  it('lists every active token, the bootstrap one included, without their values', async ({
    client,
  }) => {
    const tokens = await client.accessTokens.list();
    expect(tokens.map((token) => [token.name, token.role?.id, token.hardcoded_type])).toEqual([
      ['HERALD_ADMIN_TOKEN', 'admin', 'bootstrap'],
      ['test-admin', 'admin', null],
      ['CMS publisher', 'producer', null],
    ]);
    expect(tokens.every((token) => token.token === null)).toBe(true);
  });

  it('updates a name and a role; the new role applies at once', async ({ client, api }) => {
    const { id, token } = await createToken(client, 'reader', 'read_only');
    const reader = api.as(token!);
    expect((await reader.call('POST', '/events', modelEvent('page'))).status).toBe(403);
    const renamed = await client.accessTokens.update(id, {
      name: 'feeder',
      ...API_ONLY,
    });
    expect(renamed).toMatchObject({ name: 'feeder', role: { id: 'read_only' } });
    const moved = await client.accessTokens.update(id, {
      name: 'feeder',
      ...API_ONLY,
      role: { type: 'role', id: 'producer' },
    });
    expect(moved).toMatchObject({ name: 'feeder', role: { id: 'producer' } });
    expect((await reader.call('POST', '/events', modelEvent('page'))).status).toBe(202);
  });

  it('regenerates a value: shown once, the old one stops working at once', async ({
    client,
    api,
  }) => {
    const { id, token: old } = await createToken(client, 'rotated', 'producer');
    expect((await api.as(old!).call('POST', '/events', modelEvent('a'))).status).toBe(202);
    const regenerated = await client.accessTokens.regenerateToken(id);
    expect(regenerated).toMatchObject({ id, name: 'rotated', role: { id: 'producer' } });
    expect(regenerated.token).toMatch(/^hrld_/);
    expect(regenerated.token).not.toBe(old);
    expect((await api.as(old!).call('POST', '/events', modelEvent('b'))).status).toBe(401);
    const fresh = api.as(regenerated.token!);
    expect((await fresh.call('POST', '/events', modelEvent('c'))).status).toBe(202);
  });

  it('destroys (revokes) a token: it stops working at once and is no longer found', async ({
    client,
    api,
  }) => {
    const { id, token } = await createToken(client, 'short-lived', 'admin');
    const other = api.as(token!);
    expect((await other.call('GET', '/access_tokens')).status).toBe(200);
    expect(await client.accessTokens.destroy(id)).toMatchObject({ id, name: 'short-lived' });
    expect((await other.call('GET', '/access_tokens')).status).toBe(401);
    const error = await failure(client.accessTokens.find(id));
    expect(error.errors[0]!.attributes.code).toBe('NOT_FOUND');
    expect((await failure(client.accessTokens.destroy(id))).errors[0]!.attributes.code).toBe(
      'NOT_FOUND',
    );
  });

  it("leaves the bootstrap token's name, role and value to the configuration", async ({
    client,
  }) => {
    const update = await failure(
      client.accessTokens.update(bootstrapId, {
        name: 'renamed',
        ...API_ONLY,
      }),
    );
    expect(update.findError('NON_EDITABLE_ACCESS_TOKEN')).toBeDefined();
    expect(update.response.status).toBe(422);
    const regenerate = await failure(client.accessTokens.regenerateToken(bootstrapId));
    expect(regenerate.findError('NON_EDITABLE_ACCESS_TOKEN')).toBeDefined();
  });

  it('never revokes or demotes the last active admin token: 422 LAST_ADMIN_TOKEN', async ({
    client,
    api,
  }) => {
    const own = (await client.accessTokens.list()).find((token) => token.name === 'test-admin')!;
    // The bootstrap token goes, then the test's own admin token is the last one.
    await client.accessTokens.destroy(bootstrapId);
    expect((await api.as(BOOTSTRAP).call('GET', '/roles')).status).toBe(401);
    const destroy = await failure(client.accessTokens.destroy(own.id));
    expect(destroy.response.status).toBe(422);
    expect(destroy.findError('LAST_ADMIN_TOKEN')).toBeDefined();
    const demote = await failure(
      client.accessTokens.update(own.id, {
        name: own.name,
        ...API_ONLY,
        role: { type: 'role', id: 'read_only' },
      }),
    );
    expect(demote.findError('LAST_ADMIN_TOKEN')).toBeDefined();
    expect(await client.accessTokens.find(own.id)).toMatchObject({ role: { id: 'admin' } });
    // Still an admin: the refused changes changed nothing.
    expect((await api.call('GET', '/access_tokens')).status).toBe(200);
  });
});
