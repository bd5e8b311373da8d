import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonPatch, type JsonPatchOperation } from './changes.js';

/** RFC 6902 add/remove/replace on a copy, as a receiver applies `changes`. */
function applyPatch(document: unknown, ops: readonly JsonPatchOperation[]): unknown {
  let doc = structuredClone(document);
  for (const op of ops) {
    const tokens = op.path
      .split('/')
      .slice(1)
      .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (tokens.length === 0) {
      doc = op.op === 'remove' ? undefined : structuredClone(op.value);
      continue;
    }
    let parent = doc as Record<string, unknown> | unknown[];
    for (const token of tokens.slice(0, -1)) {
      parent = (parent as Record<string, unknown>)[token] as Record<string, unknown>;
    }
    const last = tokens.at(-1)!;
    if (Array.isArray(parent)) {
      const index = Number(last);
      if (op.op === 'add') parent.splice(index, 0, structuredClone(op.value));
      else if (op.op === 'remove') parent.splice(index, 1);
      else parent[index] = structuredClone(op.value);
    } else if (op.op === 'remove') {
      if (!Object.hasOwn(parent, last)) throw new Error(`remove of a missing ${op.path}`);
      delete parent[last];
    } else {
      if (op.op === 'replace' && !Object.hasOwn(parent, last)) {
        throw new Error(`replace of a missing ${op.path}`);
      }
      parent[last] = structuredClone(op.value);
    }
  }
  return doc;
}

describe('jsonPatch', () => {
  it('replaces, adds and removes by JSON Pointer, escaping ~ and /', () => {
    expect(
      jsonPatch(
        { title: { en: 'a' }, 'a/b': 1, 'c~d': [1, 2, 3], gone: true },
        { title: { en: 'b', it: 'c' }, 'a/b': 2, 'c~d': [1] },
      ),
    ).toEqual([
      { op: 'remove', path: '/gone' },
      { op: 'replace', path: '/title/en', value: 'b' },
      { op: 'add', path: '/title/it', value: 'c' },
      { op: 'replace', path: '/a~1b', value: 2 },
      { op: 'remove', path: '/c~0d/2' },
      { op: 'remove', path: '/c~0d/1' },
    ]);
    expect(jsonPatch({ a: { b: 1 } }, { a: { b: 1 } })).toEqual([]);
  });

  it('applied to the previous attributes, gives the new ones, for any two versions', () => {
    const version = fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 3 }));
    fc.assert(
      fc.property(version, version, (before, after) => {
        const patched = applyPatch(before, jsonPatch(before, after));
        expect(JSON.parse(JSON.stringify(patched))).toEqual(JSON.parse(JSON.stringify(after)));
      }),
      { numRuns: 500 },
    );
  });
});
