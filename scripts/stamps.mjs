// Whether start.sh may skip `pnpm install` or `pnpm run build`: each leaves a stamp in
// node_modules/ holding a digest of what it was made from (file paths and contents, so that a
// checkout, a pull or an edit changes it and a `touch` does not). Run before build: plain Node.
//
//   node scripts/stamps.mjs check install|build   prints the inputs' digest; exits 0 when the
//                                                 stamp holds it (and the outputs exist), else 1
//   node scripts/stamps.mjs save install|build D  records digest D (the one `check` printed before
//                                                 the step ran, so an edit made meanwhile counts)
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root: start.sh runs this from there. */
const root = process.cwd();
const stampFile = (kind) => join(root, 'node_modules', `.herald-${kind}`);

/** The workspace folders: pnpm-workspace.yaml's `packages:` entries (`dir/*` or `dir`). */
function workspaces() {
  const yaml = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const block = /^packages:\n((?:[ \t]+-.*\n?)+)/m.exec(yaml)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) =>
      line
        .replace(/^\s*-\s*/, '')
        .replace(/['"]/g, '')
        .trim(),
    )
    .filter(Boolean)
    .flatMap((pattern) => {
      if (!pattern.endsWith('/*')) return [pattern];
      const parent = pattern.slice(0, -2);
      if (!existsSync(join(root, parent))) return [];
      return readdirSync(join(root, parent), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => `${parent}/${entry.name}`);
    })
    .sort();
}

/** Files under dir (relative to root), sorted; tests are no input of the build. */
function sources(dir) {
  if (!existsSync(join(root, dir))) return [];
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sources(path));
    else if (!/\.test(-support)?\.ts$/.test(entry.name)) out.push(path);
  }
  return out.sort();
}

function digest(paths) {
  const hash = createHash('sha256');
  for (const path of paths) {
    const file = join(root, path);
    hash.update(`${path}\0`);
    hash.update(existsSync(file) ? readFileSync(file) : '(absent)');
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** What `pnpm install` reads: the lockfile, the workspace, every package.json, Node's version. */
function installDigest() {
  const files = ['pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc', 'package.json'];
  for (const dir of workspaces()) files.push(`${dir}/package.json`);
  return `${process.version}:${digest(files)}`;
}

/**
 * What `pnpm run build` reads: each workspace's sources and config, the root tsconfigs and the
 * installed dependencies (their digest). Bench is built by its own scripts.
 */
function buildDigest() {
  const files = ['package.json', 'tsconfig.json', 'tsconfig.base.json'];
  const built = workspaces().filter((dir) => dir !== 'bench');
  for (const dir of built) {
    files.push(`${dir}/package.json`, `${dir}/tsconfig.json`, `${dir}/index.html`);
    files.push(`${dir}/vite.config.ts`, ...sources(`${dir}/src`));
  }
  return digest([...files, 'node_modules/.herald-install']);
}

/** The build's outputs are there: a dist/ in every workspace that has sources. */
function built() {
  return workspaces()
    .filter((dir) => dir !== 'bench' && existsSync(join(root, dir, 'src')))
    .every((dir) => existsSync(join(root, dir, 'dist')));
}

const [command, kind, given] = process.argv.slice(2);
if (kind !== 'install' && kind !== 'build') {
  process.stderr.write('usage: stamps.mjs check|save install|build [digest]\n');
  process.exit(2);
}
if (command === 'check') {
  const current = kind === 'install' ? installDigest() : buildDigest();
  process.stdout.write(`${current}\n`);
  const stamp = existsSync(stampFile(kind)) ? readFileSync(stampFile(kind), 'utf8').trim() : '';
  process.exit(stamp === current && (kind === 'install' || built()) ? 0 : 1);
} else if (command === 'save' && given) {
  writeFileSync(stampFile(kind), `${given}\n`);
} else {
  process.stderr.write('usage: stamps.mjs check|save install|build [digest]\n');
  process.exit(2);
}
