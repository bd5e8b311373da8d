import { mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';

/** Redis's and PostgreSQL's programs: what a machine with only Node lacks. */
const SERVER_PROGRAMS = /^(redis-|psql$|pg_|postgres|initdb$|createdb$|dropdb$)/;

/**
 * A PATH of links in `dir` to every program of this machine's PATH but Redis's and PostgreSQL's:
 * a newcomer's machine with Node (and the usual tools) and nothing else (issue #29).
 */
export async function nodeOnlyPath(dir: string, path = process.env['PATH'] ?? ''): Promise<string> {
  await mkdir(dir, { recursive: true });
  const seen = new Set<string>();
  for (const from of path.split(':')) {
    let names: string[];
    try {
      names = await readdir(from);
    } catch {
      continue;
    }
    for (const name of names) {
      if (SERVER_PROGRAMS.test(name) || seen.has(name)) continue;
      seen.add(name);
      await symlink(join(from, name), join(dir, name));
    }
  }
  return dir;
}
