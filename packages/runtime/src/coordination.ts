import { createHash } from 'node:crypto';
import { runMigrations } from 'bullmq';
import pg from 'pg';
import {
  leaseRequests,
  pruneRateLimitWindows,
  readDeploymentId,
  type Db,
  type Queryable,
} from '@herald/store';
import { errorMessage } from '@herald/contract';
import {
  DeploymentConflictError,
  deploymentKey,
  legacyDeploymentKey,
  type DeploymentClaim,
} from './deployment.js';
import type { Logger } from './logger.js';
import { closeRedis, isCluster, type RedisClient, type RedisTarget } from './redis.js';
import { settleWithin } from './settle-within.js';

/** The HTTP rate limit's answer for one key: its window's count, time left and this grant. */
export interface RequestLease {
  counted: number;
  ttlMs: number;
  granted: number;
}

/** A subscription to a channel; close() ends it. */
export interface Subscription {
  close(): Promise<void>;
}

/**
 * What Herald's processes share besides Postgres's tables and the queues, behind one interface:
 * Redis when REDIS_URL is set, else Postgres alone (tables of migration 027, LISTEN/NOTIFY,
 * advisory locks). Delivery's in-flight slots and rate-limit turns are built on either kind
 * (services/delivery, systems/limits/coordination.ts).
 */
interface CoordinationBase {
  readonly kind: 'redis' | 'postgres';
  /** REDIS_PREFIX: names the keys, the channels and, on Postgres, the queues' schema. */
  readonly prefix: string;
  /** Tells every process subscribed to `channel`; at most once, lost when nobody listens. */
  publish(channel: string, message: string): Promise<void>;
  /**
   * Calls onMessage for each message published on `channel`, and onReconnect after the
   * subscription was lost and made again (messages may have been missed meanwhile).
   */
  subscribe(
    channel: string,
    onMessage: (message: string) => void,
    onReconnect: () => void,
  ): Promise<Subscription>;
  /**
   * Ties the prefix to this deployment (the id migration 007 stores in Postgres): 'written' when
   * no deployment had claimed it (a first start, or the state was lost, jobs with it), 'claimed'
   * when this one had, DeploymentConflictError when another one had, 'unreachable' when no answer
   * came within timeoutMs (the caller carries on and claims again later).
   */
  claimDeployment(db: Queryable, timeoutMs?: number): Promise<DeploymentClaim>;
  /** Resolves when the coordination's store answers (readiness). */
  ping(): Promise<void>;
  /**
   * The HTTP rate limit's fixed window for `key` (packages/runtime/src/http/rate-limit.ts): grants
   * a lease of up to leaseMax requests, at most leaseShare of the room left, never past `limit`;
   * once the window is full a request is counted alone.
   */
  leaseRequests(
    key: string,
    windowMs: number,
    limit: number,
    leaseMax: number,
    leaseShare: number,
  ): Promise<RequestLease>;
  close(): Promise<void>;
}

export interface RedisCoordination extends CoordinationBase {
  readonly kind: 'redis';
  /**
   * The process's producer connection (fails fast): to one server, or to a Redis Cluster. Every
   * command, script and MULTI on it keeps to one slot (redis-keys.ts).
   */
  readonly redis: RedisClient;
  /** REDIS_URL, or REDIS_CLUSTER_NODES's cluster: for connections of their own (connectRedis). */
  readonly target: RedisTarget;
}

export interface PostgresCoordination extends CoordinationBase {
  readonly kind: 'postgres';
  readonly db: Db;
  /** The Postgres server's URL, for connections of their own (LISTEN, the queues' pools). */
  readonly url: string;
  /** The schema BullMQ's tables live in (queueSchema). */
  readonly queueSchema: string;
}

/** Coordination on either store: switch on `kind` for what only one of them has. */
export type Coordination = RedisCoordination | PostgresCoordination;

// The HTTP rate limit's window (see Coordination.leaseRequests): one round trip, atomic.
const LEASE_SCRIPT = `
local limit = tonumber(ARGV[2])
local free = limit - tonumber(redis.call('GET', KEYS[1]) or '0')
local grant = 1
if free > 0 then
  grant = math.max(1, math.min(tonumber(ARGV[3]), math.floor(free * tonumber(ARGV[4]))))
end
local n = redis.call('INCRBY', KEYS[1], grant)
if n == grant then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl, grant}`;

type LeaseRedis = RedisClient & {
  heraldRateLimitLease(
    key: string,
    windowMs: number,
    limit: number,
    leaseMax: number,
    leaseShare: number,
  ): Promise<[number, number, number]>;
};

