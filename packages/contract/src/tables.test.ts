import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * Every module specifier imported by `file` and, through relative imports, by what it imports.
 * Type-only imports and exports (`import type`, `export type … from`) are left out: they are erased,
 * so the bundle never reaches what they name (the resources' types come from zod schemas).
 */
function importsReachedFrom(file: URL, seen = new Set<string>()): string[] {
  if (seen.has(file.href)) return [];
  seen.add(file.href);
  const source = readFileSync(file, 'utf8');
  const specifiers = [
    ...source.matchAll(
      /^(?:import|export)(?!\s+type\b)\b[^;]*?\bfrom\s+'([^']+)'|^import\s+'([^']+)'/gm,
    ),
  ].map((match) => (match[1] ?? match[2])!);
  return specifiers.flatMap((specifier) =>
    specifier.startsWith('.')
      ? importsReachedFrom(new URL(specifier.replace(/\.js$/, '.ts'), file), seen)
      : [specifier],
  );
}

describe('@herald/contract/tables', () => {
  it('reaches no package and no node: module, so the console can bundle it', () => {
    const reached = importsReachedFrom(new URL('./tables.ts', import.meta.url));
    expect(reached).toEqual([]);
  });

  it('the walk does see packages where a module imports them', () => {
    expect(importsReachedFrom(new URL('./index.ts', import.meta.url))).toEqual(
      expect.arrayContaining(['node:crypto', 'zod', 'ipaddr.js']),
    );
  });
});
