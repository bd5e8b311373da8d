import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';
import { waitUntil } from './private-postgres.js';

const run = promisify(execFile);

/** redis-server's arguments for a test's own server: on `port` of 127.0.0.1, nothing saved. */
export function redisServerArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ];
}

/**
 * A redis-server of a test's own on a free port of 127.0.0.1, without persistence, that it may
 * flush, kill and start again (empty). The shared server (6379) is never touched.
 */
export class PrivateRedis {
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
    const child = spawn('redis-server', redisServerArgs(this.port, tmpdir()), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
