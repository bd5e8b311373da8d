import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseCidrList } from '@herald/contract';
import { startDelivery, type DeliveryRuntime } from '@herald/delivery';
import { createApp } from '@herald/ingest';
import { signWebhook } from '@herald/payload';
import {
  Lifecycle,
  commonEnv,
  openCoordination,
  parseEnv,
  type Coordination,
} from '@herald/runtime';
import {
  createTestDb,
  createTestToken,
  itemEvent,
  serve,
  silentLogger,
  startReceiver,
  startRedisCluster,
  testDeps,
  waitFor,
  type Received,
  type Receiver,
  type RedisCluster,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import { Registry } from 'prom-client';
import { testSettings } from '@herald/delivery/testing';

/**
 * Herald on a Redis Cluster of the file's own (3 masters, 3 replicas, 1 s node timeout), opened
 * as a process opens it from REDIS_CLUSTER_NODES: events posted to ingest's POST /events are
 * delivered by two delivery processes as signed calls to a real receiver, failed attempts retried;
 * then a master is killed (kill -9) while events keep coming, its replica takes over, and every
 * event is still delivered.
 */

let cluster: RedisCluster;
let t: TestDb;
let receiver: Receiver;
let api: TestServer;
let token: string;
const opened: { coordination: Coordination; delivery?: DeliveryRuntime }[] = [];
const logger = silentLogger();
let prefix: string;
let deps: ReturnType<typeof testDeps>;

/** A process's coordination, from the variables a process reads. */
function openFromEnv(): Coordination {
  const config = parseEnv(z.object(commonEnv), {
    REDIS_CLUSTER_NODES: cluster.seeds,
    REDIS_PREFIX: prefix,
  });
  return openCoordination(config, t.db, logger, new Lifecycle(logger));
}

/** A delivery process of the deployment: its own connections, the same cluster and prefix. */
async function startDeliveryProcess(): Promise<DeliveryRuntime> {
  const coordination = openFromEnv();
  const delivery = await startDelivery(
    { db: t.db, coordination, logger, registry: new Registry() },
    testSettings({
      // The sweeper enqueues at once what an enqueue lost while a master failed over.
      sweepIntervalMs: 500,
      sweepAfterMs: 1000,
      eventSweepGraceMs: 1000,
      retry: { scheduleMs: [100, 200, 300], jitter: 0.1, retryAfterMaxMs: 86_400_000 },
      // Every first attempt fails in the first test: the circuit must not open on them.
      circuit: { failures: 10_000, cooldownMs: 60_000 },
    }),
  );
  opened.push({ coordination, delivery });
  return delivery;
}

beforeAll(async () => {
  const started = performance.now();
  [cluster, t, receiver] = await Promise.all([
    startRedisCluster(),
    createTestDb(),
    startReceiver(),
  ]);
  // The harness's start, for docs/operations.md.
  logger.info({ ms: Math.round(performance.now() - started) }, 'cluster started');
  prefix = `herald_cluster_${Date.now().toString(36)}`;
  const coordination = openFromEnv();
  opened.push({ coordination });
  deps = testDeps(t.db, coordination);
  api = await serve(
    createApp({ ...deps, enqueueTimeoutMs: 2000, ssrfAllowCidrs: parseCidrList('127.0.0.0/8') }),
  );
  token = await createTestToken(t.db, 'admin');
  await startDeliveryProcess();
  await startDeliveryProcess();
  receiver.respond = answer;
});

afterAll(async () => {
  await api?.close();
  await deps?.eventMatchQueue.close();
  await deps?.deliverQueue.close();
  for (const { delivery } of opened) await delivery?.close();
  for (const { coordination } of opened) await coordination.close();
  await receiver?.close();
  await cluster?.stop();
  await t?.cleanup();
});

/** A test's model (`model` its id and api_key): its records' events go to its webhook. */
function modelEvent(model: string) {
  return {
    type: 'event',
    id: `model-${model}`,
    attributes: {
      entity_type: 'item_type',
      event_type: 'create',
      entity: { type: 'item_type', id: model, attributes: { name: model, api_key: model } },
      related_entities: [
        {
          type: 'field',
          id: `${model}-title`,
          attributes: { api_key: 'title', field_type: 'string', label: 'Title', position: 0 },
        },
      ],
    },
  };
}

/** The create event `id` of a draft record of `model`, titled `id`. */
const recordEvent = (id: string, model: string) =>
  itemEvent(
    'create',
    `record-${id}`,
    { title: id },
    { model, eventId: id, meta: { status: 'draft' } },
  );

async function post(path: string, data: unknown): Promise<unknown> {
  const response = await fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data }),
  });
  const body = (await response.json()) as unknown;
  if (response.status >= 300) {
    throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(body)}`);
  }
  return body;
}

/** One call the receiver took: the event it carried, the answer, whether its signature held. */
interface Answered {
  model: string;
  eventId: string;
  status: number;
  signed: boolean;
}
const answered: Answered[] = [];
const secrets = new Map<string, string>();
/** Event ids whose next call fails (503) once. */
const failOnce = new Set<string>();

/** A webhook on the receiver for the records of its own model (made here). */
async function addWebhook(model: string): Promise<string> {
  await post('/events', modelEvent(model));
  const body = (await post('/webhooks', {
    type: 'webhook',
    attributes: {
      name: `cluster ${model}`,
      url: `${receiver.url}/${model}`,
      headers: {},
      events: [
        {
          entity_type: 'item',
          event_types: ['create'],
          filters: [{ entity_type: 'item_type', entity_ids: [model] }],
        },
      ],
      custom_payload: null,
      http_basic_user: null,
      http_basic_password: null,
    },
  })) as { data: { id: string; attributes: { signing_secret: string } } };
  secrets.set(model, body.data.attributes.signing_secret);
  // Both delivery processes heard of it (pub/sub across the cluster's nodes).
  await waitFor(() => {
    for (const { delivery } of opened) {
      if (delivery) expect(delivery.index.has(body.data.id)).toBe(true);
    }
  });
  return body.data.id;
}

function answer(request: Received, res: ServerResponse): void {
  const model = request.url.slice(1);
  const { entity } = JSON.parse(request.body) as { entity: { attributes: { title: string } } };
  const eventId = entity.attributes.title;
  const id = String(request.headers['webhook-id']);
  const timestamp = Number(request.headers['webhook-timestamp']);
  const signed =
    request.headers['webhook-signature'] ===
    signWebhook([secrets.get(model) ?? ''], id, timestamp, request.body);
  const status = failOnce.delete(eventId) ? 503 : 200;
  answered.push({ model, eventId, status, signed });
  res.statusCode = status;
  res.end(status === 200 ? 'ok' : 'later');
}

/** The events of `model` the receiver answered with `status`. */
const eventsAnswered = (model: string, status = 200): string[] =>
  answered
    .filter((call) => call.model === model && call.status === status)
    .map((call) => call.eventId);

/** Posts creations of `model`'s records, `perRequest` a request; their event ids. */
async function postEvents(model: string, count: number, perRequest = 10): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${model}-${i}`);
  for (let i = 0; i < ids.length; i += perRequest) {
    await post(
      '/events',
      ids.slice(i, i + perRequest).map((id) => recordEvent(id, model)),
    );
  }
  return ids;
}

