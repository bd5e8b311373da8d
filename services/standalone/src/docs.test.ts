import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The docs stay true to the tree: the architecture's "Where is what" names files that exist,
// every relative link of the README and of docs/ leads to a file that exists, and the Docker image
// keeps docs/errors.md, which every process serves.
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

  it('go into the Docker image where every process reads the error reference (GET /docs/errors)', () => {
    const dockerfile = readFileSync(join(ROOT, 'infra/Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toContain('WORKDIR /app\n');
    expect(runtime).toMatch(/^COPY --from=build \/app\/docs\/errors\.md \.\/docs\/errors\.md$/m);
    // The runtime package finds it four levels above its src/http/ or dist/http/ file.
    const source = readFileSync(join(ROOT, 'packages/runtime/src/http/error-reference.ts'), 'utf8');
    expect(source).toContain("new URL('../../../../docs/errors.md', import.meta.url)");
  });
});
