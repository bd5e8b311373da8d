/**
 * The worker thread of ./pglite-worker-db.ts: PGlite (createPgliteDb) off the main thread. Each
 * message is one operation; a transaction stays open across messages until its commit or
 * rollback (PGlite runs one at a time, as in process).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createPgliteDb, type Queryable } from '@herald/store';

type Message =
  | { id: number; op: 'query'; text: string; params?: unknown[]; tx?: number }
  | { id: number; op: 'exec' | 'script'; sql: string }
  | { id: number; op: 'begin' }
  | { id: number; op: 'commit' | 'rollback'; tx: number }
  | { id: number; op: 'close' };

const port = parentPort!;
const db = await createPgliteDb({ dataDir: (workerData as { dataDir: string }).dataDir });
interface Entry {
  tx: Queryable;
  end: (commit: boolean) => void;
  done: Promise<unknown>;
}
const open = new Map<number, Entry>();
let nextTx = 0;

const reply = (id: number, result: unknown) => port.postMessage({ id, result });
const fail = (id: number, error: unknown) => {
  const e = error as { message?: string; code?: string };
  port.postMessage({ id, error: { message: e.message ?? String(error), code: e.code } });
};

class Rollback extends Error {}

port.on('message', (m: Message) => {
  switch (m.op) {
    case 'query': {
      const target = m.tx === undefined ? db : open.get(m.tx)?.tx;
      if (!target) return fail(m.id, new Error(`no transaction ${String(m.tx)}`));
      target.query(m.text, m.params).then(
        (result) => reply(m.id, result),
        (error: unknown) => fail(m.id, error),
      );
      return;
    }
    case 'exec':
      db.exec(m.sql).then(
        () => reply(m.id, null),
        (error: unknown) => fail(m.id, error),
      );
      return;
    case 'script':
      db.script(m.sql).then(
        (results) => reply(m.id, results),
        (error: unknown) => fail(m.id, error),
      );
      return;
    case 'begin': {
      const txId = nextTx++;
      let end: (commit: boolean) => void = () => undefined;
      const ended = new Promise<boolean>((resolve) => (end = resolve));
      const entry: Entry = { tx: db, end, done: Promise.resolve() };
      entry.done = db.transaction(async (tx) => {
        entry.tx = tx;
        open.set(txId, entry);
        reply(m.id, txId);
        if (!(await ended)) throw new Rollback();
      });
      return;
    }
    case 'commit':
    case 'rollback': {
      const entry = open.get(m.tx);
      if (!entry) return fail(m.id, new Error(`no transaction ${m.tx}`));
      open.delete(m.tx);
      entry.end(m.op === 'commit');
      entry.done.then(
        () => reply(m.id, null),
        (error: unknown) => (error instanceof Rollback ? reply(m.id, null) : fail(m.id, error)),
      );
      return;
    }
    case 'close':
      db.close().then(
        () => reply(m.id, null),
        (error: unknown) => fail(m.id, error),
      );
  }
});
port.postMessage({ ready: true });
