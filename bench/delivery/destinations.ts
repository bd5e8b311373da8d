/**
 * Broker destinations (issue #33): for each kind, Herald delivering DESTINATION_EVENTS events
 * (3,000) end to end (POST /events → match → publish → the broker's acknowledgement → the outcome
 * recorded) to that broker, beside the same client library publishing the same bodies with the
 * same headers by hand in the same run, DESTINATION_IN_FLIGHT (64, as the HTTP baseline's
 * connections) publishes awaiting their acknowledgement at a time:
 *
 * - rabbitmq: amqplib, a confirm channel, persistent and mandatory, to a direct exchange with a
 *   bound queue (both this run's own, deleted afterwards; the default vhost);
 * - nats: nats.js JetStream publish awaiting the PubAck, to a stream of this run's own (deleted);
 * - mqtt: mqtt.js v5 QoS 1 (PUBACK), the headers as user properties, to a topic of this run's own;
 * - redis_stream: ioredis XADD MAXLEN ~, one field per header and `body`, to a key of this run's
 *   own (deleted).
 *
 * And the floor of that work (./floor.ts, its fan-out with the broker's publish as step 3): the
 * same events POSTed to a bare node:http server that stores each request's events and records in
 * one statement, inserts their calls in one, publishes each call's body with the same headers
 * through the same client library (DESTINATION_IN_FLIGHT at a time) and records the outcomes in
 * batches: what Herald's guarantees take, written the simplest way.
 *
 * Herald's webhooks (50 per kind, one per model, as the "1 webhook per event" rows, so that the
 * per-webhook in-flight limit is not what sets the pace) share one pooled connection per broker.
 * A message counts as delivered once its call is recorded a success. CPU per message: Herald's
 * (this process: ingest, poster, workers; its Postgres backends; every redis-server) and the
 * broker's own process (beam.smp, nats-server, mosquitto; for a Redis stream, redis-server);
 * by hand: this process and the broker.
 *
 *   pnpm bench:delivery --destinations rabbitmq,nats   (or DESTINATIONS=…): only these rows
 *   pnpm bench:delivery                                 all four, after the delivery rows
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import amqp from 'amqplib';
import { Redis as IORedis } from 'ioredis';
import mqtt from 'mqtt';
import { connect as natsConnect, headers as natsHeaders } from 'nats';
import { DESTINATION_KINDS, type BrokerDestination, type Destination } from '@herald/contract';
import { insertWebhook, type Db } from '@herald/store';
import { testWebhookInput } from '@herald/testkit';
import { backendPids, cpuPer, processCpuMs, sampleCpu } from '../lib/cpu.js';
import { table } from '../lib/table.js';
import { itemEvent, modelEvent, postEvents, postInBatches } from './fixtures.js';
import { startFloor } from './floor.js';

const EVENTS = Number(process.env['DESTINATION_EVENTS'] ?? 3000);
const WARMUP_EVENTS = Number(process.env['DESTINATION_WARMUP_EVENTS'] ?? 300);
const IN_FLIGHT = Number(process.env['DESTINATION_IN_FLIGHT'] ?? 64);
const WEBHOOKS = 50;
const TARGET = 0.5;

const AMQP_URL = process.env['BENCH_AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const NATS_URL = process.env['BENCH_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const MQTT_URL = process.env['BENCH_MQTT_URL'] ?? 'mqtt://127.0.0.1:1883';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export type BrokerKind = BrokerDestination['kind'];
export const BROKER_KINDS = DESTINATION_KINDS.filter((kind): kind is BrokerKind => kind !== 'http');

/** The kinds `--destinations a,b` (or DESTINATIONS=a,b) names; undefined when not asked. */
export function destinationKinds(argv: readonly string[]): BrokerKind[] | undefined {
  const at = argv.indexOf('--destinations');
  const given = at >= 0 ? (argv[at + 1] ?? '') : process.env['DESTINATIONS'];
  if (given === undefined) return undefined;
  const kinds = given.split(',').filter((kind) => kind !== '');
  if (kinds.length === 0) return [...BROKER_KINDS];
  for (const kind of kinds) {
    if (!(BROKER_KINDS as readonly string[]).includes(kind)) {
      throw new Error(`--destinations: "${kind}" is not one of ${BROKER_KINDS.join(', ')}`);
    }
  }
  return kinds as BrokerKind[];
}

