import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgliteDb, createPostgresDb, createToken, migrate, type Db } from '@herald/store';
import {
  TEST_REDIS_URL,
  modelEvent,
  processAlive,
  randomId,
  seedDocs,
  spawnHerald,
} from '@herald/testkit';
import { runCli } from './cli-commands.js';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const run = promisify(execFile);
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-'));
  dirs.push(dir);
  return dir;
}

// Every data folder (a deployment of its own) has a prefix of its own in the shared Redis (deleted
// after the file by testkit's vitest-setup).
const prefixes = new Map<string, string>();
const prefixOf = (dataDir: string): string => {
  if (!prefixes.has(dataDir)) prefixes.set(dataDir, randomId('herald_test'));
  return prefixes.get(dataDir)!;
};

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/**
 * Starts the real single-process Herald on `dataDir` (with its Redis prefix), and `env`, and waits
 * for the line that gives its URL.
 */
async function start(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const herald = spawnHerald(join(dist, 'main.js'), {
    HERALD_DATA_DIR: dataDir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefixOf(dataDir),
    ...env,
  });
  return { child: herald.child, url: await herald.url(), output: herald.output };
}

/**
 * Runs a `herald` command in this process, and answers as execFile does: the output, or an error
 * that holds the exit code.
 */
async function cliInProcess(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, env, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  if (code !== 0) {
    throw Object.assign(new Error(`herald ${args.join(' ')} exited with ${code}:\n${stderr}`), {
      code,
      stdout,
      stderr,
    });
  }
  return { stdout, stderr };
}

/** The embedded PostgreSQL's URL, as the CLI and psql find it. */
const databaseUrl = async (dataDir: string) =>
  (await readFile(join(dataDir, 'postgres', 'url'), 'utf8')).trim();

/** Runs fn on a connection of its own to the embedded PostgreSQL of a running Herald. */
async function withEmbedded<T>(dataDir: string, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = createPostgresDb({ connectionString: await databaseUrl(dataDir), maxConnections: 2 });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
  });

