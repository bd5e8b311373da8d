import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Webhook as SignedMessages } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCidrList } from '@herald/contract';
import { apiDocument, ingestPublicRouters, ingestRouter, type IngestDeps } from '@herald/ingest';
import { readRouter } from '@herald/read';
import { findWebhook } from '@herald/store';
import { EnvironmentResolver, createApiApp, type Redis } from '@herald/runtime';
import {
  createTestDb,
  createTestToken,
  fieldEntity,
  itemEvent as itemEventOf,
  makeTestPki,
  modelEvent,
  serve,
  startReceiver,
  testDeps,
  testRedis,
  type Receiver,
  type TestDb,
  type TestServer,
  waitFor,
} from '@herald/testkit';
import { rabbitQueue, startE2eDelivery, type DeliveryRuntime } from '@herald/delivery/testing';

/**
 * The console, end to end: the built console (services/console/dist) served by a real Herald
 * (ingest + read on one port, as the standalone process and the gateway serve them) on real
 * Postgres and Redis, delivery workers sending to a real local receiver, driven in Debian's
 * headless Chromium by playwright-core. Screenshots of the main screens go to docs/screenshots
 * when UPDATE_SCREENSHOTS=1 (the README shows them), else to a temporary folder, so that running
 * the tests leaves the working tree as it was.
 */

const CHROMIUM = '/usr/bin/chromium';
const CONSOLE_DIR = fileURLToPath(new URL('../../../console/dist', import.meta.url));
const UPDATE_SCREENSHOTS = process.env['UPDATE_SCREENSHOTS'] === '1';
const SCREENSHOTS = UPDATE_SCREENSHOTS
  ? fileURLToPath(new URL('../../../../docs/screenshots/', import.meta.url))
  : `${mkdtempSync(join(tmpdir(), 'herald-console-screenshots-'))}/`;

let t: TestDb;
let redis: Redis;
let delivery: DeliveryRuntime;
let herald: TestServer;
/** A real endpoint that records what delivery sends it. */
let receiver: Receiver;
let browser: Browser;
let page: Page;
let admin: string;
/** The webhook the console creates ("Publications to the CDN"). */
let cdn: string;

async function api(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${herald.url}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${admin}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates a webhook through the API (no headers, events or payload unless given); its id. */
async function createWebhook(attributes: Record<string, unknown>): Promise<string> {
  const defaults = { headers: {}, events: [], custom_payload: null };
  const credentials = { http_basic_user: null, http_basic_password: null };
  const created = await api('POST', '/webhooks', {
    data: { type: 'webhook', attributes: { ...defaults, ...credentials, ...attributes } },
  });
  return created.data.id as string;
}

const field = (apiKey: string, fieldType: string, position: number, localized = false) =>
  fieldEntity(apiKey, fieldType, { position, localized, id: `f-${apiKey}` });

const itemEvent = (
  eventType: string,
  id: string,
  attributes: Record<string, unknown>,
  eventId?: string,
  model = 'article',
) => itemEventOf(eventType, id, attributes, { model, ...(eventId ? { eventId } : {}) });

/**
 * Opens the editor on a new webhook named `name` whose one entry takes record updates only (no
 * publish, no unpublish), sent to `url`; the entry's locator.
 */
async function newUpdatesWebhook(name: string, url: string) {
  await page.goto(`${herald.url}/console/#/webhooks/new`);
  await page.getByRole('heading', { name: 'New webhook' }).waitFor();
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('URL', { exact: true }).fill(url);
  const entry = page.locator('[data-events-index="0"]');
  await entry.getByLabel('update', { exact: true }).check();
  await entry.getByLabel('publish', { exact: true }).uncheck();
  await entry.getByLabel('unpublish', { exact: true }).uncheck();
  return entry;
}

/** Creates the webhook open in the editor, named `name`: its id, once its page shows. */
async function createInEditor(name: string): Promise<string> {
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.getByRole('heading', { name }).waitFor();
  return /#\/webhooks\/(\d+)/.exec(page.url())![1]!;
}

/** Waits until `text` is among the errors shown beside the editor's field `id`. */
async function errorShown(id: string, text: string): Promise<void> {
  await page.locator(`#${id}-errors`).getByText(text).waitFor();
}

/** A webhook's attributes as GET /webhooks/:id answers them. */
async function storedWebhook(id: string): Promise<any> {
  return (await api('GET', `/webhooks/${id}`)).data.attributes;
}

/** Signs in with the admin token unless the page already is (a test run alone). */
async function signedIn(): Promise<void> {
  await page.goto(`${herald.url}/console/#/webhooks`);
  const token = page.getByLabel('API token');
  const list = page.getByRole('heading', { name: 'Webhooks' });
  await expect.poll(async () => (await token.count()) + (await list.count())).toBeGreaterThan(0);
  if ((await token.count()) === 0) return;
  await token.fill(admin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await list.waitFor();
}

/** The header's section links (a breadcrumb may carry the same name). */
const nav = () => page.getByRole('navigation', { name: 'Sections' });

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: false });
}

