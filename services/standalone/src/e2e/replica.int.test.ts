import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClient } from '@datocms/cma-client-node';
import { READ_AFTER_HEADER, decodeReadAfter } from '@herald/contract';
import { createDeliverQueue, createEventMatchQueue } from '@herald/runtime';
import { createPostgresDb, migrate, type Db } from '@herald/store';
import {
  TEST_REDIS_URL,
  createReplicatedPostgres,
  freePort,
  createTestToken,
  randomId,
  serve,
  silentLogger,
  startReceiver,
  testApi,
  testDeps,
  waitFor,
  type Receiver,
  type ReplicatedPostgres,
  type TestApi,
  type TestServer,
} from '@herald/testkit';
import {
  addWebhook,
  itemEventsIn,
  startPipeline,
  webhookInput,
  type Pipeline,
} from '@herald/delivery/testing';
import { createApp } from '../app.js';
import { HeraldProcess } from '../faults/harness.test-support.js';

/**
 * The single process's three services on a primary and a streaming replica of the file's own
 * (READ_DATABASE_URL): events delivered end to end while reads go to the replica, and the
 * read-after token of each 202 shown to matter: with replay paused, a read with it answers the
 * new record, the same read without it the older one.
 */

const WAIT_MS = 200;

let cluster: ReplicatedPostgres;
let primary: Db;
let itemsReplica: Db;
let listsReplica: Db;
let pipeline: Pipeline;
let receiver: Receiver;
let server: TestServer;
let admin: TestApi;
let producer: TestApi;
let closeQueues: () => Promise<void>;
let version = 0;

beforeAll(async () => {
  cluster = await createReplicatedPostgres();
  primary = createPostgresDb({ connectionString: cluster.primary.url('herald') });
  itemsReplica = createPostgresDb({ connectionString: cluster.replica.url('herald') });
  listsReplica = createPostgresDb({ connectionString: cluster.replica.url('herald') });
  await migrate(primary);
  pipeline = await startPipeline(primary);
  receiver = await startReceiver();
  const eventMatchQueue = createEventMatchQueue(pipeline.coordination, silentLogger());
  const deliverQueue = createDeliverQueue(pipeline.coordination, silentLogger());
  closeQueues = async () => {
    await eventMatchQueue.close();
    await deliverQueue.close();
  };
  server = await serve(
    createApp({
      ...testDeps(primary, pipeline.coordination),
      eventMatchQueue,
      deliverQueue,
      enqueueTimeoutMs: 5000,
      readDb: primary,
      readReplicaDb: itemsReplica,
      readAfterWaitMs: WAIT_MS,
      replicaDb: listsReplica,
    }),
  );
  admin = testApi(server.url, await createTestToken(primary, 'admin'));
  producer = admin.as(await createTestToken(primary, 'producer'));
  await addWebhook(
    primary,
    pipeline,
    webhookInput(receiver.url, { events: itemEventsIn('main', ['create', 'update']) }),
  );
  const model = await producer.call('POST', '/events', {
    data: {
      type: 'event',
      attributes: {
        entity_type: 'item_type',
        event_type: 'create',
        entity: { type: 'item_type', id: 'note', attributes: { name: 'Note', api_key: 'note' } },
        related_entities: [
          {
            type: 'field',
            id: 'f-title',
            attributes: { api_key: 'title', field_type: 'string', position: 0 },
          },
        ],
      },
    },
  });
  expect(model.status).toBe(202);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await closeQueues?.();
  await pipeline?.close();
  await receiver?.close();
  await Promise.all([primary?.close(), itemsReplica?.close(), listsReplica?.close()]);
  await cluster?.destroy();
}, 60_000);

interface Posted {
  eventId: string;
  readAfter: string;
}

/** POST /events: note `id` now titled `title` (a newer version each time); its 202's token. */
async function saveNote(id: string, title: string): Promise<Posted> {
  const eventId = randomId('evt');
  const at = new Date(Date.UTC(2026, 0, 1) + ++version * 1000).toISOString();
  const answer = await producer.call('POST', '/events', {
    data: {
      type: 'event',
      id: eventId,
      attributes: {
        entity_type: 'item',
        event_type: 'update',
        entity: {
          type: 'item',
          id,
          attributes: { title },
          relationships: { item_type: { data: { type: 'item_type', id: 'note' } } },
          meta: { created_at: '2026-01-01T00:00:00Z', updated_at: at },
        },
      },
    },
  });
  expect(answer.status).toBe(202);
  const readAfter = answer.headers.get(READ_AFTER_HEADER)!;
  expect(answer.body.meta).toEqual({ read_after: readAfter });
  expect(decodeReadAfter(readAfter)).toBeDefined();
  return { eventId, readAfter };
}

