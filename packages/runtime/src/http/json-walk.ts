/**
 * Arrays and objects may nest at most this deep in a JSON body (`[]` is depth 1). JSON.parse
 * itself copes with any depth, but much of what reads a body afterwards recurses (JSON.stringify
 * overflows the stack near 4,000 levels, zod, the serializers): a body is refused before any of
 * it runs. 128 is serde_json's default and far beyond real documents (an event with blocks nested
 * five deep in structured text nests under 60).
 */
export const JSON_MAX_DEPTH = 128;

export type JsonProblem =
  | { kind: 'too_deep'; maxDepth: number }
  | {
      /** A string Postgres cannot store: a NUL character, or a lone surrogate (not Unicode). */
      kind: 'nul' | 'lone_surrogate';
      /** Dotted path of the string (key or value) holding it. */
      path: string;
    };

// In a `u` regex a surrogate pair is one code point, so only lone surrogates match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function stringProblem(value: string): 'nul' | 'lone_surrogate' | undefined {
  if (value.includes('\0')) return 'nul';
  return LONE_SURROGATE.test(value) ? 'lone_surrogate' : undefined;
}

interface Frame {
  value: unknown;
  depth: number;
  key: string;
  parent: Frame | undefined;
}

function pathOf(frame: Frame | undefined): string {
  const keys: string[] = [];
  for (let f = frame; f?.parent; f = f.parent) keys.push(f.key);
  return keys.reverse().join('.');
}

/**
 * What is wrong with a parsed JSON value: nesting deeper than `maxDepth` (whatever else is
 * wrong), else the first string or key, in document order, that Postgres cannot store: one with a
 * NUL character (refused) or a lone surrogate (refused in json, silently replaced in text).
 * Iterative, so that it is safe on any depth itself.
 */
export function findJsonProblem(
  value: unknown,
  maxDepth = JSON_MAX_DEPTH,
): JsonProblem | undefined {
  const stack: Frame[] = [{ value, depth: 0, key: '', parent: undefined }];
  let nul: JsonProblem | undefined; // the first unstorable string
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const current = frame.value;
    if (typeof current === 'string') {
      const kind = nul === undefined ? stringProblem(current) : undefined;
      if (kind) nul = { kind, path: pathOf(frame) };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    const depth = frame.depth + 1;
    if (depth > maxDepth) return { kind: 'too_deep', maxDepth };
    // Children are pushed last-first so that they are visited in document order.
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], depth, key: String(i), parent: frame });
      }
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      stack.push({ value: (current as Record<string, unknown>)[key], depth, key, parent: frame });
      // A key Postgres cannot store is reported before anything inside its value.
      if (stringProblem(key)) stack.push({ value: key, depth, key, parent: frame });
    }
  }
  return nul;
}
