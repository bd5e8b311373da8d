import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeReadAfter, errorId } from '@herald/contract';
import type { Redis } from '@herald/runtime';
import {
  createPostgresDb,
  migrate,
  readCommitPosition,
  upsertEnvironment,
  type Db,
} from '@herald/store';
import {
  WAIT_TIMEOUT_MS,
  createReplicatedPostgres,
  createTestToken,
  defineModel,
  freePort,
  putRecord,
  serve,
  startTcpProxy,
  testApi,
  testDeps,
  testRedis,
  type ReplicatedPostgres,
  type TestAnswer,
  type TestApi,
  type TestServer,
} from '@herald/testkit';
import { createApp, type ReadDeps } from '../app.js';

/**
 * GET /items and GET /items/:id on a primary and a streaming replica of the file's own: reads go
 * to the replica, and a read given X-Herald-Read-After is never older than the position it names
 * (the replica once it has replayed that far, else the primary). Replay is paused to make the
 * replica lag for as long as a test needs.
 */

const WAIT_MS = 300;

let cluster: ReplicatedPostgres;
let primary: Db;
let replica: Db;
let redis: Redis;
let token: string;
const servers: TestServer[] = [];

beforeAll(async () => {
  cluster = await createReplicatedPostgres();
  primary = createPostgresDb({ connectionString: cluster.primary.url('herald') });
  replica = createPostgresDb({ connectionString: cluster.replica.url('herald') });
  await migrate(primary);
  await upsertEnvironment(primary, 'main', ['en']);
  await defineModel(primary, 'main', {
    id: 'm_note',
    apiKey: 'note',
    fields: [{ apiKey: 'title', fieldType: 'string' }],
  });
  redis = testRedis();
  token = await createTestToken(primary, 'read_only');
}, 120_000);

afterAll(async () => {
  for (const server of servers) await server.close();
  await redis?.quit();
  await Promise.all([primary?.close(), replica?.close()]);
  await cluster?.destroy();
}, 60_000);

interface App {
  api: TestApi;
  /** herald_read_after_total by served_by, and the replica lag gauges, from /metrics. */
  metric(name: string): Promise<number>;
}

async function startApp(deps: Partial<ReadDeps>): Promise<App> {
  const server = await serve(
    createApp({ ...testDeps(primary, redis), readDb: primary, readAfterWaitMs: WAIT_MS, ...deps }),
  );
  servers.push(server);
  const api = testApi(server.url, token);
  return {
    api,
    async metric(name) {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      return line ? Number(line.slice(name.length + 1)) : NaN;
    },
  };
}

/** Saves note `id` with this title on the primary; the read-after token of that commit. */
async function saveNote(id: string, title: string): Promise<string> {
  await putRecord(primary, 'main', ['en'], {
    id,
    itemTypeId: 'm_note',
    attributes: { title },
    mode: 'save',
    createdAt: new Date('2026-01-01T00:00:00Z'),
    updatedAt: new Date(),
  });
  return encodeReadAfter(await readCommitPosition(primary));
}

/** GET /items/:id?version=current (and the list filtered on it): the titles each answered. */
async function titles(
  api: TestApi,
  id: string,
  readAfter?: string,
): Promise<{ retrieved: unknown; listed: unknown }> {
  const headers = readAfter ? { 'x-herald-read-after': readAfter } : undefined;
  const one = await api.fetch(`/items/${id}?version=current`, { headers });
  const list = await api.fetch(`/items?filter[ids]=${id}&version=current`, { headers });
  const oneBody = (await one.json()) as { data: { attributes: { title: string } } };
  const listBody = (await list.json()) as { data: { attributes: { title: string } }[] };
  return {
    retrieved: one.status === 200 ? oneBody.data.attributes.title : one.status,
    listed: list.status === 200 ? (listBody.data[0]?.attributes.title ?? null) : list.status,
  };
}

const PRIMARY = 'herald_read_after_total{served_by="primary"}';
const REPLICA = 'herald_read_after_total{served_by="replica"}';