/** GET /items/:id: the title it answered (or the status when not 200). */
async function titleOf(id: string, readAfter?: string): Promise<unknown> {
  const answer = await admin.fetch(`/items/${id}`, {
    ...(readAfter ? { headers: { [READ_AFTER_HEADER]: readAfter } } : {}),
  });
  const body = (await answer.json()) as { data: { attributes: { title: string } } };
  return answer.status === 200 ? body.data.attributes.title : answer.status;
}

/** Titles the receiver was sent for note `id`, in order. */
function delivered(id: string): string[] {
  return receiver.requests
    .map((request) => JSON.parse(request.body) as { entity: { id: string; attributes: object } })
    .filter((payload) => payload.entity.id === id)
    .map((payload) => (payload.entity.attributes as { title: string }).title);
}

describe('on a primary and a replica', () => {
  it('delivers events end to end and reads them back from the replica', async () => {
    const { readAfter } = await saveNote('n1', 'first');
    await waitFor(() => expect(delivered('n1')).toEqual(['first']));
    // At once with the token; without it, once the replica has replayed the commit.
    expect(await titleOf('n1', readAfter)).toBe('first');
    await waitFor(async () => expect(await titleOf('n1')).toBe('first'));
    // The call log, listed from the replica, shows the delivery once replayed.
    await waitFor(async () => {
      const calls = await admin.call('GET', '/webhook_calls?filter[fields][entity_id][eq]=n1');
      expect(
        calls.body.data.map((c: { attributes: { status: string } }) => c.attributes.status),
      ).toEqual(['success']);
    });
  });

  it('the token matters: with replay paused, a read with it answers the new record, without it the older one', async () => {
    await saveNote('n2', 'old');
    // Until the replica has the record and its call (made by the match after the commit).
    await waitFor(async () => {
      expect(await titleOf('n2')).toBe('old');
      const calls = await admin.call('GET', '/webhook_calls?filter[fields][entity_id][eq]=n2');
      expect(calls.body.meta.total_count).toBe(1);
    });
    await cluster.replica.pauseReplay();
    try {
      const { eventId, readAfter } = await saveNote('n2', 'new');
      expect(await titleOf('n2', readAfter)).toBe('new');
      expect(await titleOf('n2')).toBe('old');
      // Delivery runs on the primary: the replica's lag does not hold it.
      await waitFor(() => expect(delivered('n2')).toEqual(['old', 'new']));
      // The official client, sending the token as a header of its own.
      const client = buildClient({
        apiToken: admin.token,
        baseUrl: server.url,
        extraHeaders: { [READ_AFTER_HEADER]: readAfter },
      });
      expect((await client.items.find('n2')).title).toBe('new');
      expect((await client.items.list({ filter: { ids: 'n2' } }))[0]!.title).toBe('new');
      const plain = buildClient({ apiToken: admin.token, baseUrl: server.url });
      expect((await plain.items.find('n2')).title).toBe('old');
      // Ingest's lists read the replica too: the new event is stored, not listed yet.
      const listed = await admin.call('GET', `/events?filter[entity_id]=n2`);
      expect(listed.body.data.map((e: { id: string }) => e.id)).not.toContain(eventId);
      expect((await admin.call('GET', `/events/${eventId}`)).status).toBe(200);
      const calls = await admin.call('GET', '/webhook_calls?filter[fields][entity_id][eq]=n2');
      expect(calls.body.meta.total_count).toBe(1);
      expect((await admin.call('GET', '/webhook_stats')).status).toBe(200);
    } finally {
      await cluster.replica.resumeReplay();
    }
    await waitFor(async () => expect(await titleOf('n2')).toBe('new'));
    const calls = await admin.call('GET', '/webhook_calls?filter[fields][entity_id][eq]=n2');
    expect(calls.body.meta.total_count).toBe(2);
  });

  it('a read with the token never answers a record older than its 202, lagging replica or not', async () => {
    let paused = false;
    try {
      for (let i = 0; i < 16; i++) {
        // Replay paused or running, changed at random along the way.
        if (Math.random() < 0.4) {
          if (paused) await cluster.replica.resumeReplay();
          else await cluster.replica.pauseReplay();
          paused = !paused;
        }
        const { readAfter } = await saveNote('n3', `v${i}`);
        expect(await titleOf('n3', readAfter)).toBe(`v${i}`);
      }
    } finally {
      if (paused) await cluster.replica.resumeReplay();
    }
    await waitFor(async () => expect(await titleOf('n3')).toBe('v15'));
  });
});