/** The broker's server process, whose CPU the rows count. */
const BROKER_PROCESS: Record<BrokerKind, string> = {
  rabbitmq: 'beam.smp',
  nats: 'nats-server',
  mqtt: 'mosquitto',
  redis_stream: 'redis-server',
};

function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === comm) pids.push(Number(pid));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** One message as Herald published it: its body and headers (read back from the call log). */
interface Message {
  body: string;
  headers: Record<string, string>;
}

/** A broker place of this run's own, a by-hand publisher to it, and its removal. */
interface Place {
  destination: BrokerDestination;
  /** Opens the client library's connection; `publish` resolves on the broker's acknowledgement. */
  open(): Promise<{ publish(message: Message): Promise<void>; close(): Promise<void> }>;
  remove(): Promise<void>;
}

const unique = (prefix: string) => `herald-bench-${prefix}-${randomBytes(5).toString('hex')}`;
const none = { username: null, password: null };

async function rabbitPlace(): Promise<Place> {
  const exchange = unique('exchange');
  const queue = unique('queue');
  const admin = await amqp.connect(AMQP_URL);
  const channel = await admin.createChannel();
  await channel.assertExchange(exchange, 'direct', { durable: false });
  await channel.assertQueue(queue, { durable: false });
  await channel.bindQueue(queue, exchange, 'changes');
  return {
    destination: { kind: 'rabbitmq', url: AMQP_URL, exchange, routing_key: 'changes', ...none },
    async open() {
      const connection = await amqp.connect(AMQP_URL);
      const confirm = await connection.createConfirmChannel();
      let id = 0;
      return {
        publish: (message) =>
          new Promise<void>((resolve, reject) => {
            confirm.publish(
              exchange,
              'changes',
              Buffer.from(message.body),
              {
                mandatory: true,
                persistent: true,
                contentType: 'application/json',
                messageId: String(id++),
                headers: message.headers,
              },
              (error: Error | null) => (error ? reject(error) : resolve()),
            );
          }),
        close: () => connection.close(),
      };
    },
    async remove() {
      await channel.deleteQueue(queue);
      await channel.deleteExchange(exchange);
      await admin.close();
    },
  };
}

async function natsPlace(): Promise<Place> {
  const stream = unique('stream').replace(/-/g, '_').toUpperCase();
  const subject = `${unique('subject')}.changes`;
  const admin = await natsConnect({ servers: NATS_URL });
  const jsm = await admin.jetstreamManager();
  await jsm.streams.add({ name: stream, subjects: [subject] });
  return {
    destination: { kind: 'nats', url: NATS_URL, subject, jetstream: true, ...none },
    async open() {
      const nc = await natsConnect({ servers: NATS_URL });
      const js = nc.jetstream();
      const encoder = new TextEncoder();
      return {
        async publish(message) {
          const h = natsHeaders();
          for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
          await js.publish(subject, encoder.encode(message.body), { headers: h });
        },
        close: () => nc.close(),
      };
    },
    async remove() {
      await jsm.streams.delete(stream);
      await admin.close();
    },
  };
}

function mqttPlace(): Place {
  const topic = `${unique('topic')}/changes`;
  return {
    destination: { kind: 'mqtt', url: MQTT_URL, topic, ...none },
    async open() {
      const client = await mqtt.connectAsync(MQTT_URL, { protocolVersion: 5 });
      return {
        async publish(message) {
          await client.publishAsync(topic, message.body, {
            qos: 1,
            properties: { userProperties: message.headers, contentType: 'application/json' },
          });
        },
        close: () => client.endAsync(),
      };
    },
    // Nothing stays: no subscriber, no retained message.
    remove: () => Promise.resolve(),
  };
}

