import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The docs stay true to the tree: the architecture's "Where is what" names files that exist, and
// every relative link of the README and of docs/ leads to a file that exists.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('the docs', () => {
  it("name only files that exist in the architecture's map", () => {
    const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const section = /## Where is what\n([\s\S]*?)\n## /.exec(text)?.[1] ?? '';
    const paths = [...section.matchAll(/`((?:packages|services|infra|docs|scripts)\/[^`]+)`/g)].map(
      (match) => match[1]!,
    );
    expect(paths.length).toBeGreaterThan(40);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it('link only to files that exist', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target!)) continue;
        const file = target!.split('#')[0]!;
        if (!existsSync(resolve(dirname(join(ROOT, doc)), file))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