describe('deliveries on a Redis Cluster', () => {
  it('delivers posted events as signed calls, retrying the failed attempts', async () => {
    await addWebhook('main');
    const ids = Array.from({ length: 40 }, (_, i) => `main-${i}`);
    for (const id of ids) failOnce.add(id);
    expect(await postEvents('main', 40)).toEqual(ids);
    await waitFor(() => expect(new Set(eventsAnswered('main'))).toEqual(new Set(ids)), {
      timeout: 20_000,
      interval: 100,
    });
    // Each event's first attempt failed, and its retry went.
    expect(new Set(eventsAnswered('main', 503))).toEqual(new Set(ids));
    expect(answered.every((call) => call.signed)).toBe(true);
  });

  it("keeps delivering when the queues' master is killed: its replica takes over, no event lost", async () => {
    await addWebhook('failover');
    const accepted: string[] = [];
    const refused: number[] = [];
    let sent = 0;
    let loading = true;
    /** 5 events per request, one request after another, until told to stop. */
    const load = (async () => {
      while (loading) {
        const ids = Array.from({ length: 5 }, () => `failover-${sent++}`);
        const response = await fetch(`${api.url}/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ data: ids.map((id) => recordEvent(id, 'failover')) }),
        });
        await response.arrayBuffer();
        if (response.status === 202) accepted.push(...ids);
        else refused.push(response.status);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await waitFor(() => expect(eventsAnswered('failover').length).toBeGreaterThan(20));
    const killedAt = performance.now();
    // The master of the queues' slot: every job of both queues is there.
    const victim = await cluster.failOver(`{${prefix}}:webhook-deliver`);
    const failedOverMs = performance.now() - killedAt;
    const masters = await cluster.masters();
    expect(masters.map((node) => node.port)).not.toContain(victim.port);
    expect(masters).toHaveLength(3);
    // Events keep coming a while after the failover, then stop.
    const countAtFailover = accepted.length;
    await waitFor(() => expect(accepted.length).toBeGreaterThan(countAtFailover + 20));
    loading = false;
    await load;
    await waitFor(() => expect(new Set(eventsAnswered('failover'))).toEqual(new Set(accepted)), {
      timeout: 60_000,
      interval: 200,
    });
    const deliveredAt = performance.now();
    // Every event was accepted (a lost enqueue is the sweeper's, never the client's problem).
    expect(refused).toEqual([]);
    // A webhook made now reaches both delivery processes' index: the announcements go through
    // the cluster as before (a subscription on the lost node was made again on another).
    await addWebhook('afterfailover');
    const calls = eventsAnswered('failover');
    logger.info(
      {
        failedOverMs: Math.round(failedOverMs),
        events: accepted.length,
        duplicates: calls.length - new Set(calls).size,
        lastDeliveryAfterFailoverMs: Math.round(deliveredAt - killedAt - failedOverMs),
      },
      'failover',
    );
  }, 120_000);
});
