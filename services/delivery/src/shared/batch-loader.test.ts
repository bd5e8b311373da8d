import { describe, expect, it } from 'vitest';
import { BatchLoader, BatchWriter } from './batch-loader.js';

describe('BatchLoader', () => {
  it('coalesces the ids asked for while a query runs, and answers each asker', async () => {
    const queries: string[][] = [];
    const loader = new BatchLoader<{ id: string }>(
      (ids) => {
        queries.push(ids);
        return Promise.resolve(ids.filter((id) => id !== 'missing').map((id) => ({ id })));
      },
      (row) => row.id,
      1,
    );
    const answers = await Promise.all(['a', 'b', 'c', 'b', 'missing'].map((id) => loader.load(id)));
    expect(answers).toEqual([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'b' }, null]);
    // The first id goes at once; the others waited for it and went together, each id once.
    expect(queries).toEqual([['a'], ['b', 'c', 'missing']]);
  });

  it('rejects every asker of a failed query, and keeps working after', async () => {
    let fail = true;
    const loader = new BatchLoader<{ id: string }>(
      (ids) =>
        fail ? Promise.reject(new Error('db down')) : Promise.resolve(ids.map((id) => ({ id }))),
      (row) => row.id,
    );
    await expect(loader.load('x')).rejects.toThrow('db down');
    fail = false;
    await expect(loader.load('x')).resolves.toEqual({ id: 'x' });
  });
});

describe('BatchWriter', () => {
  /** A writer (concurrency 1) and the batches it wrote, as [id, value] pairs. */
  const recordingWriter = () => {
    const writes: [string, number][][] = [];
    const writer = new BatchWriter<number>((items) => {
      writes.push(items.map(({ id, value }) => [id, value]));
      return Promise.resolve();
    }, 1);
    return { writes, writer };
  };

  it('writes what arrives meanwhile together, one item per id per write, in order', async () => {
    const { writes, writer } = recordingWriter();
    await Promise.all([
      writer.write('a', 1),
      writer.write('b', 2),
      writer.write('a', 3),
      writer.write('c', 4),
    ]);
    expect(writes).toEqual([
      [['a', 1]],
      [
        ['b', 2],
        ['a', 3],
        ['c', 4],
      ],
    ]);
  });

  it('holds back a second write of an id until the first is done', async () => {
    const { writes, writer } = recordingWriter();
    const first = writer.write('a', 1);
    await Promise.all([first, writer.write('a', 2), writer.write('a', 3), writer.write('b', 4)]);
    expect(writes).toEqual([
      [['a', 1]],
      [
        ['a', 2],
        ['b', 4],
      ],
      [['a', 3]],
    ]);
  });
});