function redisStreamPlace(): Place {
  const stream = unique('stream');
  const maxLen = 100_000;
  const admin = new IORedis(REDIS_URL);
  return {
    destination: { kind: 'redis_stream', url: REDIS_URL, stream, max_len: maxLen, ...none },
    async open() {
      const client = new IORedis(REDIS_URL, { lazyConnect: true });
      await client.connect();
      return {
        async publish(message) {
          const fields = Object.entries(message.headers).flat();
          await client.xadd(stream, 'MAXLEN', '~', maxLen, '*', ...fields, 'body', message.body);
        },
        close: async () => void (await client.quit()),
      };
    },
    async remove() {
      await admin.del(stream);
      await admin.quit();
    },
  };
}

const PLACES: Record<BrokerKind, () => Promise<Place>> = {
  rabbitmq: rabbitPlace,
  nats: natsPlace,
  mqtt: () => Promise.resolve(mqttPlace()),
  redis_stream: () => Promise.resolve(redisStreamPlace()),
};

/** What the destination rows run against (bench/delivery/run.ts sets it up). */
export interface DestinationHarness {
  /** The bench's HTTP receiver: Herald's HTTP row, for reference, in the same conditions. */
  receiverUrl: string;
  receiverPid: number;
  db: Db;
  schema: string;
  /** The bench's database (the floor's pools, on `schema`). */
  connectionString: string;
  /** Herald's workers' pool size (DB_POOL_SIZE): the floor's workers' pool as well. */
  poolSize: number;
  heraldUrl: string;
  token: string;
  batch: number;
  /** Starts Herald's delivery workers in this process (once the webhooks are stored). */
  startWorkers(): Promise<{ close(): Promise<void> }>;
}

interface Run {
  count: number;
  seconds: number;
  /** CPU ms per message: Herald's processes (or this process by hand), the broker's. */
  cpu: number;
  broker: number;
  /** Herald's `cpu` by group: this process / its Postgres backends / redis-server. */
  parts?: [number, number, number];
}

/** Herald's CPU per message, and its parts. */
const heraldCpuCell = (r: Run, broker: string) =>
  `${r.cpu.toFixed(3)} (${r.parts!.map((v) => v.toFixed(3)).join(' / ')}) + ${r.broker.toFixed(3)}${broker}`;

/** Publishes `count` copies of `message`, IN_FLIGHT awaiting their acknowledgement at a time. */
async function byHand(
  place: Place,
  message: Message,
  count: number,
  kind: BrokerKind,
): Promise<Run> {
  const publisher = await place.open();
  try {
    let next = 0;
    const loop = async () => {
      while (next < count) {
        next++;
        await publisher.publish(message);
      }
    };
    // Warm-up: the connection, the JIT.
    await Promise.all(Array.from({ length: IN_FLIGHT }, () => publisher.publish(message)));
    const brokerPids = pidsNamed(BROKER_PROCESS[kind]);
    const brokerBefore = brokerPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
    const before = sampleCpu();
    const started = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
    const seconds = (performance.now() - started) / 1000;
    const used = cpuPer(before, sampleCpu(), count);
    const broker =
      (brokerPids.reduce((sum, pid) => sum + processCpuMs(pid), 0) - brokerBefore) / count;
    // By hand, Redis is the broker only for a stream (its CPU is in `broker`, not twice).
    return { count, seconds, cpu: used.bench, broker };
  } finally {
    await publisher.close();
  }
}

/** The model ids a kind's webhooks filter on (their own: no other row's webhook matches). */
const modelBase = (kind: BrokerKind | 'http') =>
  2000 + 100 * (kind === 'http' ? BROKER_KINDS.length : BROKER_KINDS.indexOf(kind));