beforeAll(async () => {
  // Both are made by the README's test command (scripts/test.sh builds and installs Chromium).
  if (!existsSync(`${CONSOLE_DIR}/index.html`)) {
    throw new Error(`The console is not built (${CONSOLE_DIR}): run pnpm build`);
  }
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: run scripts/ensure-chromium.sh (apt-get install chromium)`,
    );
  }
  await mkdir(SCREENSHOTS, { recursive: true });

  t = await createTestDb('postgres');
  redis = testRedis();
  const base = testDeps(t.db, redis);
  const allow = parseCidrList('127.0.0.0/8');
  const deps: IngestDeps = {
    ...base,
    environments: new EnvironmentResolver(t.db),
    ssrfAllowCidrs: allow,
    siteId: 'console-e2e',
    consoleDir: CONSOLE_DIR,
  };
  // What services/standalone serves: read and ingest on one port, the console and the API's
  // document before auth.
  herald = await serve(
    createApiApp(deps, [readRouter(deps), ingestRouter(deps)], ingestPublicRouters(deps)),
  );
  admin = await createTestToken(t.db, 'admin');

  receiver = await startReceiver((_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end('{"received":true}');
  });

  delivery = await startE2eDelivery({
    db: t.db,
    redisPrefix: base.redisPrefix,
    siteId: 'console-e2e',
    indexReloadMs: 250,
    registry: base.metrics.registry,
  });

  // Records to browse: a model with a block field, published and draft records.
  await api('POST', '/events', {
    data: [
      modelEvent('section', { modular_block: true }, [field('heading', 'string', 0)]),
      modelEvent('article', { draft_mode_active: true }, [
        field('title', 'string', 0),
        field('views', 'integer', 1),
        field('body', 'text', 2),
        field('content', 'rich_text', 3),
      ]),
    ],
  });
  const section = (id: string, heading: string) => ({
    type: 'item',
    id,
    attributes: { heading },
    relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
  });
  await api('POST', '/events', {
    data: [
      itemEvent('publish', 'welcome', {
        title: 'Welcome to Herald',
        views: 120,
        body: 'Webhooks for every record change.',
        content: [section('welcome-intro', 'Introduction'), section('welcome-usage', 'Usage')],
      }),
      itemEvent('publish', 'release-notes', {
        title: 'Release notes',
        views: 42,
        body: 'What changed in this release.',
        content: [],
      }),
      itemEvent('create', 'draft-idea', {
        title: 'A draft idea',
        views: 0,
        body: 'Not published yet.',
        content: [],
      }),
    ],
  });

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
}, 90_000);

afterAll(async () => {
  if (!UPDATE_SCREENSHOTS) rmSync(SCREENSHOTS, { recursive: true, force: true });
  await browser?.close();
  await delivery?.close();
  await herald?.close();
  await receiver?.close();
  await redis?.quit();
  await t?.cleanup();
});

describe('the web console in Chromium', { timeout: 60_000 }, () => {
  it('refuses a wrong token with a clear 401 message', async () => {
    await page.goto(`${herald.url}/console/`);
    await expect.poll(() => page.getByRole('heading', { name: 'Herald console' }).count()).toBe(1);
    await page.getByLabel('API token').fill('not-a-real-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Herald refused this API token (401)').waitFor();
    await shot('sign-in');
    expect(page.url()).not.toContain('not-a-real-token');
  });

  it('signs in, creates a webhook with a template and sees the live preview follow it', async () => {
    await page.getByLabel('API token').fill(admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await page.getByText('No webhooks yet.').waitFor();
    // The token stays out of the URL.
    expect(page.url()).not.toContain(admin);

    await page.getByRole('link', { name: 'New webhook' }).first().click();
    await page.getByRole('heading', { name: 'New webhook' }).waitFor();
    await page.getByLabel('Name').fill('Publications to the CDN');

    // A refused address: the server's INVALID_FIELD shows beside the URL field, live.
    await page.getByLabel('URL', { exact: true }).fill('http://10.0.0.1/hook');
    await errorShown('wh-url', 'refused address');

    await page.getByLabel('URL', { exact: true }).fill(`${receiver.url}/hooks/{{entity_type}}`);
    await page.getByLabel('Send a custom payload').check();
    const template = page.getByLabel('Template', { exact: true });
    await template.fill('{"event": "{{event_type}}", "record": "{{entity.id}}"}');
    const body = page.getByTestId('preview-body');
    await body.getByText('"record": "sample-record-id"').waitFor();
    await expect
      .poll(() => page.getByTestId('preview-url').textContent())
      .toBe(`POST ${receiver.url}/hooks/item`);
    await template.fill(
      '{"event": "{{entity_type}}.{{event_type}}", "record": "{{entity.id}}", "title": "{{entity.attributes.title.en}}"}',
    );
    await body.getByText('"event": "item.publish"').waitFor();
    await body.getByText('"title": "Hello from Herald"').waitFor();
    // A template error is the server's, beside the editor.
    await template.fill('{"record": "{{#entity}}"}');
    await errorShown('wh-custom-payload', 'not a valid Mustache template');
    await template.fill(
      '{"event": "{{entity_type}}.{{event_type}}", "record": "{{entity.id}}", "title": "{{entity.attributes.title}}"}',
    );
    await body.getByText('"record": "sample-record-id"').waitFor();
    await shot('webhook-editor');

    // A credential header, and one the webhook lists to hide: the preview shows both as the call
    // log will keep them.
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 1 name').fill('X-Api-Key');
    await page.getByLabel('Header 1 value').fill('key-e2e-123');
    await page.getByRole('button', { name: 'Add header' }).click();
    await page.getByLabel('Header 2 name').fill('X-Tenant');
    await page.getByLabel('Header 2 value').fill('tenant-e2e');
    await page.getByLabel('Hide in the call log').fill('X-Tenant');
    const previewHeader = (name: string) =>
      page
        .locator('.preview-body tr', {
          has: page.locator('th', { hasText: new RegExp(`^${name}$`) }),
        })
        .locator('code');
    await expect.poll(() => previewHeader('X-Api-Key').textContent()).toBe('***');
    await expect.poll(() => previewHeader('X-Tenant').textContent()).toBe('***');

    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('heading', { name: 'Publications to the CDN' }).waitFor();
    const id = /#\/webhooks\/(\d+)/.exec(page.url())?.[1];
    expect(id).toBeDefined();
    cdn = id!;
    const stored = await api('GET', `/webhooks/${id}`);
    expect(stored.data.attributes.custom_payload).toContain('{{entity.attributes.title}}');
    expect(stored.data.attributes.events).toEqual([
      { entity_type: 'item', event_types: ['publish', 'unpublish'] },
    ]);
    expect(stored.data.attributes.redact_headers).toEqual(['X-Tenant']);
    // The delivery workers learn of it (pub/sub), then events match it.
    await waitFor(() => {
      if (!delivery.index.has(id!)) throw new Error('not indexed yet');
    });
  });

  it('shows the call of a triggered event, its request and response, and resends it', async () => {
    await api('POST', '/events', {
      data: [
        itemEvent(
          'publish',
          'launch',
          { title: 'Launch day', views: 7, body: 'We are live.', content: [] },
          'evt-launch-1',
        ),
      ],
    });
    await waitFor(() => expect(receiver.requests.length).toBe(1), {
      timeout: 15_000,
      interval: 50,
    });
    expect(receiver.requests[0]!.url).toBe('/hooks/item');
    expect(receiver.requests[0]!.body).toBe(
      '{"event": "item.publish", "record": "launch", "title": "Launch day"}',
    );

    await nav().getByRole('link', { name: 'Call log' }).click();
    await page.getByRole('heading', { name: 'Call log' }).waitFor();
    const row = page.locator('tr[data-call-id]').first();
    await row.waitFor();
    // The log refreshes by itself until the call has its outcome.
    await row.getByText('Success').waitFor({ timeout: 15_000 });
    await expect.poll(() => row.textContent()).toContain('item.publish');
    // Filters: a status with no calls empties the list, the matching one brings it back.
    await page.getByLabel('Status').selectOption('failed');
    await page.getByText('No calls match these filters.').waitFor();
    await page.getByLabel('Status').selectOption('success');
    await page.locator('tr[data-call-id]').first().waitFor();
    await page.getByLabel('Entity type').selectOption('item');
    await page.getByLabel('Event type').selectOption('publish');
    await page.locator('tr[data-call-id]').first().waitFor();
    await shot('call-log');

    await page.locator('tr[data-call-id] a').first().click();
    await page.getByRole('heading', { name: /^Call #\d+$/ }).waitFor();
    await expect.poll(() => page.getByTestId('response-status').textContent()).toBe('200');
    await page.getByLabel('Request body').getByText('"record": "launch"').waitFor();
    await page.getByLabel('Response body').getByText('"received": true').waitFor();
    await page.getByText('webhook-signature').waitFor();
    // Stored redacted; the receiver got the values.
    for (const name of ['X-Api-Key', 'X-Tenant']) {
      const value = page
        .locator('tr', { has: page.locator('th', { hasText: new RegExp(`^${name}$`) }) })
        .locator('code');
      await expect.poll(() => value.textContent()).toBe('***');
    }
    expect(receiver.requests[0]!.headers['x-api-key']).toBe('key-e2e-123');
    expect(receiver.requests[0]!.headers['x-tenant']).toBe('tenant-e2e');
    await shot('call-detail');

    const callId = receiver.requests[0]!.headers['webhook-id'];
    await page.getByRole('button', { name: 'Resend' }).click();
    await page.getByText(/resent/).waitFor();
    await waitFor(() => expect(receiver.requests.length).toBe(2), {
      timeout: 15_000,
      interval: 50,
    });
    expect(receiver.requests[1]!.headers['webhook-id']).toBe(callId);
    expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body);
    // The attempt history shows both: the first attempt, then the resend.
    const attempts = page.getByRole('list', { name: 'Attempts' });
    const second = attempts.locator('li[data-attempt="2"]');
    await second.getByText('Resend').waitFor({ timeout: 15_000 });
    const first = attempts.locator('li[data-attempt="1"]');
    await expect.poll(() => first.textContent()).toMatch(/#1 First attempt.*Success.*HTTP 200/);
    // The timeline says how long each took and how long after the previous one it went.
    await expect.poll(() => first.textContent()).toMatch(/\d+(\.\d)? ms/);
    await expect.poll(() => second.textContent()).toMatch(/Resend.*Success.*HTTP 200.* after #1/);
    await attempts.scrollIntoViewIfNeeded();
    await shot('call-attempts');
  });

  it("finds a record's events by its id, and where each event's calls stand", async () => {
    await nav().getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    await page.getByLabel('Entity id').fill('launch');
    await page.getByRole('button', { name: 'Find' }).click();
    // Only the record's event once the search is applied (every event was listed before it).
    await expect.poll(() => page.locator('tr[data-event-id]').count()).toBe(1);
    const row = page.locator('tr[data-event-id="evt-launch-1"]');
    await expect.poll(() => row.textContent()).toContain('item.publish');

    await row.getByRole('link', { name: 'evt-launch-1' }).click();
    await page.getByRole('heading', { name: 'Event evt-launch-1' }).waitFor();
    const call = page.getByRole('table', { name: 'Webhook calls' }).locator('tr[data-call-id]');
    await call.getByText('Publications to the CDN').waitFor();
    // The first attempt and the resend above, the last one answered 200.
    await expect.poll(() => call.textContent()).toMatch(/Success\s*2\s*200/);
    await page.getByLabel('Entity', { exact: true }).getByText('"title": "Launch day"').waitFor();
    await call.getByRole('link', { name: /^#\d+$/ }).click();
    await page.getByRole('heading', { name: /^Call #\d+$/ }).waitFor();
  });

  it('lists the webhook with its last call and success rate, and previews a received event', async () => {
    await nav().getByRole('link', { name: 'Webhooks' }).click();
    const row = page.locator('tr[data-webhook-id]').first();
    await row.getByText('Publications to the CDN').waitFor();
    await row.getByText('Enabled').waitFor();
    await row.getByText('Success').waitFor();
    await row.getByText('100 %').waitFor();
    await shot('webhooks');

    // The preview of a real, chosen event renders what was delivered.
    await row.getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Event', { exact: true }).fill('evt-launch-1');
    await page.getByTestId('preview-body').getByText('"title": "Launch day"').waitFor();

    // Disable from the list: the state and reason column follow.
    await page.getByRole('link', { name: '← Webhooks' }).click();
    await row.getByRole('button', { name: /^Disable/ }).click();
    await row.getByText('Disabled').waitFor();
    await row.getByRole('button', { name: /^Enable/ }).click();
    await row.getByText('Enabled').waitFor();
  });

  it('shows a webhook page: health over a window, charts and the circuit state', async () => {
    await page.goto(`${herald.url}/console/#/webhooks/${cdn}?window=1h`);
    await page.getByRole('heading', { name: 'Publications to the CDN' }).waitFor();
    await expect.poll(() => page.getByTestId('success-rate').textContent()).toBe('100 %');
    await expect.poll(() => page.getByTestId('circuit').textContent()).toBe('Closed');
    expect(await page.getByTestId('failure-streak').textContent()).toBe('None');
    expect(await page.getByTestId('backlog').textContent()).toBe('Empty');
    await page.getByText('No notices about this webhook.').waitFor();
    await expect.poll(() => page.getByTestId('latency').textContent()).toMatch(/^[\d.]+ m?s \//);
    // Both charts are drawn by uPlot (its canvas and legend), with a summary in words.
    const deliveries = page.locator('[data-chart="deliveries"]');
    await deliveries.locator('.uplot canvas').waitFor();
    await deliveries.locator('.u-legend').getByText('Succeeded').waitFor();
    await deliveries.getByText('2 succeeded and 0 failed attempts in the last 1 hour.').waitFor();
    const latency = page.locator('[data-chart="latency"]');
    await latency.locator('.uplot canvas').waitFor();
    await latency.getByText(/^p50 [\d.]+ m?s, p95/).waitFor();
    const canvas = await deliveries.locator('.uplot canvas').boundingBox();
    expect(canvas!.width).toBeGreaterThan(200);
    // The window switch reads another window.
    await page.getByRole('navigation', { name: 'Statistics window' }).getByText('7d').click();
    await page.getByText('Success rate (7d)').waitFor();
    expect(page.url()).toContain('window=7d');
    await page.getByRole('navigation', { name: 'Statistics window' }).getByText('1h').click();
    await page.getByText('Success rate (1h)').waitFor();
    await deliveries.locator('.uplot canvas').waitFor();
    await shot('webhook-page');
  });

  it('sends a test from the webhook page, follows its call and sees the circuit open', async () => {
    const down = await startReceiver((_req, res) => res.writeHead(503).end('down for maintenance'));
    try {
      const flaky = await createWebhook({
        name: 'Flaky endpoint',
        url: `${down.url}/hook`,
        delivery_policy: { circuit_failures: 2, circuit_cooldown_ms: 600_000 },
      });
      await page.goto(`${herald.url}/console/#/webhooks/${flaky}?window=1h`);
      await page.getByRole('heading', { name: 'Flaky endpoint' }).waitFor();
      await expect.poll(() => page.getByTestId('circuit').textContent()).toBe('Closed');
      const result = page.getByTestId('test-call');
      for (let sent = 1; sent <= 2; sent++) {
        await page.getByRole('button', { name: 'Send test' }).click();
        await expect.poll(() => down.requests.length, { timeout: 15_000 }).toBe(sent);
        await result.getByText('Failed').waitFor({ timeout: 15_000 });
        await result.getByText('HTTP 503').waitFor();
      }
      // Two failures in a row open this webhook's circuit (its delivery_policy says 2).
      await expect
        .poll(() => page.getByTestId('circuit').textContent(), { timeout: 20_000 })
        .toBe('Open');
      await page.getByText(/calls wait until/).waitFor();
      expect(await page.getByTestId('failure-streak').textContent()).toBe('2 in a row');
      await page
        .locator('[data-chart="deliveries"]')
        .getByText('0 succeeded and 2 failed')
        .waitFor();
      // Herald's notice of it (an event of entity type notice about this webhook) is listed.
      const notices = page.getByRole('list', { name: 'Notices' });
      await notices.getByText('Circuit opened').waitFor({ timeout: 15_000 });
      await notices.scrollIntoViewIfNeeded();
      await shot('webhook-page-circuit');

      // The test call's own page: its attempt, made by the test, failed with the 503.
      await result.getByRole('link', { name: 'Open the call and its attempts' }).click();
      await page.getByRole('heading', { name: /^Call #\d+$/ }).waitFor();
      const attempt = page.getByRole('list', { name: 'Attempts' }).locator('li[data-attempt="1"]');
      await expect.poll(() => attempt.textContent()).toMatch(/#1 Test.*Failed.*HTTP 503/);
      await attempt.scrollIntoViewIfNeeded();
      await shot('call-attempts-test');

      // The notice links to its event's page.
      await page.goBack();
      const noticeId = (
        await api('GET', `/events?filter[entity_type]=notice&filter[entity_id]=${flaky}`)
      ).data[0].id as string;
      await notices.getByRole('link', { name: 'The notice and its calls' }).click();
      expect(decodeURIComponent(page.url())).toContain(`#/events/${noticeId}`);
      await page.getByText('circuit_opened').first().waitFor();
    } finally {
      await down.close();
    }
  });

  it('edits the delivery policy, refusing values out of range before sending them', async () => {
    await page.goto(`${herald.url}/console/#/webhooks/${cdn}/edit`);
    await page.getByRole('heading', { name: 'Publications to the CDN' }).waitFor();
    const rate = page.getByLabel('Rate limit (requests per second)');
    const failures = page.getByLabel('Open the circuit after (failures in a row)');
    const cooldown = page.getByLabel('Circuit cool-down (ms)');
    await rate.fill('0');
    await errorShown('wh-policy-rate_limit_per_second', 'Must be a number from 0.01 to 10000');
    await failures.fill('2.5');
    await errorShown('wh-policy-circuit_failures', 'a whole number');
    expect(await failures.getAttribute('aria-invalid')).toBe('true');
    // Save refuses while the policy is out of range: nothing is sent.
    const saved = async () => (await api('GET', `/webhooks/${cdn}`)).data.attributes;
    const before = (await saved()).updated_at;
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.id))
      .toBe('wh-policy-rate_limit_per_second');
    expect((await saved()).updated_at).toBe(before);

    await rate.fill('5');
    await failures.fill('3');
    await cooldown.fill('90000');
    await page.getByText('= 1.5 min').waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Webhook saved').waitFor();
    expect((await saved()).delivery_policy).toEqual({
      rate_limit_per_second: 5,
      circuit_failures: 3,
      circuit_cooldown_ms: 90_000,
    });
    await page.locator('fieldset', { hasText: 'Endpoint health' }).scrollIntoViewIfNeeded();
    await shot('webhook-policy');
    // Emptied fields go back to the deployment's defaults.
    await rate.fill('');
    await failures.fill('');
    await cooldown.fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(async () => (await saved()).delivery_policy).toEqual({});
  });

  describe('bulk jobs', () => {
    let answer = 500;
    let target: Receiver;
    let hook: string;
    /** The calls of the bulk target, by status, as the API counts them. */
    const countCalls = async (status: string) =>
      (
        await api(
          'GET',
          `/webhook_calls?filter[fields][webhook_id][eq]=${hook}&filter[fields][status][eq]=${status}&page[limit]=1`,
        )
      ).meta.total_count as number;
    const updates = (ids: string[]) =>
      api('POST', '/events', {
        data: ids.map((id) =>
          itemEvent('update', id, { title: id, views: 1, body: '', content: [] }),
        ),
      });

    beforeAll(async () => {
      target = await startReceiver((_req, res) => res.writeHead(answer).end());
      hook = await createWebhook({
        name: 'Search indexer',
        url: `${target.url}/index`,
        events: [{ entity_type: 'item', event_types: ['update'] }],
        // Failed calls stay failed (no retry planned), so a bulk resend takes them.
        auto_retry: false,
      });
      await waitFor(() => {
        if (!delivery.index.has(hook)) throw new Error('not indexed yet');
      });
    });
    afterAll(() => target?.close());

    it('resends the failed calls the log shows, in one job with a live progress bar', async () => {
      await updates(['u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
      await expect.poll(() => countCalls('failed'), { timeout: 15_000 }).toBe(6);
      const failedIds = target.requests.map((r) => r.headers['webhook-id']).sort();
      answer = 200; // the endpoint is back

      await page.goto(`${herald.url}/console/#/calls?webhook=${hook}&status=failed`);
      await page.locator('tr[data-call-id]').first().waitFor();
      await page.getByRole('button', { name: 'Resend 6 matching calls' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel(/^Pace/).fill('0');
      await dialog.getByText('A pace is a number of calls per second above 0').waitFor();
      // Paced at 3 a second, so that the bar is seen moving.
      await dialog.getByLabel(/^Pace/).fill('3');
      await dialog.getByRole('button', { name: 'Start the resend' }).click();
      await page.getByRole('heading', { name: /^Job #\d+$/ }).waitFor();
      const jobId = /#\/jobs\/(\d+)/.exec(page.url())![1]!;
      const bar = page.getByRole('progressbar', { name: 'Job progress' });
      const progress = page.getByTestId('job-progress');
      await expect
        .poll(() => progress.textContent(), { timeout: 15_000, interval: 50 })
        .toMatch(/^[1-5] of 6 done/);
      expect(Number(await bar.getAttribute('aria-valuenow'))).toBeGreaterThan(0);
      expect(Number(await bar.getAttribute('aria-valuenow'))).toBeLessThan(100);
      await shot('bulk-job-progress');
      await page.locator('.job-panel').getByText('Completed').waitFor({ timeout: 15_000 });
      expect(await progress.textContent()).toBe('6 of 6 done (100 %)');
      expect(await page.getByTestId('job-succeeded').textContent()).toBe('6');
      expect(await bar.getAttribute('aria-valuenow')).toBe('100');
      // The same calls went again, with their webhook-ids; none is failed any more.
      const resent = target.requests.slice(6).map((r) => r.headers['webhook-id']);
      expect(resent.sort()).toEqual(failedIds);
      expect(await countCalls('failed')).toBe(0);
      const job = await api('GET', `/bulk_jobs/${jobId}`);
      expect(job.data.attributes).toMatchObject({
        kind: 'bulk_resend',
        filter: { webhook_id: hook, status: 'failed' },
        rate_per_second: 3,
      });

      // The recent jobs list it.
      await nav().getByRole('link', { name: 'Bulk jobs' }).click();
      await page.locator(`tr[data-job-row="${jobId}"]`).getByText('Completed').waitFor();
    });

    it('replays a time range from the webhook page and cancels it', async () => {
      await page.goto(`${herald.url}/console/#/webhooks/${hook}`);
      await page.getByRole('heading', { name: 'Search indexer' }).waitFor();
      const form = page.getByRole('form', { name: 'Replay events' });
      // Every stored event its entries match (the six updates), one every 2 seconds.
      await form.getByLabel(/^Pace/).fill('0.5');
      await form.getByRole('button', { name: 'Replay' }).click();
      const panel = page.locator('.job-panel').first();
      await panel.getByText('Running').waitFor({ timeout: 15_000 });
      await expect.poll(() => panel.getByTestId('job-progress').textContent()).toMatch(/of 6 done/);
      await panel.getByRole('button', { name: 'Cancel job' }).click();
      await panel.getByText('Cancelled').waitFor();
      const done = Number((await panel.getByTestId('job-progress').textContent())!.split(' ')[0]);
      expect(done).toBeLessThan(6);
      await page
        .getByRole('table', { name: 'Recent jobs' })
        .getByText('Replay #')
        .first()
        .waitFor();
    });

    it('offers to replay what a re-enabled webhook missed, in one click', async () => {
      await page.goto(`${herald.url}/console/#/webhooks/${hook}`);
      await page.getByRole('heading', { name: 'Search indexer' }).waitFor();
      await page.getByRole('button', { name: 'Disable' }).click();
      await page.getByRole('button', { name: 'Enable' }).waitFor();
      await waitFor(() => {
        if (delivery.index.has(hook)) throw new Error('still indexed');
      });
      const before = target.requests.length;
      await updates(['missed-1', 'missed-2']);
      await page.getByRole('button', { name: 'Enable' }).click();
      const offer = page.getByRole('button', { name: /^Replay what it missed \(since / });
      await offer.waitFor();
      await shot('replay-offer');
      await offer.click();
      const panel = page.locator('.job-panel').first();
      await panel.getByText('Completed').waitFor({ timeout: 15_000 });
      expect(await panel.getByTestId('job-progress').textContent()).toBe('2 of 2 done (100 %)');
      expect(await panel.getByTestId('job-succeeded').textContent()).toBe('2');
      // (The replay cancelled before may still finish the item it was sending: only the missed
      // events are this job's.)
      const replayed = target.requests
        .slice(before)
        .map((r) => JSON.parse(r.body).entity.id as string)
        .filter((id) => id.startsWith('missed-'));
      expect(replayed.sort()).toEqual(['missed-1', 'missed-2']);
    });
  });

  // After the bulk jobs: the replay there counts every stored item update.
  it('narrows a webhook on content and adds changes to its payload, errors beside their rows', async () => {
    const target = await startReceiver();
    try {
      const entry = await newUpdatesWebhook('Headline edits', `${target.url}/edits`);
      await entry.getByLabel('Changed fields').fill('title, Body');
      await entry.getByLabel('Locales').fill('en');
      const status = entry.getByRole('group', { name: 'Record status' });
      await status.getByLabel('draft').check();
      await status.getByLabel('updated').check();
      const addCondition = async (n: number, field: string, operator: string, value: string) => {
        await entry.getByRole('button', { name: 'Add field condition' }).click();
        await entry.getByLabel(`Condition ${n} field`).fill(field);
        await entry.getByLabel(`Condition ${n} operator`).selectOption(operator);
        await entry.getByLabel(`Condition ${n} value`).fill(value);
      };
      await addCondition(1, 'views', 'gte', '100');
      await addCondition(2, 'title', 'exists', 'yes');

      // The default payload has no `changes` until payload_changes is on; then the preview's
      // sample (its record's title was "Hello") shows the patch.
      const body = page.getByTestId('preview-body');
      await body.getByText('"entity_type": "item"').first().waitFor();
      expect(await body.textContent()).not.toContain('"changes"');
      expect(await page.getByTestId('preview-changes').count()).toBe(0);
      await page.getByLabel('Add changes').check();
      await body.getByText('"changes": [').waitFor();
      await body.getByText('"op": "replace"').waitFor();
      // Beside the body, one row an operation.
      const patch = page.getByTestId('preview-changes');
      await patch.getByText(/^replace \/title/).waitFor();
      await patch.getByText('"Hello from Herald"').waitFor();

      // The server's INVALID_FIELD entries, each beside its control.
      await page.getByRole('button', { name: 'Create webhook' }).click();
      await entry
        .locator('li[data-field="events.0.changed_fields.1"]')
        .getByText('"Body"')
        .waitFor();
      expect(await entry.getByLabel('Changed fields').getAttribute('aria-invalid')).toBe('true');
      const second = entry.locator('.filter-row', { has: page.getByLabel('Condition 2 field') });
      await second
        .locator('li[data-field="events.0.fields.title.exists"]')
        .getByText('"true" or "false"')
        .waitFor();
      expect(await second.getByLabel('Condition 2 value').getAttribute('aria-invalid')).toBe(
        'true',
      );
      const first = entry.locator('.filter-row', { has: page.getByLabel('Condition 1 field') });
      expect(await first.locator('li').count()).toBe(0);

      await entry.getByLabel('Changed fields').fill('title');
      await entry.getByLabel('Condition 2 value').fill('true');
      const id = await createInEditor('Headline edits');
      const expected = {
        entity_type: 'item',
        event_types: ['update'],
        changed_fields: ['title'],
        locales: ['en'],
        record_status: ['draft', 'updated'],
        fields: { views: { gte: '100' }, title: { exists: 'true' } },
      };
      const stored = () => storedWebhook(id);
      const created = await stored();
      expect(created.events).toEqual([expected]);
      expect(created.payload_changes).toBe(true);

      // The editor shows what is stored, and saving it unchanged keeps it as it was.
      await page.goto(`${herald.url}/console/#/webhooks/${id}/edit`);
      await page.getByRole('heading', { name: 'Headline edits' }).waitFor();
      expect(await entry.getByLabel('Changed fields').inputValue()).toBe('title');
      expect(await entry.getByLabel('Condition 1 value').inputValue()).toBe('100');
      expect(await entry.getByLabel('Condition 2 operator').inputValue()).toBe('exists');
      expect(await status.getByLabel('updated').isChecked()).toBe(true);
      expect(await page.getByLabel('Add changes').isChecked()).toBe(true);
      await page
        .getByTestId('preview-changes')
        .getByText(/^replace \/title/)
        .waitFor();
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Webhook saved').waitFor();
      const saved = await stored();
      expect(saved.events).toEqual([expected]);
      await entry.scrollIntoViewIfNeeded();
      await shot('webhook-field-aware');

      // Delivered: a title edit of a record with 500 views, with its JSON Patch.
      await waitFor(() => {
        if (!delivery.index.has(id)) throw new Error('not indexed yet');
      });
      await api('POST', '/events', {
        data: [
          modelEvent('headline', { draft_mode_active: true }, [
            field('title', 'string', 0),
            field('views', 'integer', 1),
          ]),
        ],
      });
      const story = (title: string) => ({ title, views: 500 });
      await api('POST', '/events', {
        data: [itemEvent('create', 'storm', story('Calm seas'), undefined, 'headline')],
      });
      await api('POST', '/events', {
        data: [itemEvent('update', 'storm', story('Storm warning'), undefined, 'headline')],
      });
      await waitFor(() => expect(target.requests).toHaveLength(1), { timeout: 15_000 });
      const sent = JSON.parse(target.requests[0]!.body);
      expect(sent).toMatchObject({ webhook_id: id, event_type: 'update', entity: { id: 'storm' } });
      expect(sent.changes).toEqual([{ op: 'replace', path: '/title', value: 'Storm warning' }]);
      // The next screenshots are taken without this test's notice.
      await page.getByText('Webhook saved').waitFor({ state: 'hidden' });
    } finally {
      await target.close();
    }
  });

  it('batches and coalesces a webhook: flow control in the editor, its preview, one call of each record', async () => {
    const target = await startReceiver();
    try {
      await newUpdatesWebhook('Batched edits', `${target.url}/batch`);

      await page.getByLabel('Coalesce').check();
      await page.getByRole('checkbox', { name: /^Batch:/ }).check();
      // Out of range: the API's 422 for batch.window_ms, beside the window's input.
      const window = page.getByLabel('Batch window (ms)');
      await window.fill('5');
      await errorShown('wh-batch-window', 'batch.window_ms must be an integer from 10 to 600000');
      expect(await window.getAttribute('aria-invalid')).toBe('true');
      await window.fill('3000');

      // The preview renders a batch of recent events: its payload lists them in `events`.
      const body = page.getByTestId('preview-body');
      await body.getByText('"events": [').waitFor();
      await page
        .getByTestId('preview-event')
        .getByText(/^A batch of \d+ entr/)
        .waitFor();

      const id = await createInEditor('Batched edits');
      const stored = await storedWebhook(id);
      expect(stored).toMatchObject({
        delivery_order: 'any',
        coalesce: true,
        batch: { window_ms: 3000, max_events: 100 },
      });

      // Two records edited five times, in two requests within the window: one call, each
      // record once with its latest state, in the order of their latest events.
      await waitFor(() => {
        if (!delivery.index.has(id)) throw new Error('not indexed yet');
      });
      const edit = (record: string, title: string) =>
        itemEvent('update', record, { title, views: 1, body: '', content: [] });
      await api('POST', '/events', {
        data: [edit('flow-a', 'A1'), edit('flow-b', 'B1'), edit('flow-a', 'A2')],
      });
      await api('POST', '/events', { data: [edit('flow-b', 'B2'), edit('flow-a', 'A3')] });
      await waitFor(() => expect(target.requests).toHaveLength(1), { timeout: 15_000 });
      const sent = JSON.parse(target.requests[0]!.body);
      expect(
        sent.events.map((e: any) => [e.entity.id, e.event_type, e.entity.attributes.title]),
      ).toEqual([
        ['flow-b', 'update', 'B2'],
        ['flow-a', 'update', 'A3'],
      ]);
      expect(sent).toMatchObject({ webhook_id: id, entity: { id: 'flow-a' } });
      const calls = await api('GET', `/webhook_calls?filter[fields][webhook_id][eq]=${id}`);
      expect(calls.data).toHaveLength(1);
      expect(calls.data[0].attributes.event_ids).toHaveLength(5);

      // The log says how many events the call carries.
      await page.locator('.page-head').getByRole('link', { name: 'Calls' }).click();
      const row = page.locator(`tr[data-call-id="${calls.data[0].id}"]`);
      await row.getByTestId('carried-events').getByText('5 events').waitFor();
      await row.getByRole('link').first().click();
      await page.getByText('Carries 5 events').waitFor();
      expect(await page.getByTestId('carried-events').textContent()).toBe(
        calls.data[0].attributes.event_ids.join(', '),
      );

      // The preview of one record's recent events: a batch of one entry, its latest state; then,
      // without the batch, the same events coalesced into one call.
      await page.goto(`${herald.url}/console/#/webhooks/${id}/edit`);
      await page.getByRole('heading', { name: 'Batched edits' }).waitFor();
      await page.getByLabel('Entity', { exact: true }).fill('flow-a');
      const caption = page.getByTestId('preview-event');
      await caption.getByText('A batch of 1 entry carrying 3 events').waitFor();
      await body.getByText('"title": "A3"').first().waitFor();
      await page.getByRole('group', { name: 'Flow control' }).scrollIntoViewIfNeeded();
      await shot('webhook-flow-control');
      await page.getByRole('checkbox', { name: /^Batch:/ }).uncheck();
      await caption.getByText('3 events of one entity').waitFor();
      await caption.getByText('coalesced into one item.update').waitFor();
      expect(await body.textContent()).not.toContain('"events"');
    } finally {
      await target.close();
    }
  });

  it('publishes to a broker edited in the editor: the preview says where, the password stays write-only', async () => {
    // A real RabbitMQ (the shared one): an exchange and a bound queue of this test's own.
    const rabbit = await rabbitQueue('changes');
    const { exchange } = rabbit;
    const broker = new URL(rabbit.url);
    const [user, password] = [
      decodeURIComponent(broker.username),
      decodeURIComponent(broker.password),
    ];
    broker.username = '';
    broker.password = '';
    try {
      await signedIn();
      await newUpdatesWebhook('Changes to RabbitMQ', `${receiver.url}/unused`);
      await page.getByLabel('Send calls to').selectOption('rabbitmq');
      // The server's errors, beside their inputs, as typed.
      await page.getByLabel('Broker URL').fill(`http://${broker.host}`);
      await errorShown('wh-destination-url', 'destination.url must be a amqp:// or amqps:// URL');
      await errorShown('wh-destination-exchange', 'must not be empty');
      await page.getByLabel('Broker URL').fill(broker.toString());
      await page.getByLabel('Broker user').fill(user);
      await page.getByLabel('Broker password').fill(password);
      await page.getByLabel('Exchange').fill(exchange);
      await page.getByLabel('Routing key').fill('changes');

      // The preview: where the message is published, its headers (the signature among them), the
      // body; no Basic auth, no password.
      const where = page.getByTestId('preview-url');
      await where.getByText(`exchange=${exchange} routing_key=changes`).waitFor();
      expect(await where.textContent()).toMatch(/^rabbitmq: amqp:\/\//);
      const target = page.getByTestId('preview-target');
      await target.getByText(exchange, { exact: true }).waitFor();
      await target.getByText('changes', { exact: true }).waitFor();
      await page.getByRole('heading', { name: 'Message headers (AMQP headers)' }).waitFor();
      const headers = page.getByTestId('preview-headers');
      await headers.getByText('webhook-signature').waitFor();
      await headers.getByText('v1,***').waitFor();
      await page.getByTestId('preview-body').getByText('"entity_type": "item"').first().waitFor();
      await page.getByRole('group', { name: 'Destination' }).scrollIntoViewIfNeeded();
      await shot('webhook-destination');

      const id = await createInEditor('Changes to RabbitMQ');
      const stored = await storedWebhook(id);
      expect(stored.destination).toEqual({
        kind: 'rabbitmq',
        url: broker.toString(),
        username: user,
        password: '***',
        exchange,
        routing_key: 'changes',
      });

      // Back in the editor the password is "set", never shown; saved unchanged, it is kept.
      await page.goto(`${herald.url}/console/#/webhooks/${id}/edit`);
      await page.getByRole('heading', { name: 'Changes to RabbitMQ' }).waitFor();
      await page.getByTestId('wh-destination-password-state').getByText('Set').waitFor();
      expect(await page.getByLabel('Broker password').inputValue()).toBe('');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Webhook saved').waitFor();
      const kept = await findWebhook(t.db, id);
      expect(kept?.destination).toMatchObject({ kind: 'rabbitmq', password });

      // An event reaches the queue, signed as an HTTP call is.
      await waitFor(() => {
        if (!delivery.index.has(id)) throw new Error('not indexed yet');
      });
      await api('POST', '/events', {
        data: [
          itemEvent('update', 'to-rabbit', { title: 'Queued', views: 1, body: '', content: [] }),
        ],
      });
      const message = await rabbit.next(15_000);
      const messageHeaders = Object.fromEntries(
        Object.entries(message.properties.headers ?? {}).map(([k, v]) => [k, String(v)]),
      );
      const verified = new SignedMessages(kept!.signingSecret).verify(
        message.content.toString(),
        messageHeaders,
      ) as { entity: { id: string } };
      expect(verified.entity.id).toBe('to-rabbit');
      expect(message.properties.messageId).toBe(messageHeaders['webhook-id']);
    } finally {
      await rabbit.close();
    }
  });

  it('edits OAuth2 client credentials and mutual TLS: errors beside their fields, secrets write-only', async () => {
    const pki = makeTestPki();
    await signedIn();
    await newUpdatesWebhook('Behind OAuth2 and mTLS', `${receiver.url}/secured`);
    await page.getByLabel('HTTP Basic user').fill('basic-user');
    await page.getByRole('checkbox', { name: /^OAuth2 client credentials/ }).check();
    await page.getByLabel('Token URL').fill('ftp://auth.example.com/token');
    await errorShown('wh-auth-token-url', 'auth.token_url must use http or https');
    await page.getByLabel('Token URL').fill('https://auth.example.com/oauth/token');
    await page.getByLabel('Client id').fill('herald-console');
    await page.getByLabel('Client secret').fill('client-secret-e2e');
    await page.getByLabel('Scope').fill('hooks:write');
    // The preview shows the bearer token's place, in place of Basic auth.
    const previewHeader = (name: string) =>
      page.getByTestId('preview-headers').locator('tr', {
        has: page.locator('th', { hasText: new RegExp(`^${name}$`) }),
      });
    await expect
      .poll(() => previewHeader('Authorization').locator('code').textContent())
      .toBe('Bearer ***');

    await page.getByRole('checkbox', { name: /^Mutual TLS/ }).check();
    await page
      .getByLabel('Client certificate (PEM)')
      .fill('-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----');
    await errorShown(
      'wh-tls-client-certificate',
      'tls.client_certificate does not parse as a PEM certificate',
    );
    await page.getByLabel('Client certificate (PEM)').fill(pki.client.certificate);
    await page.getByLabel('Client key (PEM)').fill(pki.stranger.key);
    await page.getByLabel('CA certificates (PEM)').fill(pki.ca.certificate);
    // The key of another certificate: refused on save, beside the key.
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await errorShown(
      'wh-tls-client-key',
      'tls.client_key is not the private key of tls.client_certificate',
    );
    await page.getByLabel('Client key (PEM)').fill(pki.client.key);
    await page.getByTestId('wh-tls-client-key-state').getByText('Set on save').waitFor();
    await page.locator('.preview-head').getByText('Up to date').waitFor();
    await page.getByLabel('Token URL').scrollIntoViewIfNeeded();
    await shot('webhook-endpoint-auth');
    const id = await createInEditor('Behind OAuth2 and mTLS');
    const shown = await storedWebhook(id);
    expect(shown.auth).toEqual({
      kind: 'oauth2_client_credentials',
      token_url: 'https://auth.example.com/oauth/token',
      client_id: 'herald-console',
      client_auth: 'basic',
      scope: 'hooks:write',
      audience: null,
    });
    expect(shown.tls).toEqual({
      client_certificate: pki.client.certificate,
      ca_certificate: pki.ca.certificate,
    });

    // Reopened: both secrets "set", neither in the page; saved unchanged, both kept.
    await page.goto(`${herald.url}/console/#/webhooks/${id}/edit`);
    await page.getByRole('heading', { name: 'Behind OAuth2 and mTLS' }).waitFor();
    await page.getByTestId('wh-auth-client-secret-state').getByText('Set').waitFor();
    await page.getByTestId('wh-tls-client-key-state').getByText('Set').waitFor();
    expect(await page.getByLabel('Client secret').inputValue()).toBe('');
    expect(await page.getByLabel('Client key (PEM)').inputValue()).toBe('');
    const html = await page.content();
    expect(html).not.toContain('client-secret-e2e');
    expect(html).not.toContain(pki.client.key.split('\n')[1]);
    await page.getByLabel('Scope').fill('hooks:read');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Webhook saved').waitFor();
    const kept = await findWebhook(t.db, id);
    expect(kept?.auth).toMatchObject({ client_secret: 'client-secret-e2e', scope: 'hooks:read' });
    expect(kept?.tls).toMatchObject({ client_key: pki.client.key });
  });

  it('browses records with a model, field filters, full text, version switch and block detail', async () => {
    /** The ids of the records the list shows, in its order. */
    const listedRecords = () =>
      page
        .locator('tr[data-item-id]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-item-id')));
    await nav().getByRole('link', { name: 'Records' }).click();
    await page.getByRole('heading', { name: 'Records' }).waitFor();
    // Published versions by default: the draft is not listed.
    await page.locator('tr[data-item-id="welcome"]').waitFor();
    expect(await page.locator('tr[data-item-id="draft-idea"]').count()).toBe(0);

    await page.getByLabel('Version').selectOption('current');
    await page.locator('tr[data-item-id="draft-idea"]').waitFor();

    await page.getByLabel('Model').fill('article');
    await page.getByRole('button', { name: 'Add field filter' }).click();
    await page.getByLabel('Filter 1 field').fill('views');
    await page.getByLabel('Filter 1 operator').selectOption('gt');
    await page.getByLabel('Filter 1 value').fill('10');
    await page.getByLabel('Order').fill('views_DESC');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(listedRecords).toEqual(['welcome', 'release-notes']);
    await shot('records');

    // A bad filter is the server's error, shown where the list was.
    await page.getByLabel('Filter 1 field').fill('nope');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('INVALID_FILTER_FIELDS_PARAM').waitFor();
    await page.getByRole('button', { name: 'Reset' }).click();

    await page.getByLabel('Search').fill('release');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(listedRecords).toEqual(['release-notes']);

    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('tr[data-item-id="welcome"] a').click();
    await page.getByRole('heading', { name: 'welcome' }).waitFor();
    // nested=true: the blocks are expanded in place.
    await page.getByText('Block welcome-intro').waitFor();
    await page.getByText('Introduction').waitFor();
    await shot('record-detail');
  });

  it('creates a producer token shown once, which posts events, then revokes it; never the last admin', async () => {
    const postEvents = (token: string) =>
      fetch(`${herald.url}/events`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ data: [modelEvent('token_probe', {}, [])] }),
      });
    await nav().getByRole('link', { name: 'Tokens' }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    const own = page.locator('tr[data-token-id]', { hasText: 'test-admin' });
    await own.getByText('admin', { exact: true }).waitFor();

    await page.getByLabel('Name').fill('Console feeder');
    await page.getByLabel('Role').selectOption('producer');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = page.getByTestId('new-token');
    await shown.waitFor();
    const value = (await shown.textContent()) ?? '';
    expect(value).toMatch(/^hrld_[A-Za-z0-9_-]{32}$/);
    const row = page.locator('tr[data-token-id]', { hasText: 'Console feeder' });
    await row.getByText('producer', { exact: true }).waitFor();
    await row.getByText(`${value.slice(0, 9)}…`).waitFor();
    expect((await postEvents(value)).status).toBe(202);
    await shot('tokens');
    // Shown once: gone from the page when dismissed, and never listed.
    await page.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.locator('main').textContent()).not.toContain(value);

    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await postEvents(value)).status).toBe(401);

    // The test's own admin token is the only admin: Herald refuses, and says why.
    await own.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await page.getByRole('alert').getByText('LAST_ADMIN_TOKEN').waitFor();
    await own.waitFor();
    expect((await api('GET', '/access_tokens')).data).toHaveLength(1);
  });

  it('renders the API reference from GET /openapi.json, every operation and its error codes', async () => {
    const refused: string[] = [];
    const onConsole = (message: { type(): string; text(): string }) => {
      if (message.type() === 'error') refused.push(message.text());
    };
    page.on('console', onConsole);
    try {
      await nav().getByRole('link', { name: 'API' }).click();
      await page.getByRole('heading', { name: 'API reference' }).waitFor();
      const operations = Object.values(apiDocument().paths ?? {}).flatMap((item) =>
        Object.keys(item),
      );
      // The renderer is a 1.5 MB chunk of its own, loaded with the page.
      await expect
        .poll(() => page.locator('.opblock').count(), { timeout: 20_000 })
        .toBe(operations.length);
      const retrieve = page.locator('#operations-Webhooks-getWebhooksId');
      await retrieve.locator('.opblock-summary-path').getByText('/webhooks/{id}').waitFor();
      await retrieve.locator('.opblock-summary-control').click();
      // Its answers: the webhook, and the envelope of each status its codes are sent with.
      await retrieve.locator('tr.response[data-code="200"]').waitFor();
      await retrieve.locator('tr.response[data-code="404"]').waitFor();
      const notFound = await retrieve.locator('tr.response[data-code="404"]').textContent();
      expect(notFound).toContain('INVALID_ENVIRONMENT, NOT_FOUND');
      await shot('api-reference');
      // Nothing refused by the console's Content-Security-Policy, nothing fetched from outside.
      expect(refused).toEqual([]);
    } finally {
      page.off('console', onConsole);
    }
  });

  it('is usable on a phone', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${herald.url}/console/#/webhooks`);
    await page
      .locator('tr[data-webhook-id]')
      .first()
      .getByText('Publications to the CDN')
      .waitFor();
    await shot('webhooks-phone');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('keeps the webhook list fast with 5,000 webhooks: one page, its stats, a search', async () => {
    await t.db.query(
      `INSERT INTO webhooks (name, url, headers, events, custom_payload, signing_secret)
       SELECT 'Load webhook ' || lpad(i::text, 4, '0'), 'https://load-' || i || '.example.com/hook',
         '{}', '[{"entity_type":"item","event_types":["publish"]}]', NULL, 'whsec_load'
       FROM generate_series(1, 5000) AS i`,
    );
    const { rows: counted } = await t.db.query<{ count: string }>('SELECT count(*) FROM webhooks');
    const total = Number(counted[0]!.count);
    const requests: string[] = [];
    const onRequest = (request: { url(): string }) => requests.push(request.url());
    page.on('request', onRequest);
    try {
      await page.goto(`${herald.url}/console/#/jobs`);
      await page.getByRole('heading', { name: 'Bulk jobs' }).waitFor();
      requests.length = 0;
      const started = Date.now();
      await nav().getByRole('link', { name: 'Webhooks' }).click();
      const rows = page.locator('tr[data-webhook-id]');
      await rows.nth(49).waitFor();
      await expect.poll(() => rows.first().textContent()).toContain('Publications to the CDN');
      // The page's health is read, then shown.
      await rows.first().getByText('100 %').waitFor();
      const rendered = Date.now() - started;
      expect(await rows.count()).toBe(50);
      await page.getByText(`1–50 of ${total}`).waitFor();
      expect(await page.getByTestId('webhook-count').textContent()).toBe(`${total} webhooks`);
      // Only one page of webhooks and only its stats went over the wire.
      const path = (url: string) => decodeURIComponent(new URL(url).pathname + new URL(url).search);
      const lists = requests.map(path).filter((p) => p.startsWith('/webhooks'));
      expect(lists).toEqual(['/webhooks?page[offset]=0&page[limit]=50']);
      const stats = requests.map(path).filter((p) => p.startsWith('/webhook_stats'));
      expect(stats).toHaveLength(1);
      expect(
        new URL(`http://x${stats[0]}`).searchParams.get('filter[ids]')!.split(','),
      ).toHaveLength(50);
      const full = await fetch(`${herald.url}/webhooks`, {
        headers: { Authorization: `Bearer ${admin}` },
      });
      const fullBytes = (await full.arrayBuffer()).byteLength;
      console.log(
        `\nWebhook list, ${total} webhooks: first page with its stats rendered in ${rendered} ms ` +
          `(the unpaginated GET /webhooks is ${(fullBytes / 1e6).toFixed(2)} MB)\n`,
      );
      await shot('webhooks-5000');

      // The search narrows the list (server side: name or URL, ignoring case).
      const searchStarted = Date.now();
      await page.getByLabel('Search by name or URL').fill('load webhook 12');
      await page.getByText('100 matching').waitFor();
      console.log(
        `Search narrowed ${total} webhooks to 100 in ${Date.now() - searchStarted} ms (300 ms of it debounce)\n`,
      );
      expect(page.url()).toContain('q=load+webhook+12');
      await expect.poll(() => rows.count()).toBe(50);
      await expect.poll(() => rows.first().textContent()).toContain('Load webhook 1200');
      await page.getByRole('button', { name: 'Next →' }).click();
      await page.getByText('51–100 of 100').waitFor();
      await page.getByLabel('Search by name or URL').fill('LOAD-4321.example');
      await page.getByText('1 matching').waitFor();
      await expect.poll(() => rows.count()).toBe(1);
      await rows.first().getByText('Load webhook 4321').waitFor();
      await page.getByLabel('Search by name or URL').fill('no such webhook');
      await page.getByText(`No webhook's name or URL contains “no such webhook”.`).waitFor();

      // The call log offers one page of webhooks to filter by, not all of them, and names each
      // call's webhook from the list's `included`.
      requests.length = 0;
      await nav().getByRole('link', { name: 'Call log' }).click();
      await page.getByRole('heading', { name: 'Call log' }).waitFor();
      await page.locator('tr[data-call-id]').first().waitFor();
      const picker = requests.map(path).filter((p) => p.startsWith('/webhooks'));
      expect(picker).toEqual(['/webhooks?page[limit]=500']);
      const select = page.locator('select[name="webhook"]');
      await expect.poll(() => select.locator('option').count()).toBe(1 + 500 + 1);
      expect(await select.textContent()).toContain('the first 500 by id');
      const named = page.locator('tr[data-call-id] td[data-label="Webhook"]').first();
      await expect.poll(() => named.textContent()).not.toMatch(/^\d+$/);
    } finally {
      page.off('request', onRequest);
    }
  }, 180_000);
});
