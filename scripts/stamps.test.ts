import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('./stamps.mjs', import.meta.url));
let root: string;

/** Runs stamps.mjs in the temporary workspace: its exit code and the digest it printed. */
function stamps(...args: string[]): Promise<{ code: number; digest: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { cwd: root }, (error, stdout) => {
      resolve({ code: error ? Number(error.code) : 0, digest: stdout.trim() });
    });
  });
}

/** check, then save what it printed, as ensure-built.sh does after the step succeeded. */
async function checkAndSave(kind: 'install' | 'build'): Promise<number> {
  const { code, digest } = await stamps('check', kind);
  if (code !== 0) await stamps('save', kind, digest);
  return code;
}

async function write(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'herald-stamps-'));
  await write(
    'pnpm-workspace.yaml',
    'packages:\n  - packages/*\n  - bench\nonlyBuiltDependencies:\n  - x\n',
  );
  await write('package.json', '{"name":"w"}');
  await write('pnpm-lock.yaml', 'lockfileVersion: 9.0\n');
  await write('packages/a/package.json', '{"name":"a"}');
  await write('packages/a/src/index.ts', 'export const a = 1;\n');
  await write('packages/a/src/index.test.ts', 'test\n');
  await write('bench/package.json', '{"name":"bench"}');
  await mkdir(join(root, 'node_modules'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('stamps.mjs: start.sh skips install and build when nothing they read changed', () => {
  it('installs and builds once, then skips both; a touch alone or a test changes nothing', async () => {
    expect(await checkAndSave('install')).toBe(1);
    expect(await checkAndSave('build')).toBe(1);
    // The build's output is missing: build again.
    expect(await checkAndSave('build')).toBe(1);
    await mkdir(join(root, 'packages/a/dist'));
    expect(await checkAndSave('build')).toBe(0);
    expect(await checkAndSave('install')).toBe(0);

    const later = new Date(Date.now() + 60_000);
    await utimes(join(root, 'packages/a/src/index.ts'), later, later);
    await write('packages/a/src/index.test.ts', 'another test\n');
    expect((await stamps('check', 'build')).code).toBe(0);
  });

  it('builds again after a source is edited, added or removed, or a tsconfig changes', async () => {
    await write('packages/a/src/index.ts', 'export const a = 2;\n');
    expect(await checkAndSave('build')).toBe(1);
    expect(await checkAndSave('build')).toBe(0);
    await write('packages/a/src/deep/new.ts', 'export {};\n');
    expect(await checkAndSave('build')).toBe(1);
    await rm(join(root, 'packages/a/src/deep/new.ts'));
    expect(await checkAndSave('build')).toBe(1);
    await write('packages/a/tsconfig.json', '{}');
    expect(await checkAndSave('build')).toBe(1);
    expect(await checkAndSave('build')).toBe(0);
  });

  it('installs again after the lockfile or a package.json changes, and then builds again', async () => {
    await write('pnpm-lock.yaml', 'lockfileVersion: 9.0\npackages: {}\n');
    expect(await checkAndSave('install')).toBe(1);
    expect(await checkAndSave('build')).toBe(1);
    await write('bench/package.json', '{"name":"bench","dependencies":{"x":"1"}}');
    expect(await checkAndSave('install')).toBe(1);
    expect(await checkAndSave('install')).toBe(0);
    // A new dependency of bench alone: bench is not part of `pnpm run build`, but what is
    // installed changed.
    expect(await checkAndSave('build')).toBe(1);
    expect(await checkAndSave('build')).toBe(0);
  });

  it('a digest saved before the step ran keeps an edit made meanwhile stale', async () => {
    const before = await stamps('check', 'build');
    expect(before.code).toBe(0);
    await write('packages/a/src/index.ts', 'export const a = 3;\n');
    const during = await stamps('check', 'build');
    expect(during.code).toBe(1);
    // The build ran on the old text, then saved the digest it started from.
    await stamps('save', 'build', before.digest);
    expect((await stamps('check', 'build')).code).toBe(1);
  });
});
