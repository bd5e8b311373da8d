import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** The pid of a live process (not this one) holding the lock file, if any. */
export async function lockHolder(file: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number.parseInt(await readFile(file, 'utf8'), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/**
 * The embedded PostgreSQL is a child of one process (a Herald, or a `herald` command while no
 * Herald runs), which starts and stops it: that process holds this lock, and another Herald on
 * the same data folder refuses to start. (The `herald` commands use the server of a running
 * Herald instead.)
 */
export async function acquirePidLock(file: string): Promise<() => Promise<void>> {
  const holder = await lockHolder(file);
  if (holder !== undefined) {
    throw new PidLockError(
      `The embedded database in ${dirname(file)} is in use by process ${holder} (a Herald, or a ` +
        '`herald` command). Stop that one first, or set DATABASE_URL to a PostgreSQL server.',
    );
  }
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, String(process.pid));
  return () => rm(file, { force: true });
}

export class PidLockError extends Error {
  override name = 'PidLockError';
}
