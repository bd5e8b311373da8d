import { describe, expect } from 'vitest';
import { ApiError, buildClient } from '@datocms/cma-client-node';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from './app.js';

// The official DatoCMS client with DOCS_URL unset (the default): `doc_url` is a link to the
// reference this Herald serves (#32 item 5), and the client reads the error as before.
const it = appTest(createApp, { http: { docsUrl: undefined } }).extend('client', ({ api }) =>
  buildClient({ apiToken: api.token, baseUrl: api.url, autoRetry: false }),
);

describe('@datocms/cma-client-node and doc_url', () => {
  it("finds the error by code, and its doc_url leads to the code's anchor", async ({
    api,
    client,
  }) => {
    const error = await client.webhooks.find('999999').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    const found = (error as ApiError).findError('NOT_FOUND');
    expect(found?.attributes.doc_url).toBe(`${api.url}/docs/errors#NOT_FOUND`);
    const reference = await fetch(found!.attributes.doc_url);
    expect(reference.status).toBe(200);
    expect(await reference.text()).toContain('<a id="NOT_FOUND"></a>');
  });
});