/**
 * Coordination in Redis (REDIS_URL, or a cluster: REDIS_CLUSTER_NODES): `redis` is the process's
 * producer connection; subscriptions open connections of their own (`createSubscriber`, the worker
 * role). Its keys are single (the HTTP rate limit's windows, the deployment claim): each script
 * call and MULTI is on one slot. Pub/sub is Redis's classic one, which a cluster carries to every
 * node: a subscriber on any node hears a message published on any other.
 */
export function createRedisCoordination(options: {
  redis: RedisClient;
  target: RedisTarget;
  prefix: string;
  createSubscriber: () => RedisClient;
}): RedisCoordination {
  const { redis, prefix } = options;
  // EVALSHA (ioredis falls back to EVAL once per connection): with plain EVAL Redis hashes the
  // script text on every request.
  if (!('heraldRateLimitLease' in redis)) {
    redis.defineCommand('heraldRateLimitLease', { numberOfKeys: 1, lua: LEASE_SCRIPT });
  }
  return {
    kind: 'redis',
    redis,
    target: options.target,
    prefix,
    async publish(channel, message) {
      await redis.publish(channel, message);
    },
    async subscribe(channel, onMessage, onReconnect) {
      const subscriber = options.createSubscriber();
      subscriber.on('message', (from: string, text: string) => {
        if (from === channel) onMessage(text);
      });
      let subscribedOnce = false;
      subscriber.on('ready', () => {
        if (subscribedOnce) onReconnect();
        subscribedOnce = true;
      });
      // A cluster's client subscribes through one node and moves to another when that one goes
      // (ioredis subscribes again there): messages published meanwhile were missed.
      if (isCluster(subscriber)) subscriber.on('-node', () => onReconnect());
      await subscriber.subscribe(channel);
      return {
        close: () => closeRedis(subscriber),
      };
    },
    async claimDeployment(db, timeoutMs = 5000) {
      const ours = await readDeploymentId(db);
      const reply = await withTimeout(
        (async () => {
          if (redis.status !== 'ready') await onceReady(redis);
          const key = deploymentKey(prefix);
          const [[, set] = [], [, current] = []] =
            (await redis.multi().set(key, ours, 'NX').get(key).exec()) ?? [];
          return { set, current };
        })(),
        timeoutMs,
      );
      if (!reply) return 'unreachable';
      const conflict = (theirs: unknown, key: string): DeploymentConflictError =>
        new DeploymentConflictError(
          `the Redis prefix "${prefix}" (REDIS_PREFIX)`,
          String(theirs),
          ours,
          `delete the key "${key}" in Redis`,
        );
      if (reply.current !== ours) throw conflict(reply.current, deploymentKey(prefix));
      if (reply.set !== 'OK') return 'claimed';
      // Written: a first start, a loss, or an earlier Herald's claim under the old key (another
      // slot: read apart, not in the MULTI).
      const legacy = legacyDeploymentKey(prefix);
      const earlier = await withTimeout(redis.get(legacy), timeoutMs);
      if (earlier !== undefined && earlier !== null && earlier !== ours) {
        throw conflict(earlier, legacy);
      }
      return 'written';
    },
    async ping() {
      await redis.ping();
    },
    async leaseRequests(key, windowMs, limit, leaseMax, leaseShare) {
      const [counted, ttlMs, granted] = await (redis as LeaseRedis).heraldRateLimitLease(
        key,
        windowMs,
        limit,
        leaseMax,
        leaseShare,
      );
      return { counted, ttlMs, granted };
    },
    close: () => closeRedis(redis),
  };
}

/** The schema of the queues' tables on Postgres (BullMQ's backend), one per REDIS_PREFIX. */
export const queueSchema = (prefix: string): string => `${prefix}_queues`;

/** A NOTIFY channel name: Postgres takes at most 63 bytes; a longer name goes by its digest. */
export function notifyChannel(channel: string): string {
  if (Buffer.byteLength(channel) <= 63) return channel;
  return `herald_${createHash('sha256').update(channel).digest('hex').slice(0, 40)}`;
}

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** How long a lost LISTEN connection waits before it connects again, at most. */
const LISTEN_RETRY_MAX_MS = 5000;
/** Time between two prunings of the HTTP rate limit's ended windows. */
const PRUNE_INTERVAL_MS = 60_000;

/**
 * Coordination on Postgres alone (REDIS_URL unset): statements on `db` (migration 027's tables),
 * LISTEN on a connection of its own per subscription, the deployment claim as the comment of the
 * queues' schema (made by migrateQueues, or here).
 */
