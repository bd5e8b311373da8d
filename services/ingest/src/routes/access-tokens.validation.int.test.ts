import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { ERROR_STATUS, type ErrorCode } from '@herald/contract';
import { createTestToken } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

/** Bodies and parameters the token endpoints refuse: a documented 4xx, never a 500. */
const it = appTest(createApp);

let existingId: string;

it.beforeAll(async ({ api }) => {
  const created = await api.call('POST', '/access_tokens', document({ name: 'existing' }));
  existingId = created.body.data.id;
});

function document(
  attributes: Record<string, unknown>,
  role: unknown = { type: 'role', id: 'producer' },
  extra: Record<string, unknown> = {},
) {
  return {
    data: {
      type: 'access_token',
      attributes,
      relationships: { role: { data: role } },
      ...extra,
    },
  };
}

/** The entries of an error answer: code, and field when named. */
const entries = (body: any): { code: string; field?: string; detailCode?: string }[] =>
  body.data.map((entry: any) => ({
    code: entry.attributes.code,
    ...(entry.attributes.details.field ? { field: entry.attributes.details.field } : {}),
    ...(entry.attributes.details.code ? { detailCode: entry.attributes.details.code } : {}),
  }));

describe('POST /access_tokens refuses', () => {
  const cases: [string, unknown, ReturnType<typeof entries>][] = [
    ['a body that is not a document', [1, 2], [{ code: 'INVALID_FORMAT' }]],
    [
      'another type',
      { data: { type: 'webhook', attributes: { name: 'x' } } },
      [{ code: 'INVALID_FORMAT', field: 'data.type' }],
    ],
    [
      'an id',
      document({ name: 'x' }, undefined, { id: '7' }),
      [{ code: 'INVALID_FORMAT', field: 'data.id' }],
    ],
    [
      'an unknown member of data',
      document({ name: 'x' }, undefined, { links: {} }),
      [{ code: 'INVALID_FORMAT', field: 'data.links' }],
    ],
    [
      'another relationship',
      { data: { type: 'access_token', attributes: { name: 'x' }, relationships: { user: {} } } },
      [{ code: 'INVALID_FORMAT', field: 'data.relationships.user' }],
    ],
    [
      'no name and no role',
      { data: { type: 'access_token', attributes: {} } },
      [
        { code: 'INVALID_FIELD', field: 'name', detailCode: 'VALIDATION_REQUIRED' },
        { code: 'INVALID_FIELD', field: 'role', detailCode: 'VALIDATION_REQUIRED' },
      ],
    ],
    [
      'a blank name',
      document({ name: '  ' }),
      [{ code: 'INVALID_FIELD', field: 'name', detailCode: 'VALIDATION_LENGTH' }],
    ],
    [
      'a name with a newline',
      document({ name: 'a\nb' }),
      [{ code: 'INVALID_FIELD', field: 'name', detailCode: 'VALIDATION_FORMAT' }],
    ],
    [
      'a name too long',
      document({ name: 'x'.repeat(256) }),
      [{ code: 'INVALID_FIELD', field: 'name', detailCode: 'VALIDATION_LENGTH' }],
    ],
    [
      'an unknown role',
      document({ name: 'x' }, { type: 'role', id: 'owner' }),
      [{ code: 'INVALID_FIELD', field: 'role', detailCode: 'VALIDATION_INCLUSION' }],
    ],
    [
      'a role linkage of another type',
      document({ name: 'x' }, { type: 'user', id: 'admin' }),
      [{ code: 'INVALID_FIELD', field: 'role', detailCode: 'VALIDATION_INCLUSION' }],
    ],
    [
      'a token without the API',
      document({ name: 'x', can_access_cma: false }),
      [{ code: 'INVALID_FIELD', field: 'can_access_cma', detailCode: 'VALIDATION_INCLUSION' }],
    ],
    [
      'an attribute tokens do not have',
      document({ name: 'x', token: 'hrld_chosen' }),
      [{ code: 'INVALID_ATTRIBUTES', field: 'token' }],
    ],
  ];
  it.for(cases)('%s', async ([, body, expected], { api }) => {
    const answer = await api.call('POST', '/access_tokens', body);
    expect(answer.status).toBe(422);
    expect(entries(answer.body)).toEqual(expected);
  });

  it('the CDA flags are taken and answered false: Herald has no Content Delivery API', async ({
    api,
  }) => {
    const answer = await api.call(
      'POST',
      '/access_tokens',
      document({ name: 'cda', can_access_cda: true, can_access_cda_preview: true }),
    );
    expect(answer.status).toBe(201);
    expect(answer.body.data.attributes).toMatchObject({
      can_access_cda: false,
      can_access_cda_preview: false,
      can_access_cma: true,
    });
  });
});