describe('with a replica (READ_DATABASE_URL)', () => {
  let app: App;
  beforeAll(async () => {
    app = await startApp({ readReplicaDb: replica });
  });

  it('reads the replica: without a token a lagging replica answers what it has', async () => {
    const first = await saveNote('n1', 'v1');
    expect(await titles(app.api, 'n1', first)).toEqual({ retrieved: 'v1', listed: 'v1' });
    await cluster.replica.pauseReplay();
    try {
      await saveNote('n1', 'v2');
      expect(await titles(app.api, 'n1')).toEqual({ retrieved: 'v1', listed: 'v1' });
    } finally {
      await cluster.replica.resumeReplay();
    }
  });

  it('never answers older than the token: the primary when the replica stays behind', async () => {
    await saveNote('n2', 'v1');
    await cluster.replica.pauseReplay();
    try {
      const [primaryBefore, replicaBefore] = [await app.metric(PRIMARY), await app.metric(REPLICA)];
      const readAfter = await saveNote('n2', 'v2');
      const started = Date.now();
      expect(await titles(app.api, 'n2', readAfter)).toEqual({ retrieved: 'v2', listed: 'v2' });
      // Each read waited for the replica first.
      expect(Date.now() - started).toBeGreaterThanOrEqual(2 * WAIT_MS);
      expect(await app.metric(PRIMARY)).toBe(primaryBefore + 2);
      expect(await app.metric(REPLICA)).toBe(replicaBefore);
      // Meanwhile, without the token, the replica's older record.
      expect(await titles(app.api, 'n2')).toEqual({ retrieved: 'v1', listed: 'v1' });
    } finally {
      await cluster.replica.resumeReplay();
    }
  });

  it('reads the replica once it has replayed the token, also when that happens during the wait', async () => {
    // A pool of its own, to see on the replica when this app has asked it how far it is.
    const own = createPostgresDb({
      connectionString: cluster.replica.url('herald'),
      applicationName: 'read-after-patient',
    });
    try {
      const patient = await startApp({ readReplicaDb: own, readAfterWaitMs: 60_000 });
      await saveNote('n3', 'v1');
      await cluster.replica.pauseReplay();
      let readAfter: string;
      let reading: Promise<unknown>;
      try {
        readAfter = await saveNote('n3', 'v2');
        reading = titles(patient.api, 'n3', readAfter);
        // The read is waiting: the app has asked the replica, which cannot have got there.
        await expect
          .poll(
            () =>
              cluster.replica.psql(
                `SELECT count(*) FROM pg_stat_activity WHERE application_name =
                   'read-after-patient' AND query LIKE '%pg_last_wal_replay_lsn%'`,
              ),
            { timeout: WAIT_TIMEOUT_MS },
          )
          .not.toBe('0');
        expect(await patient.metric(REPLICA)).toBe(0);
      } finally {
        await cluster.replica.resumeReplay();
      }
      expect(await reading).toEqual({ retrieved: 'v2', listed: 'v2' });
      expect(await patient.metric(REPLICA)).toBe(2);
      expect(await patient.metric(PRIMARY)).toBe(0);
      // Replayed already: the replica at once.
      expect(await titles(patient.api, 'n3', readAfter)).toEqual({ retrieved: 'v2', listed: 'v2' });
      expect(await patient.metric(REPLICA)).toBe(4);
    } finally {
      await own.close();
    }
  });

  it('asks the replica once with READ_AFTER_WAIT_MS=0', async () => {
    const readAfter = await saveNote('n8', 'v1');
    await expect
      .poll(() => app.metric('herald_replica_lag_bytes'), { timeout: WAIT_TIMEOUT_MS })
      .toBe(0);
    const hasty = await startApp({ readReplicaDb: replica, readAfterWaitMs: 0 });
    expect(await titles(hasty.api, 'n8', readAfter)).toEqual({ retrieved: 'v1', listed: 'v1' });
    expect(await hasty.metric(REPLICA)).toBe(2);
    await cluster.replica.pauseReplay();
    try {
      const later = await saveNote('n8', 'v2');
      expect(await titles(hasty.api, 'n8', later)).toEqual({ retrieved: 'v2', listed: 'v2' });
      expect(await hasty.metric(PRIMARY)).toBe(2);
    } finally {
      await cluster.replica.resumeReplay();
    }
  });

  it('exports how far the replica lags', async () => {
    await saveNote('n4', 'v1');
    await expect
      .poll(() => app.metric('herald_replica_lag_bytes'), { timeout: WAIT_TIMEOUT_MS })
      .toBe(0);
    expect(await app.metric('herald_replica_lag_seconds')).toBe(0);
    await cluster.replica.pauseReplay();
    try {
      await saveNote('n4', 'v2');
      expect(await app.metric('herald_replica_lag_bytes')).toBeGreaterThan(0);
      expect(await app.metric('herald_replica_lag_seconds')).toBeGreaterThan(0);
    } finally {
      await cluster.replica.resumeReplay();
    }
    await expect
      .poll(() => app.metric('herald_replica_lag_bytes'), { timeout: WAIT_TIMEOUT_MS })
      .toBe(0);
  });

  it('refuses a header that is not a token: 400 INVALID_READ_AFTER_HEADER, both routes', async () => {
    const valid = encodeReadAfter(0n);
    for (const header of ['nope', `${valid}=`, `${valid}, ${valid}`, 'bHNuMTowLzAw']) {
      for (const path of ['/items', '/items/n1']) {
        const answer = await app.api.fetch(path, { headers: { 'x-herald-read-after': header } });
        expect(answer.status).toBe(400);
        const body = (await answer.json()) as { data: { id: string; attributes: object }[] };
        expect(body.data[0]).toMatchObject({
          id: errorId('INVALID_READ_AFTER_HEADER'),
          attributes: {
            code: 'INVALID_READ_AFTER_HEADER',
            details: { header: 'X-Herald-Read-After' },
          },
        });
      }
    }
  });
});