export function createPostgresCoordination(options: {
  db: Db;
  url: string;
  prefix: string;
  logger: Logger;
}): PostgresCoordination {
  const { db, prefix, logger } = options;
  const schema = queueSchema(prefix);
  const subscriptions = new Set<Subscription>();
  const pruner = setInterval(() => {
    pruneRateLimitWindows(db).catch(() => undefined);
  }, PRUNE_INTERVAL_MS);
  pruner.unref();
  return {
    kind: 'postgres',
    db,
    url: options.url,
    queueSchema: schema,
    prefix,
    async publish(channel, message) {
      await db.query('SELECT pg_notify($1, $2)', [notifyChannel(channel), message]);
    },
    async subscribe(channel, onMessage, onReconnect) {
      const name = notifyChannel(channel);
      let client: pg.Client | undefined;
      let closed = false;
      let retryMs = 100;
      let timer: NodeJS.Timeout | undefined;
      const connect = async (): Promise<void> => {
        const next = new pg.Client({
          connectionString: options.url,
          application_name: `herald-listen`,
          keepAlive: true,
        });
        next.on('notification', (notice: pg.Notification) => {
          if (notice.channel === name && notice.payload !== undefined) onMessage(notice.payload);
        });
        next.on('error', (error: Error) => {
          if (closed || client !== next) return;
          logger.warn({ err: error.message }, 'LISTEN connection lost; connecting again');
          client = undefined;
          next.end().catch(() => undefined);
          retry();
        });
        await next.connect();
        await next.query(`LISTEN ${quoteIdent(name)}`);
        client = next;
      };
      const retry = (): void => {
        timer = setTimeout(() => {
          connect().then(
            () => {
              retryMs = 100;
              onReconnect();
            },
            () => {
              retryMs = Math.min(LISTEN_RETRY_MAX_MS, retryMs * 2);
              retry();
            },
          );
        }, retryMs);
      };
      await connect();
      const subscription: Subscription = {
        async close() {
          closed = true;
          clearTimeout(timer);
          subscriptions.delete(subscription);
          await client?.end().catch(() => undefined);
        },
      };
      subscriptions.add(subscription);
      return subscription;
    },
    async claimDeployment(claimer, timeoutMs = 5000) {
      const ours = await readDeploymentId(claimer);
      const reply = await withTimeout(
        db.transaction(async (tx) => {
          await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:deployment:' || $1))`, [
            schema,
          ]);
          const { rows } = await tx.query<{ claimed: string | null }>(
            `SELECT obj_description(oid, 'pg_namespace') AS claimed
             FROM pg_namespace WHERE nspname = $1`,
            [schema],
          );
          if (!rows[0]) {
            await tx.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
          }
          const current = /^herald deployment (\S+)$/.exec(rows[0]?.claimed ?? '')?.[1];
          if (current !== undefined) return { set: false, current };
          // The schema is an identifier made of REDIS_PREFIX; the id is this database's.
          await tx.query(
            `COMMENT ON SCHEMA ${quoteIdent(schema)} IS ${quoteLiteral(`herald deployment ${ours}`)}`,
          );
          return { set: true, current: ours };
        }),
        timeoutMs,
      );
      if (!reply) return 'unreachable';
      if (reply.current !== ours) {
        throw new DeploymentConflictError(
          `the queues' schema "${schema}" (REDIS_PREFIX)`,
          reply.current,
          ours,
          `drop its comment: COMMENT ON SCHEMA ${quoteIdent(schema)} IS NULL`,
        );
      }
      return reply.set ? 'written' : 'claimed';
    },
    async ping() {
      await db.query('SELECT 1');
    },
    leaseRequests: (key, windowMs, limit, leaseMax, leaseShare) =>
      leaseRequests(db, key, windowMs, limit, leaseMax, leaseShare),
    async close() {
      clearInterval(pruner);
      await Promise.all([...subscriptions].map((subscription) => subscription.close()));
    },
  };
}

/**
 * Creates or upgrades BullMQ's tables in the queues' schema (idempotent; concurrent starters
 * migrate once, under BullMQ's advisory lock).
 */
export async function migrateQueues(url: string, schema: string, logger: Logger): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-migrate' });
  client.on('error', (error: Error) => logger.warn({ err: errorMessage(error) }, 'migrate'));
  await client.connect();
  try {
    await runMigrations(client, schema);
  } finally {
    await client.end();
  }
}

function onceReady(redis: RedisClient): Promise<void> {
  return new Promise((resolve) => redis.once('ready', () => resolve()));
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  const answer = work.catch((error: unknown) => {
    // A conflict is an answer; anything else is no answer.
    if (error instanceof DeploymentConflictError) throw error;
    return undefined;
  });
  return settleWithin(answer, ms, () => undefined);
}
