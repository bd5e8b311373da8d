import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm, appendFile, readFile } from 'node:fs/promises';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

/**
 * PostgreSQL clusters of a test's own, on free ports of 127.0.0.1, so that it may stop, crash and
 * restart them, or stream one to a replica and pause its replay (the fault suite, the read
 * replica tests). The shared server (5432) is never touched.
 */

const run = promisify(execFile);

/** Polls `probe` until it resolves true, every `intervalMs`, for at most `timeoutMs`. */
export async function waitUntil(
  probe: () => Promise<boolean> | boolean,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The newest installed server binaries: /usr/lib/postgresql/<version>/bin, or initdb's folder. */
function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
      .sort((a, b) => Number(a) - Number(b));
    const newest = versions.at(-1);
    if (newest) return join(root, newest, 'bin');
  }
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  throw new Error(
    'PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin or on ' +
      'the PATH; scripts/ensure-services.sh installs them',
  );
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` OS user. */
const asRoot = process.getuid?.() === 0;

async function postgresIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (!asRoot) return undefined;
  const [uid, gid] = await Promise.all([
    run('id', ['-u', 'postgres']),
    run('id', ['-g', 'postgres']),
  ]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** A PostgreSQL cluster of the suite's own: initdb in a temp folder, trust auth, fsync off. */
export class PrivatePostgres {
  private constructor(
    readonly port: number,
    private readonly bin: string,
    private readonly dir: string,
  ) {}

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** The server's log (pg_ctl -l), for a failing test to print. */
  log(): Promise<string> {
    return readFile(join(this.dir, 'postgres.log'), 'utf8').catch(() => '');
  }

  static create(): Promise<PrivatePostgres> {
    return PrivatePostgres.#make('herald-pg-', (cluster) =>
      cluster.#as('initdb', [
        '-D',
        cluster.dataDir,
        '-U',
        'postgres',
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ]),
    );
  }

  /**
   * A streaming replica of this cluster: `pg_basebackup -R` (which writes standby.signal and
   * primary_conninfo) into a folder of its own, started as a hot standby on another free port.
   * initdb's trust rules already admit replication connections from 127.0.0.1. The copy holds
   * the primary's settings; the lines #configure appends last win.
   */
  createReplica(): Promise<PrivatePostgres> {
    return PrivatePostgres.#make('herald-pg-replica-', (replica) =>
      replica.#as('pg_basebackup', [
        '-D',
        replica.dataDir,
        '-h',
        '127.0.0.1',
        '-p',
        String(this.port),
        '-U',
        'postgres',
        '-R',
        '-X',
        'stream',
        '--checkpoint=fast',
        '--no-sync',
      ]),
    );
  }

  /** A cluster in a new folder on a free port, its data made by `fill`, configured, started. */
  static async #make(
    prefix: string,
    fill: (cluster: PrivatePostgres) => Promise<void>,
  ): Promise<PrivatePostgres> {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    const ids = await postgresIds();
    if (ids) await chown(dir, ids.uid, ids.gid);
    const cluster = new PrivatePostgres(await freePort(), postgresBinDir(), dir);
    try {
      await fill(cluster);
      await cluster.#configure();
      await cluster.start();
    } catch (error) {
      await cluster.destroy();
      throw error;
    }
    return cluster;
  }

  #configure(): Promise<void> {
    return appendFile(
      join(this.dataDir, 'postgresql.conf'),
      [
        `port = ${this.port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${this.dir}'`,
        // Speed: nothing here must survive the machine, only Postgres's own stops and crashes.
        'fsync = off',
        'full_page_writes = off',
        'max_connections = 200',
        'shared_buffers = 32MB',
        '',
      ].join('\n'),
    );
  }

  /**
   * On a replica: stops applying WAL (it still receives it) and waits until replay has stopped,
   * so that nothing committed on the primary from now on is visible here until resumeReplay.
   */
  async pauseReplay(): Promise<void> {
    await this.psql('SELECT pg_wal_replay_pause()');
    const paused = await waitUntil(
      async () => (await this.psql('SELECT pg_get_wal_replay_pause_state()')) === 'paused',
      30_000,
      10,
    );
    if (!paused) throw new Error('the replica did not pause its replay');
  }

  async resumeReplay(): Promise<void> {
    await this.psql('SELECT pg_wal_replay_resume()');
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Runs one SQL command as the superuser with psql (a new connection each time). */
  async psql(sql: string, database = 'postgres'): Promise<string> {
    const { stdout } = await run(
      join(this.bin, 'psql'),
      ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(this.port)].concat([
        '-U',
        'postgres',
        '-d',
        database,
        '-c',
        sql,
      ]),
      { env: { PATH: process.env['PATH'] ?? '', PGAPPNAME: 'herald-test-admin' } },
    );
    return stdout.trim();
  }

  async createDatabase(name: string): Promise<void> {
    await this.psql(`CREATE DATABASE ${name}`);
  }

  start(): Promise<void> {
    return this.#ctl(['start', '-w', '-t', '120', '-l', join(this.dir, 'postgres.log')]);
  }

  /** `immediate`: a crash (no checkpoint, clients cut); `fast`: a clean stop. */
  stop(mode: 'immediate' | 'fast'): Promise<void> {
    return this.#ctl(['stop', '-w', '-t', '120', '-m', mode]);
  }

  restart(): Promise<void> {
    return this.#ctl([
      'restart',
      '-w',
      '-t',
      '120',
      '-m',
      'fast',
      '-l',
      join(this.dir, 'postgres.log'),
    ]);
  }

  /** Stops the server if it runs (as a crash: nothing to keep) and deletes the cluster. */
  async destroy(): Promise<void> {
    if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
      await this.stop('immediate').catch(() => undefined);
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  /**
   * For an exit or signal handler: the same, synchronously and at once (the test runner kills a
   * worker 500 ms after SIGTERM). SIGQUIT is Postgres's immediate shutdown.
   */
  destroySync(): void {
    try {
      const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  #ctl(args: string[]): Promise<void> {
    return this.#as('pg_ctl', ['-D', this.dataDir, ...args]);
  }

  async #as(tool: string, args: string[]): Promise<void> {
    const path = join(this.bin, tool);
    const [command, argv] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', path, ...args]]
      : [path, args];
    try {
      await run(command, argv, { cwd: this.dir, env: { PATH: process.env['PATH'] ?? '' } });
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`${tool} ${args.join(' ')} failed:\n${stdout}${stderr}`, { cause: error });
    }
  }
}

/** A primary and its streaming replica, both of the test's own, with a database `herald`. */
export interface ReplicatedPostgres {
  primary: PrivatePostgres;
  replica: PrivatePostgres;
  /** Stops both and deletes their folders. */
  destroy(): Promise<void>;
}

/**
 * Starts a primary and a replica streaming from it (a few seconds). If the test process ends
 * without destroy (interrupted, crashed), an exit handler still stops both and deletes them.
 */
export async function createReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const primary = await PrivatePostgres.create();
  let replica: PrivatePostgres | undefined;
  const destroySync = () => {
    replica?.destroySync();
    primary.destroySync();
  };
  process.once('exit', destroySync);
  try {
    await primary.createDatabase('herald');
    replica = await primary.createReplica();
  } catch (error) {
    process.removeListener('exit', destroySync);
    await primary.destroy();
    throw error;
  }
  const started = replica;
  return {
    primary,
    replica: started,
    async destroy() {
      await started.destroy();
      await primary.destroy();
      process.removeListener('exit', destroySync);
    },
  };
}