describe('without a replica', () => {
  it('reads the primary, tokens or not: a token is met at once', async () => {
    const app = await startApp({});
    const readAfter = await saveNote('n5', 'v1');
    expect(await titles(app.api, 'n5', readAfter)).toEqual({ retrieved: 'v1', listed: 'v1' });
    expect(await titles(app.api, 'n5')).toEqual({ retrieved: 'v1', listed: 'v1' });
    expect(await app.metric(PRIMARY)).toBe(2);
    expect(await app.metric(REPLICA)).toBe(0);
    expect(await app.metric('herald_replica_lag_bytes')).toBeNaN();
    const bad = await app.api.fetch('/items', { headers: { 'x-herald-read-after': 'nope' } });
    expect(bad.status).toBe(400);
  });
});

describe('a replica that cannot say how far it is', () => {
  it('sends reads with a token to the primary at once: READ_DATABASE_URL naming no replica', async () => {
    const app = await startApp({ readReplicaDb: primary, readAfterWaitMs: 60_000 });
    const readAfter = await saveNote('n6', 'v1');
    expect(await titles(app.api, 'n6', readAfter)).toEqual({ retrieved: 'v1', listed: 'v1' });
    expect(await app.metric(PRIMARY)).toBe(2);
  });

  it('sends every read to the primary when unreachable: tokens at once, the others after a try', async () => {
    const unreachable = createPostgresDb({
      connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/herald`,
    });
    try {
      const app = await startApp({ readReplicaDb: unreachable, readAfterWaitMs: 60_000 });
      const readAfter = await saveNote('n7', 'v1');
      expect(await titles(app.api, 'n7', readAfter)).toEqual({ retrieved: 'v1', listed: 'v1' });
      expect(await app.metric(PRIMARY)).toBe(2);
      expect(await titles(app.api, 'n7')).toEqual({ retrieved: 'v1', listed: 'v1' });
    } finally {
      await unreachable.close();
    }
  });
});

describe('a read the replica fails', () => {
  it('runs on the primary when the replica stops and restarts under it', async () => {
    // Through a proxy, so that the replica can go away for this app alone.
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: cluster.replica.port });
    const through = createPostgresDb({
      connectionString: proxy.url(cluster.replica.url('herald')),
    });
    try {
      const app = await startApp({ readReplicaDb: through });
      await saveNote('n9', 'v1');
      await expect.poll(() => titles(app.api, 'n9')).toEqual({ retrieved: 'v1', listed: 'v1' });
      // Its pooled connections cut, new ones refused.
      await proxy.cut();
      expect(await titles(app.api, 'n9')).toEqual({ retrieved: 'v1', listed: 'v1' });
      await proxy.restore();
      expect(await titles(app.api, 'n9')).toEqual({ retrieved: 'v1', listed: 'v1' });
    } finally {
      await through.close();
      await proxy.close();
    }
  });

  it('runs on the primary when the replica cancels it for a conflict with recovery (40001)', async () => {
    // The standby cancels a conflicting read at once, instead of after 30 s.
    await cluster.replica.psql('ALTER SYSTEM SET max_standby_streaming_delay = 0');
    await cluster.replica.psql('SELECT pg_reload_conf()');
    const own = createPostgresDb({
      connectionString: cluster.replica.url('herald'),
      applicationName: 'read-conflict',
    });
    try {
      const app = await startApp({ readReplicaDb: own });
      await saveNote('n10', 'v1');
      await expect.poll(() => titles(app.api, 'n10')).toEqual({ retrieved: 'v1', listed: 'v1' });
      const locksOnReplica = (mode: string, table: string) =>
        cluster.replica.psql(
          `SELECT count(*) FROM pg_locks WHERE relation = '${table}'::regclass AND mode = '${mode}' AND granted`,
          'herald',
        );
      let listing: Promise<TestAnswer> | undefined;
      // The listing's page statement locks records, then item_types (in this order: its FROM
      // first). Held on the primary, item_types' exclusive lock is replayed: the standby's
      // recovery holds it, and the statement waits there, holding its lock on records. Then an
      // exclusive lock of records on the primary, replayed, conflicts with the statement, which
      // the standby cancels: "canceling statement due to conflict with recovery".
      await primary.transaction(async (tx) => {
        await tx.query('LOCK TABLE item_types IN ACCESS EXCLUSIVE MODE');
        // The lock's WAL record goes to the standby once flushed: another transaction's commit.
        await cluster.primary.psql('SELECT txid_current()');
        await expect
          .poll(() => locksOnReplica('AccessExclusiveLock', 'item_types'), {
            timeout: WAIT_TIMEOUT_MS,
          })
          .toBe('1');
        listing = app.api.call('GET', '/items?filter[ids]=n10&version=current');
        await expect
          .poll(
            () =>
              cluster.replica.psql(
                `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'read-conflict'
                   AND wait_event_type = 'Lock'`,
              ),
            { timeout: WAIT_TIMEOUT_MS },
          )
          .toBe('1');
        await cluster.primary.psql(
          'BEGIN; LOCK TABLE records IN ACCESS EXCLUSIVE MODE; COMMIT',
          'herald',
        );
      });
      const answer = await listing!;
      expect(answer.status).toBe(200);
      expect(answer.body.data.map((item: { id: string }) => item.id)).toEqual(['n10']);
      const conflicts = await cluster.replica.psql(
        "SELECT confl_lock FROM pg_stat_database_conflicts WHERE datname = 'herald'",
      );
      expect(Number(conflicts)).toBeGreaterThan(0);
    } finally {
      await own.close();
      await cluster.replica.psql('ALTER SYSTEM RESET max_standby_streaming_delay');
      await cluster.replica.psql('SELECT pg_reload_conf()');
    }
  });
});
