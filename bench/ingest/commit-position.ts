/**
 * What POST /events's write costs for one event, one request at a time on one connection, in
 * the two ways the ingest can take it: the write (herald_write_item_batch) and then the read of
 * its commit position (readCommitPosition), two round trips, as before; and both in one script
 * (writeItemBatchCommitted), as the group commit does now. The two alternate every 100 events on
 * the same connection; per event: the wall time, this process's CPU (the pg client's share of
 * the request) and the backend's (/proc, 10 ms ticks summed over the events).
 *
 *   pnpm build && tsc -p bench && node bench/dist/ingest/commit-position.js   (EVENTS=3000)
 */
import {
  readCommitPosition,
  writeItemBatch,
  writeItemBatchCommitted,
  type Db,
  type NewEvent,
  type RecordText,
  type RecordWrite,
} from '@herald/store';
import { createTestDb, defineModel, testItemEvent, testRecordWrite } from '@herald/testkit';
import { processCpuMs } from '../lib/cpu.js';
import { table } from '../lib/table.js';

const EVENTS = Number(process.env['EVENTS'] ?? 3000);
const ROUND = 100;
const at = new Date('2026-03-01T00:00:00Z');

let made = 0;
/** A one-event batch: an item created, its record and its document (bench:ingest's shape). */
function oneEvent(): { events: NewEvent[]; records: RecordWrite[]; texts: RecordText[] } {
  const n = made++;
  const id = `cp-${n}`;
  const recordId = `cp-r${n}`;
  const attributes = { title: `walrus ${n}`, body: 'the time has come '.repeat(20) };
  const entity = {
    type: 'item',
    id: recordId,
    attributes,
    relationships: { item_type: { data: { type: 'item_type', id: 'post' } } },
  };
  return {
    events: [
      testItemEvent(id, {
        eventType: 'create',
        entityId: recordId,
        occurredAt: at,
        entity,
        entityJson: JSON.stringify(entity),
      }),
    ],
    records: [
      testRecordWrite({
        id: recordId,
        itemTypeId: 'post',
        mode: 'save',
        eventId: id,
        eventType: 'create',
        attributes,
        createdAt: at,
        updatedAt: at,
      }),
    ],
    texts: [
      {
        environment: 'main',
        recordId,
        itemTypeId: 'post',
        version: 'current',
        locale: 'en',
        config: 'english',
        text: `${attributes.title} ${attributes.body}`,
      },
    ],
  };
}

const WAYS: { name: string; write: (db: Db) => Promise<bigint> }[] = [
  {
    name: 'write, then read the commit position (two round trips, before)',
    write: async (db) => {
      await writeItemBatch(db, oneEvent());
      return readCommitPosition(db);
    },
  },
  {
    name: 'both in one script (writeItemBatchCommitted, the group commit now)',
    write: async (db) => (await writeItemBatchCommitted(db, oneEvent())).position,
  },
];

async function main(): Promise<void> {
  const t = await createTestDb();
  const db = t.connect();
  try {
    await defineModel(t.db, 'main', {
      id: 'post',
      apiKey: 'post',
      fields: [
        { apiKey: 'title', fieldType: 'string' },
        { apiKey: 'body', fieldType: 'text' },
      ],
    });
    const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backend = rows[0]!.pid;
    // Warm both ways up (plans, JIT of this process).
    for (const way of WAYS) for (let i = 0; i < ROUND; i++) await way.write(db);
    const totals = WAYS.map(() => ({ wallMs: 0, nodeMs: 0, backendMs: 0, events: 0 }));
    for (let done = 0; done < EVENTS; done += ROUND) {
      for (const [w, way] of WAYS.entries()) {
        const total = totals[w]!;
        const node = process.cpuUsage();
        const backendBefore = processCpuMs(backend);
        const started = performance.now();
        for (let i = 0; i < ROUND; i++) await way.write(db);
        total.wallMs += performance.now() - started;
        const used = process.cpuUsage(node);
        total.nodeMs += (used.user + used.system) / 1000;
        total.backendMs += processCpuMs(backend) - backendBefore;
        total.events += ROUND;
      }
    }
    const us = (ms: number, events: number) => ((ms * 1000) / events).toFixed(0);
    console.log(
      `\nPOST /events's write of one event, ${EVENTS} events each way, one at a time on one connection, the ways alternating every ${ROUND} events (µs per event)\n`,
    );
    console.log(
      table(
        ['way', 'wall', 'this process (pg client)', 'Postgres backend', 'CPU in all'],
        WAYS.map((way, w) => {
          const { wallMs, nodeMs, backendMs, events } = totals[w]!;
          return [
            way.name,
            us(wallMs, events),
            us(nodeMs, events),
            us(backendMs, events),
            us(nodeMs + backendMs, events),
          ];
        }),
      ),
    );
  } finally {
    await db.close();
    await t.cleanup();
  }
}

await main();