describe('the single process (main.js) with READ_DATABASE_URL', () => {
  it('reads the replica, and a token past its replay from the primary', async () => {
    // A database of its own (the replica gets it too): the process migrates it and runs its own
    // delivery workers, which must not take this file's other calls.
    await cluster.primary.createDatabase('herald_single');
    const dataDir = await mkdtemp(join(tmpdir(), 'herald-replica-'));
    const token = `${randomId('admin')}-${randomId('token')}`;
    const herald = new HeraldProcess('standalone', 'standalone', await freePort(), {
      PATH: process.env['PATH'] ?? '',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      HERALD_DATA_DIR: dataDir,
      HERALD_ADMIN_TOKEN: token,
      DATABASE_URL: cluster.primary.url('herald_single'),
      READ_DATABASE_URL: cluster.replica.url('herald_single'),
      READ_AFTER_WAIT_MS: '100',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: randomId('herald_test'),
    });
    try {
      await herald.ready(120_000);
      const api = testApi(herald.url, token);
      const post = async (title: string, updatedAt: string) => {
        const answer = await api.call('POST', '/events', {
          data: [
            {
              type: 'event',
              attributes: {
                entity_type: 'item_type',
                event_type: 'update',
                entity: {
                  type: 'item_type',
                  id: 'note',
                  attributes: { name: 'Note', api_key: 'note' },
                },
                related_entities: [
                  {
                    type: 'field',
                    id: 'f-title',
                    attributes: { api_key: 'title', field_type: 'string', position: 0 },
                  },
                ],
              },
            },
            {
              type: 'event',
              attributes: {
                entity_type: 'item',
                event_type: 'update',
                entity: {
                  type: 'item',
                  id: 's1',
                  attributes: { title },
                  relationships: { item_type: { data: { type: 'item_type', id: 'note' } } },
                  meta: { created_at: '2026-01-01T00:00:00Z', updated_at: updatedAt },
                },
              },
            },
          ],
        });
        expect(answer.status, JSON.stringify(answer.body)).toBe(202);
        return answer.headers.get(READ_AFTER_HEADER)!;
      };
      const read = async (readAfter?: string): Promise<unknown> => {
        const answer = await api.fetch('/items/s1', {
          ...(readAfter ? { headers: { [READ_AFTER_HEADER]: readAfter } } : {}),
        });
        const body = (await answer.json()) as { data: { attributes: { title: string } } };
        return answer.status === 200 ? body.data.attributes.title : answer.status;
      };
      const metric = async (name: string): Promise<number> => {
        const text = await (await fetch(`${herald.url}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${name} `));
        return Number(line?.slice(name.length + 1));
      };
      const first = await post('old', '2026-01-01T00:00:01Z');
      expect(await read(first)).toBe('old');
      await waitFor(async () => expect(await read()).toBe('old'));
      await cluster.replica.pauseReplay();
      try {
        const servedByPrimary = await metric('herald_read_after_total{served_by="primary"}');
        const second = await post('new', '2026-01-01T00:00:02Z');
        expect(await read(second)).toBe('new');
        expect(await read()).toBe('old');
        expect(await metric('herald_read_after_total{served_by="primary"}')).toBe(
          servedByPrimary + 1,
        );
        expect(await metric('herald_replica_lag_bytes')).toBeGreaterThan(0);
      } finally {
        await cluster.replica.resumeReplay();
      }
      expect((await herald.signal('SIGTERM', 'stop')).code).toBe(0);
    } finally {
      if (herald.running) await herald.signal('SIGKILL', 'kill');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
