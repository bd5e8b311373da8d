import { describe, expect, it } from 'vitest';
import { BatchLoader } from './batch-loader.js';

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
