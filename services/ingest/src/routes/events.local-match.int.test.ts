import { describe, expect } from 'vitest';
import { eventJobId } from '@herald/contract';
import { LocalMatchHandOff } from '@herald/runtime';
import { itemEvent, modelWithRecordEvents, randomId } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// The ids a commit stored go to the match workers of this process when it runs them (the single
// process: LocalMatchHandOff), and on the `event-match` queue otherwise.

const localMatch = new LocalMatchHandOff();
const it = appTest(createApp, { role: 'producer', deps: () => ({ localMatch }) });

/** What this process's match workers took; whether they take more. */
const taken: string[] = [];
let taking = true;
localMatch.attach({
  offer(eventIds) {
    if (!taking) return false;
    taken.push(...eventIds);
    return true;
  },
});

let model: string;

it.beforeAll(async ({ api }) => {
  const seeded = modelWithRecordEvents([]);
  model = seeded.model.id;
  taking = false;
  expect((await api.call('POST', '/events', { data: seeded.events })).status).toBe(202);
});

describe('POST /events, ingest and match workers in one process', () => {
  it('hands the stored ids to the match workers of this process, not to the queue', async ({
    api,
    deps,
  }) => {
    taking = true;
    const event = itemEvent('create', randomId('r'), { title: 'x' }, { model });
    const answer = await api.call('POST', '/events', { data: event });
    expect(answer.status).toBe(202);
    expect(taken).toContain(event.id);
    expect(await deps.eventMatchQueue.getJob(eventJobId(event.id))).toBeUndefined();
  });

  it('puts them on the queue when those workers do not take them', async ({ api, deps }) => {
    taking = false;
    const event = itemEvent('create', randomId('r'), { title: 'x' }, { model });
    const answer = await api.call('POST', '/events', { data: event });
    expect(answer.status).toBe(202);
    expect(taken).not.toContain(event.id);
    expect((await deps.eventMatchQueue.getJob(eventJobId(event.id)))?.data).toEqual({
      eventIds: [event.id],
    });
  });
});
