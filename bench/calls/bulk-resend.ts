import { deliverySettings, loadConfig, startDelivery } from '@herald/delivery';
import { createMetrics } from '@herald/runtime';
import { createBulkJob, findBulkJob, insertWebhook, type BulkJobRecord } from '@herald/store';
import {
  createTestDb,
  deleteTestRedisKeys,
  randomId,
  silentLogger,
  testRedis,
  testRedisCoordination,
  testWebhookInput,
} from '@herald/testkit';
import { backendPids, cpuPer, sampleCpu } from '../lib/cpu.js';
import { ReceiverProcess, baseline } from '../lib/receiver-process.js';

/** What a bulk resend and its baseline measured in one run. */
export interface BulkResendFigures {
  calls: number;
  inFlight: number;
  herald: { seconds: number; perSecond: number; cpuMsPer1000: { node: number; postgres: number } };
  raw: { seconds: number; perSecond: number };
}

/**
 * Bulk resend throughput (issue #14): `calls` failed calls of one webhook resent by one unpaced
 * bulk job (POST /bulk_jobs' job, run by a delivery runtime in this process) to a raw node:http
 * receiver in a child process, from the job's creation to its completion (selection included),
 * beside raw undici sending as many POSTs of the same size with the same number in flight
 * (the webhook's in-flight limit), in the same run. A schema of its own in the test database.
 */
export async function benchBulkResend(calls: number, inFlight = 64): Promise<BulkResendFigures> {
  const receiver = await ReceiverProcess.start();
  const testDb = await createTestDb('postgres');
  const redis = testRedis();
  // A herald_test prefix: deleteTestRedisKeys removes its keys afterwards.
  const prefix = randomId('herald_test');
  const config = loadConfig({
    ...process.env,
    REDIS_PREFIX: prefix,
    SSRF_ALLOW_CIDRS: '127.0.0.0/8',
  });
  const settings = {
    ...deliverySettings(config),
    maxInFlightPerWebhook: inFlight,
    bulkJobsPollMs: 50,
  };
  const delivery = await startDelivery(
    {
      db: testDb.db,
      coordination: testRedisCoordination(redis, prefix),
      logger: silentLogger(),
      registry: createMetrics({ defaultMetrics: false }).registry,
    },
    settings,
  );
  try {
    const webhook = await insertWebhook(
      testDb.db,
      testWebhookInput({ url: `${receiver.url}/bulk`, name: 'bulk' }),
    );
    // The calls of `calls` upload events, failed: what an outage leaves behind.
    await testDb.db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity, matched_at)
       SELECT 'bulk-' || i, 'main', true, 'upload', 'update', 'u-' || i, now(),
         jsonb_build_object('type', 'upload', 'id', 'u-' || i, 'attributes',
           jsonb_build_object('filename', 'photo-' || i || '.jpg', 'size', 1000 + i)), now()
       FROM generate_series(1, $1) AS i`,
      [calls],
    );
    await testDb.db.query(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status,
         failure_reason, last_sent_at)
       SELECT 'bulk-' || i, $2, 'upload', 'update', 'failed', 'HTTP 503', now()
       FROM generate_series(1, $1) AS i`,
      [calls, webhook.id],
    );
    const backends = await backendPids(testDb.db, testDb.schema!);
    const before = (await receiver.stats()).count;
    const cpu = sampleCpu([receiver.pid], backends.length ? backends : undefined);
    const started = performance.now();
    const job = await createBulkJob(testDb.db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id, status: 'failed' },
      ratePerSecond: null,
    });
    let done: BulkJobRecord | null = null;
    while (done?.state !== 'completed') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      done = await findBulkJob(testDb.db, job.id);
      if (done?.state === 'failed' || done?.state === 'cancelled') {
        throw new Error(`the bulk job ended ${done.state}: ${done.failureReason ?? ''}`);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const used = cpuPer(cpu, sampleCpu([receiver.pid], backends), calls / 1000);
    const received = (await receiver.stats()).count - before;
    if (received !== calls || done.succeeded !== calls) {
      throw new Error(`sent ${received}, succeeded ${done.succeeded}, of ${calls}`);
    }
    const { bytes } = await receiver.stats();
    const raw = await baseline(`${receiver.url}/raw`, bytes, inFlight, calls);
    return {
      calls,
      inFlight,
      herald: {
        seconds,
        perSecond: calls / seconds,
        cpuMsPer1000: { node: used.bench, postgres: used.postgres },
      },
      raw: { seconds: raw.seconds, perSecond: calls / raw.seconds },
    };
  } finally {
    await delivery.close();
    await redis.quit();
    await deleteTestRedisKeys();
    await testDb.cleanup();
    await receiver.stop();
  }
}