async function delivered(db: Db, webhookIds: readonly string[]): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM webhook_calls WHERE webhook_id::text = ANY($1) AND status = 'success'`,
    [webhookIds],
  );
  return Number(rows[0]?.n ?? 0);
}

async function waitDelivered(db: Db, ids: readonly string[], expected: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  while ((await delivered(db, ids)) < expected) {
    if (Date.now() > deadline) throw new Error(`not all ${expected} messages were delivered`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The destination rows, one pair per kind, and their table. */
export async function destinationRows(
  h: DestinationHarness,
  kinds: readonly BrokerKind[],
): Promise<string[]> {
  const places = new Map<BrokerKind, Place>();
  const webhooks = new Map<BrokerKind, string[]>();
  /** WEBHOOKS webhooks of `kind`, one per model of its own. */
  const addWebhooks = async (kind: BrokerKind | 'http', destination: Destination) => {
    const base = modelBase(kind);
    await postEvents(
      h.heraldUrl,
      h.token,
      Array.from({ length: WEBHOOKS }, (_, i) => modelEvent(base + i)),
    );
    const ids: string[] = [];
    for (let i = 0; i < WEBHOOKS; i++) {
      const webhook = await insertWebhook(
        h.db,
        testWebhookInput({
          name: `${kind}-${i}`,
          url: `${h.receiverUrl}/hooks/destinations-http`,
          headers: { 'X-Bench': 'herald' },
          events: [
            {
              entity_type: 'item',
              event_types: ['create'],
              filters: [{ entity_type: 'item_type', entity_ids: [`model-${base + i}`] }],
            },
          ],
          destination,
        }),
      );
      ids.push(webhook.id);
    }
    return ids;
  };
  try {
    const httpIds = await addWebhooks('http', { kind: 'http' });
    for (const kind of kinds) {
      const place = await PLACES[kind]();
      places.set(kind, place);
      webhooks.set(kind, await addWebhooks(kind, place.destination));
    }
    const workers = await h.startWorkers();
    const rows: { kind: BrokerKind; herald: Run; hand: Run; floor: Run }[] = [];
    let http: Run;
    try {
      process.stdout.write('destination http (reference)…\n');
      http = await heraldRun(h, 'http', httpIds);
      for (const kind of kinds) {
        process.stdout.write(`destination ${kind}…\n`);
        rows.push({ kind, ...(await kindRuns(h, kind, places.get(kind)!, webhooks.get(kind)!)) });
      }
    } finally {
      await workers.close();
    }
    const rate = (r: Run) => r.count / r.seconds;
    return [
      `Herald delivering ${EVENTS} events end to end to each broker (POST /events ${h.batch} per request → match → publish → acknowledgement → outcome recorded; ${WEBHOOKS} webhooks, one per model, sharing one connection) beside the same client library publishing the same body and headers by hand, ${IN_FLIGHT} awaiting their acknowledgement at a time. CPU ms per message: Herald = this process (ingest, poster, workers) + its Postgres backends + redis-server; by hand = this process; broker = the broker's process. The floor: the same events stored, matched, published and logged by hand (./floor.ts) with the same client library, ${IN_FLIGHT} publishes at a time.`,
      '',
      ...table(
        [
          'destination',
          'Herald delivered/s',
          'by hand /s',
          'Herald ÷ by hand',
          'CPU ms/msg Herald (bench process / Postgres / redis) + broker',
          'CPU ms/msg by hand + broker',
          `target ≥ ${TARGET}×`,
          'floor /s (÷ by hand)',
          'Herald ÷ floor',
          'CPU ms/msg floor (bench process / Postgres) + broker',
        ],
        [
          ...rows.map(({ kind, herald, hand, floor }) => [
            kind,
            String(Math.round(rate(herald))),
            String(Math.round(rate(hand))),
            `${(rate(herald) / rate(hand)).toFixed(2)}×`,
            heraldCpuCell(herald, ''),
            `${hand.cpu.toFixed(3)} + ${hand.broker.toFixed(3)}`,
            rate(herald) >= TARGET * rate(hand) ? 'PASS' : 'FAIL',
            `${Math.round(rate(floor))} (${(rate(floor) / rate(hand)).toFixed(2)}×)`,
            `${(rate(herald) / rate(floor)).toFixed(2)}×`,
            `${floor.cpu.toFixed(3)} (${floor
              .parts!.slice(0, 2)
              .map((v) => v.toFixed(3))
              .join(' / ')}) + ${floor.broker.toFixed(3)}`,
          ]),
          [
            'http (reference: the same webhooks to the bench receiver)',
            String(Math.round(rate(http))),
            '',
            '',
            heraldCpuCell(http, ' (receiver)'),
            '',
            '',
            '',
            '',
            '',
          ],
        ],
      ).split('\n'),
    ];
  } finally {
    for (const place of places.values()) await place.remove();
  }
}

