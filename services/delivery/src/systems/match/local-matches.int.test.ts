import { describe, expect } from 'vitest';
import { insertEvents, insertWebhook } from '@herald/store';
import { randomId } from '@herald/testkit';
import {
  COORDINATION_MODES,
  addWebhook,
  itemEvent,
  itemEventsIn,
  pipelineTest,
  startPipeline,
  waitForCall,
  webhookInput,
  type Pipeline,
} from '../../harness.test-support.js';

// The match of what this process's ingest committed, handed over in memory (LocalMatches via
// LocalMatchHandOff): no match job, the same calls and first attempts.

const tests = { redis: pipelineTest({}, 'redis'), postgres: pipelineTest({}, 'postgres') };

/** Events matched in memory by this pipeline so far. */
async function matchedLocally(pipeline: Pipeline): Promise<number> {
  const metric = pipeline.registry.getSingleMetric('herald_events_matched_locally_total');
  return (await metric!.get()).values[0]?.value ?? 0;
}

/** A webhook taking the item updates of `env`, sent to `url`. */
const updatesTo = (url: string, env: string) =>
  webhookInput(url, { events: itemEventsIn(env, ['update']) });

describe.each(COORDINATION_MODES)('%s', (mode) => {
  const it = tests[mode];

  it('matches and delivers the ids handed over in memory, without a match job', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const env = randomId('env');
    const webhook = await addWebhook(db, pipeline, updatesTo(receiver.url, env));
    const events = [itemEvent({ environment: env }), itemEvent({ environment: env })];
    await insertEvents(db, events);
    const before = await matchedLocally(pipeline);
    expect(pipeline.localMatch.offer(events.map((event) => event.id))).toBe(true);
    for (const event of events) await waitForCall(db, event.id, webhook.id, ['success']);
    expect(await matchedLocally(pipeline)).toBe(before + 2);
    // Nothing went through the queue: no job was made for them.
    const counts = await pipeline.runtime.matchQueue.getJobCounts(
      'waiting',
      'active',
      'delayed',
      'failed',
    );
    expect(Object.values(counts).reduce((sum, n) => sum + n, 0)).toBe(0);
  });

  // An announcement comes after the webhook's commit, maybe after events accepted since; here
  // none comes at all (the webhook written straight to Postgres, the index's reload a minute away).
  it('matches a webhook committed before the events though its announcement never came, in memory and by job', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const env = randomId('env');
    const webhook = await insertWebhook(db, updatesTo(receiver.url, env));
    expect(pipeline.runtime.index.has(webhook.id)).toBe(false);
    const inMemory = itemEvent({ environment: env });
    await insertEvents(db, [inMemory]);
    expect(pipeline.localMatch.offer([inMemory.id])).toBe(true);
    await waitForCall(db, inMemory.id, webhook.id, ['success']);
    // And a second one, made once the index was read, through a match job.
    const second = await insertWebhook(db, updatesTo(receiver.url, env));
    const byJob = itemEvent({ environment: env });
    await pipeline.emit([byJob]);
    for (const id of [webhook.id, second.id]) await waitForCall(db, byJob.id, id, ['success']);
  });

  it('takes nothing once its workers close: the ids then go on the queue', async ({ db }) => {
    const pipeline = await startPipeline(db, {}, { mode });
    await pipeline.close();
    expect(pipeline.localMatch.offer([randomId('evt')])).toBe(false);
  });
});
