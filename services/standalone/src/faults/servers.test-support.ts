import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { freePort, waitUntil } from '@herald/testkit';

/**
 * The fault suite's own Redis server, on a free port of 127.0.0.1, so that it may kill, flush and
 * restart it. The shared server (6379) is never touched. Its PostgreSQL cluster is testkit's
 * PrivatePostgres.
 */

const run = promisify(execFile);

/**
 * The Redis a fault's Herald processes run on, as the faults see it: one server today; a Redis
 * Cluster (REDIS_CLUSTER_NODES) can take its place by implementing the same.
 */
export interface FaultRedis {
  /** The variables that point Herald at it (REDIS_URL; a cluster's REDIS_CLUSTER_NODES). */
  readonly env: Readonly<Record<string, string>>;
  /** FLUSHALL (a cluster: on every master). */
  flushAll(): Promise<void>;
  /** kill -9 of every server: Redis goes down with everything it held. */
  kill(): Promise<void>;
  /** Starts every server again, empty, and waits until they answer. */
  start(): Promise<void>;
  /** One redis-cli command (a cluster: to the node holding the key). */
  cli(...args: string[]): Promise<string>;
  destroy(): Promise<void>;
  /** For an exit handler: kill -9, synchronously. */
  killSync(): void;
}

/** A redis-server child of the suite's own, without persistence, killable and restartable. */
export class PrivateRedis implements FaultRedis {
  #child: ChildProcess | undefined;
  #output = '';

  private constructor(readonly port: number) {}

  static async create(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get env(): Readonly<Record<string, string>> {
    return { REDIS_URL: this.url };
  }

  async flushAll(): Promise<void> {
    const answer = await this.cli('FLUSHALL');
    if (answer !== 'OK') throw new Error(`FLUSHALL answered ${answer}`);
  }

  get output(): string {
    return this.#output;
  }

  /** Starts redis-server on the same port (empty: nothing is saved) and waits for PING. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        tmpdir(),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#child = child;
    const keep = (chunk: Buffer) =>
      (this.#output = (this.#output + chunk.toString()).slice(-20_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const ready = await waitUntil(
      async () => child.exitCode === null && (await this.cli('PING').catch(() => '')) === 'PONG',
      30_000,
    );
    if (!ready) throw new Error(`redis-server did not start on ${this.port}:\n${this.#output}`);
  }

  /** kill -9: Redis goes down with everything it held. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      ...args,
    ]);
    return stdout.trim();
  }

  destroy(): Promise<void> {
    return this.kill();
  }

  killSync(): void {
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