// Each test starts real processes on the embedded PostgreSQL, in a data folder of its own (initdb:
// 1.5 s on an idle machine, more on a loaded one).
describe('the single-process start (embedded PostgreSQL)', { timeout: 180_000 }, () => {
  it('serves health, readiness, metrics and authenticated requests, and stops cleanly on SIGTERM', async () => {
    const dataDir = await tempDir();
    const { child, url, output } = await start(dataDir);
    try {
      expect(output()).toContain(`the admin token is in ${join(dataDir, 'admin-token')}`);
      const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
      expect((await stat(join(dataDir, 'admin-token'))).mode & 0o777).toBe(0o600);
      expect(output()).not.toContain(token);

      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${url}/readyz`)).json()).toMatchObject({ status: 'ready' });
      expect(await (await fetch(`${url}/metrics`)).text()).toContain(
        'process_cpu_user_seconds_total',
      );
      expect((await fetch(`${url}/anything`)).status).toBe(401);
      const authed = await fetch(`${url}/anything`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(authed.status).toBe(404);
      expect(authed.headers.get('x-ratelimit-limit')).not.toBeNull();
      // The read routes, through each token's share.
      const auth = { headers: { Authorization: `Bearer ${token}` } };
      const items = await fetch(`${url}/items?filter[ids]=a,b`, auth);
      expect(items.status).toBe(200);
      expect(await items.json()).toEqual({ data: [], meta: { total_count: 0 } });
      expect((await fetch(`${url}/items/a%00b`, auth)).status).toBe(404);

      // The banner names the console, and / leads there.
      expect(output()).toContain(`the console:  ${url}/console`);
      const root = await fetch(`${url}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/console/');
      // The embedded default is a development setup: a receiver on loopback may be called, and
      // the banner says so.
      expect(output()).toMatch(
        /webhooks may call receivers on this machine .*\n.*SSRF_ALLOW_CIDRS=none/,
      );
      const webhook = await fetch(`${url}/webhooks`, {
        method: 'POST',
        headers: { ...auth.headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          data: {
            type: 'webhook',
            attributes: {
              name: 'local receiver',
              url: 'http://127.0.0.1:4000/hook',
              headers: {},
              events: [{ entity_type: 'item', event_types: ['create'] }],
              custom_payload: null,
              http_basic_user: null,
              http_basic_password: null,
            },
          },
        }),
      });
      expect(webhook.status).toBe(201);

      // PostgreSQL itself, with the same migrations, reachable by other clients while it runs.
      const postgresPid = await withEmbedded(dataDir, async (db) => {
        const { rows } = await db.query<{ version: string; migrations: string }>(
          `SELECT version(), (SELECT count(*) FROM schema_migrations)::text AS migrations`,
        );
        expect(rows[0]!.version).toMatch(/^PostgreSQL 18/);
        expect(Number(rows[0]!.migrations)).toBeGreaterThan(20);
        const { rows: clients } = await db.query<{ name: string }>(
          `SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE datname = 'herald'`,
        );
        // The process's pools, as on any PostgreSQL (the read routes' one with its budget).
        expect(clients.map((c) => c.name)).toEqual(
          expect.arrayContaining(['herald-standalone', 'herald-standalone-items']),
        );
        const { rows: pid } = await db.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
        );
        return pid[0]!.pid;
      });
      expect(output()).toContain(`psql "$(cat ${join(dataDir, 'postgres', 'url')})"`);

      // A second Herald on the same embedded database is refused.
      await expect(start(dataDir)).rejects.toThrow(/in use by process/);
      expect(processAlive(postgresPid)).toBe(true);
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
    // Stopped with Herald, its URL gone.
    await expect(stat(join(dataDir, 'postgres', 'url'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(join(dataDir, 'herald.pid'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('answers a runaway read with its time budget, 422 QUERY_TIMEOUT', async () => {
    const dataDir = await tempDir();
    const { child, url } = await start(dataDir, { READ_STATEMENT_TIMEOUT_MS: '50' });
    try {
      const token = await withEmbedded(dataDir, async (db) => {
        await seedDocs(db, 4000);
        return (await createToken(db, { name: 'reader', role: 'read_only' })).token;
      });
      // 20 quantifiers within the cost rule, over 4,000 texts of 1 KB (~0.5 s); no text has "!".
      const pattern = encodeURIComponent(`${'.{0,49}'.repeat(20)}!`);
      const started = performance.now();
      const res = await fetch(
        `${url}/items?filter[type]=doc&filter[fields][body][matches][pattern]=${pattern}`,
        { headers: { Authorization: `Bearer ${token}` } },
      );
      const body = (await res.json()) as { data: { attributes: { code: string } }[] };
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(body.data[0]!.attributes).toMatchObject({
        code: 'QUERY_TIMEOUT',
        details: { timeout_ms: 50 },
      });
      expect(performance.now() - started).toBeLessThan(5_000);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });

  it('after a kill -9, starts again on the same data: the left-over server stopped, nothing lost', async () => {
    const dataDir = await tempDir();
    const first = await start(dataDir);
    const token = await withEmbedded(
      dataDir,
      async (db) => (await createToken(db, { name: 'kept', role: 'read_only' })).token,
    );
    const leftOver = Number(
      (await readFile(join(dataDir, 'postgres', 'data', 'postmaster.pid'), 'utf8')).split('\n')[0],
    );
    first.child.kill('SIGKILL');
    await exited(first.child);
    // The server outlives the process that started it, until the next start.
    expect(processAlive(leftOver)).toBe(true);

    const second = await start(dataDir);
    try {
      expect(processAlive(leftOver)).toBe(false);
      const res = await fetch(`${second.url}/items?filter[ids]=a`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
      expect(await exited(second.child)).toBe(0);
    }
  });

  it('refuses a data folder that holds the PGlite database of an earlier Herald; import-pglite copies it', async () => {
    const dataDir = await tempDir();
    // A PGlite folder as an earlier Herald left it: migrated, with a token.
    const pglite = await createPgliteDb({ dataDir: join(dataDir, 'pgdata') });
    let token: string;
    try {
      await migrate(pglite);
      token = (await createToken(pglite, { name: 'old', role: 'admin' })).token;
    } finally {
      await pglite.close();
    }
    const refused = await start(dataDir).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/exited with 1/);
    expect(refused).toContain(`${join(dataDir, 'pgdata')} holds the PGlite database`);
    expect(refused).toContain('pnpm herald import-pglite');
    await expect(stat(join(dataDir, 'postgres'))).rejects.toMatchObject({ code: 'ENOENT' });

    const imported = await cliInProcess({ HERALD_DATA_DIR: dataDir }, 'import-pglite');
    expect(imported.stdout).toMatch(/^copied \d+ rows of \d+ tables/);
    await expect(stat(join(dataDir, 'pgdata'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await stat(join(dataDir, 'pgdata.imported', 'PG_VERSION'))).isFile()).toBe(true);
    // Once more: nothing left to import.
    await expect(cliInProcess({ HERALD_DATA_DIR: dataDir }, 'import-pglite')).rejects.toMatchObject(
      { code: 2 },
    );

    const { child, url } = await start(dataDir);
    try {
      const res = await fetch(`${url}/anything`, { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status).toBe(404);
      // The sequences followed: a new token does not take the old one's id.
      const created = await cliInProcess(
        { HERALD_DATA_DIR: dataDir, HERALD_URL: url },
        'tokens',
        'create',
        '--name',
        'new',
        '--role',
        'producer',
      );
      expect(created.stderr).toMatch(/^created token (?!1 )\d+ /);
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });

  it('stops with a message naming the variable when the configuration is wrong', async () => {
    const child = spawn(process.execPath, [join(dist, 'main.js')], {
      env: { PATH: process.env['PATH'] ?? '', PORT: 'eighty', RATE_LIMIT_WINDOW_MS: '-1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    expect(await exited(child)).toBe(1);
    expect(err).toMatch(/Invalid configuration:\n {2}- PORT: .*"eighty"/);
    expect(err).toMatch(/RATE_LIMIT_WINDOW_MS/);
  });

  it('the tokens CLI creates, lists and revokes tokens that the server then accepts', async () => {
    const dataDir = await tempDir();
    // No Herald runs: each command starts the embedded PostgreSQL for itself. The first command
    // as the built entry point runs it; the others in this process.
    const created = await run(
      process.execPath,
      [join(dist, 'cli.js'), 'tokens', 'create', '--name', 'reader', '--role', 'read_only'],
      { env: { PATH: process.env['PATH'] ?? '', HERALD_DATA_DIR: dataDir } },
    );
    const cli = (...args: string[]) => cliInProcess({ HERALD_DATA_DIR: dataDir }, ...args);
    const token = created.stdout.trim();
    expect(token).toMatch(/^hrld_/);
    const producer = (
      await cli('tokens', 'create', '--name', 'feeder', '--role', 'producer')
    ).stdout.trim();
    const list = (await cli('tokens', 'list')).stdout;
    expect(list).toMatch(/^1\tread_only\treader\thrld_.{4}…\tnever used\tcreated$/m);
    expect(list).not.toContain(token);
    await cli('tokens', 'revoke', '2');
    expect((await cli('tokens', 'list')).stdout).not.toMatch(/^2\t/m);
    await expect(cli('tokens', 'create', '--name', 'x', '--role', 'root')).rejects.toMatchObject({
      code: 2,
    });
    await expect(cli('tokens', 'create', '--name', ' ', '--role', 'admin')).rejects.toMatchObject({
      code: 2,
    });

    const { child, url } = await start(dataDir);
    try {
      const ok = await fetch(`${url}/anything`, { headers: { Authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(404);
      const revoked = await fetch(`${url}/anything`, {
        headers: { Authorization: `Bearer ${producer}` },
      });
      expect(revoked.status).toBe(401);
      // While Herald runs, migrate uses its server.
      expect((await cli('migrate')).stdout).toBe('migrations applied\n');
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
  });
  it('the tokens CLI manages the tokens of a running Herald through its API, and the database once it stops', async () => {
    const dataDir = await tempDir();
    const { child, url } = await start(dataDir);
    const cli = (...args: string[]) =>
      cliInProcess({ HERALD_DATA_DIR: dataDir, HERALD_URL: url }, ...args);
    const postEvent = (token: string) =>
      fetch(`${url}/events`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ data: [modelEvent('post', { name: 'Post' }, [])] }),
      });
    let listed: string;
    try {
      // Without a URL, the embedded database's holder is found and Herald is asked where it
      // listens by default (port 0 here: not there), instead of refusing as the database would.
      const defaulted = await cliInProcess({ HERALD_DATA_DIR: dataDir }, 'tokens', 'list').catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect(defaulted).toMatchObject({ code: 1 });
      expect((defaulted as { stderr: string }).stderr).toContain('http://127.0.0.1:3000');
      expect((defaulted as { stderr: string }).stderr).not.toMatch(/in use by process/);

      // The bootstrap token, from the admin-token file the CLI also sends.
      expect((await cli('tokens', 'list')).stdout).toMatch(
        /^1\tadmin\tHERALD_DATA_DIR\/admin-token\thrld_admin_.{4}…\tlast used \S+\tbootstrap$/m,
      );
      const created = await cli('tokens', 'create', '--name', 'feeder', '--role', 'producer');
      expect(created.stderr).toContain('created token 2 (producer) "feeder"');
      const producer = created.stdout.trim();
      expect((await postEvent(producer)).status).toBe(202);

      const regenerated = (await cli('tokens', 'regenerate', '2')).stdout.trim();
      expect(regenerated).toMatch(/^hrld_/);
      expect((await postEvent(producer)).status).toBe(401);
      expect((await postEvent(regenerated)).status).toBe(202);
      await cli('tokens', 'revoke', '2');
      expect((await postEvent(regenerated)).status).toBe(401);

      // The last admin token stays; a token of another role is told what it lacks.
      await expect(cli('tokens', 'revoke', '1')).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining('LAST_ADMIN_TOKEN'),
      });
      const reader = (
        await cliInProcess(
          { HERALD_DATA_DIR: dataDir },
          'tokens',
          'create',
          '--url',
          url,
          '--name',
          'reader',
          '--role',
          'read_only',
        )
      ).stdout.trim();
      await expect(
        cliInProcess(
          { HERALD_DATA_DIR: dataDir, HERALD_URL: url, HERALD_TOKEN: reader },
          'tokens',
          'list',
        ),
      ).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining('INSUFFICIENT_PERMISSIONS'),
      });
      listed = (await cli('tokens', 'list')).stdout;
      expect(
        listed
          .split('\n')
          .filter(Boolean)
          .map((line) => line.split('\t')[2]),
      ).toEqual(['HERALD_DATA_DIR/admin-token', 'reader']);
    } finally {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    }
    // Stopped: the same tokens, from the database.
    const offline = await cliInProcess({ HERALD_DATA_DIR: dataDir }, 'tokens', 'list');
    expect(offline.stdout).toBe(listed);
  });
});
