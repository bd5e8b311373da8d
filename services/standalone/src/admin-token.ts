import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * In the single-process mode without HERALD_ADMIN_TOKEN, an admin token is generated once and
 * kept in a file readable only by its owner, so that the start command works with nothing to set
 * and no secret is ever printed to the log.
 */
export async function loadOrCreateAdminToken(file: string): Promise<string> {
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (token.length >= 24) return token;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const token = `hrld_admin_${randomBytes(24).toString('base64url')}`;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}