describe('the other token endpoints refuse', () => {
  it('404 for unknown and malformed ids, before any attribute error', async ({ api }) => {
    for (const id of ['999999', 'abc', '0', '1%00']) {
      for (const [method, path, body] of [
        ['GET', `/access_tokens/${id}`, undefined],
        ['PUT', `/access_tokens/${id}`, document({ name: '' })],
        ['DELETE', `/access_tokens/${id}`, undefined],
        ['POST', `/access_tokens/${id}/regenerate_token`, undefined],
      ] as const) {
        const answer = await api.call(method, path, body);
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(answer.body.data[0].attributes.code).toBe('NOT_FOUND');
      }
    }
  });

  it('422 INVALID_FORMAT for an update whose data.id is not the URL one', async ({ api }) => {
    const answer = await api.call(
      'PUT',
      `/access_tokens/${existingId}`,
      document({ name: 'x' }, undefined, { id: '1' }),
    );
    expect(entries(answer.body)).toEqual([{ code: 'INVALID_FORMAT', field: 'data.id' }]);
  });

  it('422 INVALID_PARAMS for query parameters the endpoints do not take', async ({ api }) => {
    for (const path of ['/access_tokens?page[limit]=5', '/roles?filter[x]=1']) {
      const answer = await api.call('GET', path);
      expect(answer.status).toBe(422);
      expect(answer.body.data[0].attributes.code).toBe('INVALID_PARAMS');
    }
  });

  it('403 for the other roles', async ({ api, db }) => {
    for (const role of ['read_only', 'producer'] as const) {
      const other = api.as(await createTestToken(db, role));
      for (const [method, path] of [
        ['GET', '/access_tokens'],
        ['POST', '/access_tokens'],
        ['GET', '/roles'],
        ['DELETE', `/access_tokens/${existingId}`],
      ] as const) {
        expect((await other.call(method, path)).status, `${role} ${method} ${path}`).toBe(403);
      }
    }
  });
});

const pick = <T>(...values: T[]) => fc.constantFrom(...values);
const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null)),
    pick('admin', 'read_only', 'producer', 'role', 'access_token', ''),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.string(), tie('v'), { maxKeys: 3 }),
  ),
})).v;
const attributes = fc.record(
  {
    name: fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), value),
    can_access_cma: fc.oneof(fc.boolean(), value),
    can_access_cda: fc.oneof(fc.boolean(), value),
    can_access_cda_preview: fc.oneof(fc.boolean(), value),
    token: value,
  },
  { requiredKeys: [] },
);
const linkage = fc.oneof(
  fc.record(
    { type: fc.oneof(pick('role'), value), id: fc.oneof(pick('admin', 'producer'), value) },
    { requiredKeys: [] },
  ),
  value,
);
const body = fc.oneof(
  fc.record(
    {
      data: fc.record(
        {
          type: fc.oneof(pick('access_token'), value),
          id: value,
          attributes: fc.oneof(attributes, value),
          relationships: fc.oneof(
            fc.record({ role: fc.oneof(fc.record({ data: linkage }), value) }),
            value,
          ),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  ),
  value,
);

describe('hostile bodies', () => {
  it('any body sent to create or update gets a 2xx or a documented 4xx in the envelope', async ({
    api,
  }) => {
    await fc.assert(
      fc.asyncProperty(body, pick('POST', 'PUT'), async (sent, method) => {
        const path = method === 'POST' ? '/access_tokens' : `/access_tokens/${existingId}`;
        const answer = await api.call(method, path, sent);
        if (answer.status < 300) {
          expect(answer.body.data.type).toBe('access_token');
          return;
        }
        expect(answer.status).toBeLessThan(500);
        for (const entry of answer.body.data) {
          expect(entry.type).toBe('api_error');
          expect(ERROR_STATUS[entry.attributes.code as ErrorCode]).toBeDefined();
        }
      }),
      { numRuns: 300 },
    );
  });
});
