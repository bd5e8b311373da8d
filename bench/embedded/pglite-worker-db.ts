import { Worker } from 'node:worker_threads';
import type { Db, NamedStatement, QueryResult, Queryable, Row } from '@herald/store';

/**
 * PGlite on a worker thread (#29's other candidate for the embedded database): the same PGlite
 * as in process, but its WASM runs beside the event loop instead of in it, so HTTP, Redis and
 * the delivery workers' own JavaScript go on while a statement runs. One connection still: the
 * statements queue for it.
 */
export async function createPgliteWorkerDb(dataDir: string): Promise<Db> {
  const worker = new Worker(new URL('./pglite-worker.js', import.meta.url), {
    workerData: { dataDir },
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', () => resolve());
  });
  worker.on(
    'message',
    (m: { id: number; result?: unknown; error?: { message: string; code?: string } }) => {
      const call = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) call?.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else call?.resolve(m.result);
    },
  );
  const call = <T>(message: Record<string, unknown>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...message, id });
    });
  const text = (statement: string | NamedStatement) =>
    typeof statement === 'string' ? statement : statement.text;
  const queryOn =
    (tx?: number) =>
    <R extends Row>(statement: string | NamedStatement, params?: readonly unknown[]) =>
      call<QueryResult<R>>({ op: 'query', text: text(statement), params, tx });
  return {
    kind: 'pglite',
    query: queryOn(),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const tx = await call<number>({ op: 'begin' });
      let result: T;
      try {
        result = await fn({ query: queryOn(tx) });
      } catch (error) {
        await call({ op: 'rollback', tx });
        throw error;
      }
      await call({ op: 'commit', tx });
      return result;
    },
    async exec(sql) {
      await call({ op: 'exec', sql });
    },
    script: <R extends Row>(sql: string) => call<QueryResult<R>[]>({ op: 'script', sql }),
    async close() {
      await call({ op: 'close' });
      await worker.terminate();
    },
  };
}
