import { jsonEqual } from '@herald/contract';

/**
 * The `changes` of a default payload (extension, docs/api.md, What a webhook call sends): an
 * RFC 6902 JSON Patch that turns the previous attributes into the new ones, applied in order.
 * Objects are compared key by key (their key order does not matter), arrays index by index: a
 * common prefix of indexes is patched in place, extra elements are added at the end or removed
 * from the end; any other difference replaces the value.
 */

export type JsonPatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'replace'; path: string; value: unknown };

/** RFC 6901: `~` as `~0`, `/` as `~1`. */
const pointerToken = (key: string | number): string =>
  String(key).replace(/~/g, '~0').replace(/\//g, '~1');

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function diff(before: unknown, after: unknown, path: string, ops: JsonPatchOperation[]): void {
  if (jsonEqual(before, after)) return;
  if (isPlainObject(before) && isPlainObject(after)) {
    for (const key of Object.keys(before)) {
      if (!Object.hasOwn(after, key))
        ops.push({ op: 'remove', path: `${path}/${pointerToken(key)}` });
    }
    for (const [key, value] of Object.entries(after)) {
      const at = `${path}/${pointerToken(key)}`;
      if (Object.hasOwn(before, key)) diff(before[key], value, at, ops);
      else ops.push({ op: 'add', path: at, value });
    }
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const common = Math.min(before.length, after.length);
    for (let i = 0; i < common; i++) diff(before[i], after[i], `${path}/${i}`, ops);
    for (let i = common; i < after.length; i++) {
      ops.push({ op: 'add', path: `${path}/${i}`, value: after[i] });
    }
    for (let i = before.length - 1; i >= common; i--)
      ops.push({ op: 'remove', path: `${path}/${i}` });
    return;
  }
  ops.push({ op: 'replace', path, value: after });
}

/** The JSON Patch (RFC 6902) from `before` to `after`: applied to `before`, it gives `after`. */
export function jsonPatch(
  before: Readonly<Record<string, unknown>>,
  after: Readonly<Record<string, unknown>>,
): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  diff(before, after, '', ops);
  return ops;
}