/** Herald's run to one kind's webhooks (after a warm-up), then the by-hand run. */
async function kindRuns(
  h: DestinationHarness,
  kind: BrokerKind,
  place: Place,
  ids: readonly string[],
): Promise<{ herald: Run; hand: Run; floor: Run }> {
  const herald = await heraldRun(h, kind, ids);
  // The same body and headers, as Herald published one of them.
  const { rows } = await h.db.query<{ body: string; headers: Record<string, string> }>(
    `SELECT request_payload AS body, request_headers AS headers FROM webhook_calls
     WHERE webhook_id::text = ANY($1) AND status = 'success' LIMIT 1`,
    [ids],
  );
  const message = rows[0]!;
  const hand = await byHand(place, message, EVENTS, kind);
  const floor = await floorRun(h, kind, place, message);
  return { herald, hand, floor };
}

/**
 * The floor (./floor.ts) delivering EVENTS events to the kind's webhooks after a warm-up, its
 * step 3 the client library's publish of the same body size with Herald's headers.
 */
async function floorRun(
  h: DestinationHarness,
  kind: BrokerKind,
  place: Place,
  message: Message,
): Promise<Run> {
  const publisher = await place.open();
  const floor = await startFloor({
    connectionString: h.connectionString,
    schema: h.schema,
    token: h.token,
    bodyBytes: Buffer.byteLength(message.body),
    connections: IN_FLIGHT,
    poolSize: h.poolSize,
    webhookNames: [`${kind}-%`],
    publish: { send: (m) => publisher.publish(m), headers: message.headers, url: kind },
    postBatches: (url, events) => postInBatches(url, h.token, events, h.batch),
  });
  try {
    await floor.publishRun(kindEvents(kind, WARMUP_EVENTS));
    const brokerPids = pidsNamed(BROKER_PROCESS[kind]);
    const brokerCpu = () => brokerPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
    const brokerBefore = brokerCpu();
    const run = await floor.publishRun(kindEvents(kind, EVENTS));
    if (run.failures > 0) throw new Error(`the ${kind} floor failed ${run.failures} times`);
    return {
      count: run.count,
      seconds: run.seconds,
      cpu: run.cpu.bench + run.cpu.postgres,
      broker: (brokerCpu() - brokerBefore) / run.count,
      parts: [run.cpu.bench, run.cpu.postgres, 0],
    };
  } finally {
    await floor.close();
    await publisher.close();
  }
}

/** `count` new records' create events, spread over the kind's WEBHOOKS models. */
const kindEvents = (kind: BrokerKind | 'http', count: number) =>
  Array.from({ length: count }, (_, i) =>
    itemEvent(
      'create',
      modelBase(kind) + (i % WEBHOOKS),
      `${kind}-${randomBytes(6).toString('hex')}`,
    ),
  );

/** Herald delivering EVENTS events to `ids` (one each), after a warm-up. */
async function heraldRun(
  h: DestinationHarness,
  kind: BrokerKind | 'http',
  ids: readonly string[],
): Promise<Run> {
  const events = (count: number) => kindEvents(kind, count);
  await postInBatches(h.heraldUrl, h.token, events(WARMUP_EVENTS), h.batch);
  await waitDelivered(h.db, ids, WARMUP_EVENTS);

  const backends = await backendPids(h.db, h.schema);
  const brokerPids = kind === 'http' ? [h.receiverPid] : pidsNamed(BROKER_PROCESS[kind]);
  const brokerCpu = () => brokerPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const brokerBefore = brokerCpu();
  const before = sampleCpu([], backends);
  const started = performance.now();
  await postInBatches(h.heraldUrl, h.token, events(EVENTS), h.batch);
  await waitDelivered(h.db, ids, WARMUP_EVENTS + EVENTS);
  const seconds = (performance.now() - started) / 1000;
  const used = cpuPer(before, sampleCpu([], backends), EVENTS);
  const broker = (brokerCpu() - brokerBefore) / EVENTS;
  // For a Redis stream the broker is redis-server, already Herald's `redis` column.
  const redis = kind === 'redis_stream' ? 0 : used.redis;
  return {
    count: EVENTS,
    seconds,
    cpu: used.bench + used.postgres + redis,
    broker,
    parts: [used.bench, used.postgres, redis],
  };
}
