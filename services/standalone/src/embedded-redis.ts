import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import type { Logger } from '@herald/runtime';

/** True when something accepts TCP connections on host:port. */
export function isListening(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ port, host });
    const finish = (result: boolean) => {
      socket.destroy();
      done(result);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

export class RedisServerMissingError extends Error {
  constructor() {
    super(
      'REDIS_URL is not set, nothing listens on the Redis port, and there is no redis-server on ' +
        'PATH to start. Install Redis (Debian/Ubuntu: `sudo apt-get install redis-server`; ' +
        'macOS: `brew install redis`) or set REDIS_URL to a running Redis.',
    );
    this.name = 'RedisServerMissingError';
  }
}

/**
 * The embedded default for Redis: uses a Redis already listening on the port, or starts
 * `redis-server` as a child process with its append-only file under dataDir.
 */
export async function ensureRedis(options: {
  port: number;
  dataDir: string;
  logger: Logger;
}): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = `redis://127.0.0.1:${options.port}`;
  if (await isListening(options.port)) {
    options.logger.info({ url }, 'using the Redis already listening');
    return { url, stop: () => Promise.resolve() };
  }
  const dir = resolve(options.dataDir, 'redis');
  await mkdir(dir, { recursive: true });
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(options.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--save',
      '',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await new Promise<void>((ready, fail) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      fail(error.code === 'ENOENT' ? new RedisServerMissingError() : error),
    );
    child.once('exit', (code) => fail(new Error(`redis-server exited with code ${String(code)}`)));
    const poll = async () => {
      for (let i = 0; i < 100; i++) {
        if (await isListening(options.port)) return ready();
        await new Promise((r) => setTimeout(r, 50));
      }
      fail(new Error('redis-server did not start listening within 5 s'));
    };
    child.once('spawn', () => void poll());
  });
  child.removeAllListeners('exit');
  options.logger.info({ url, dir }, 'started an embedded redis-server');
  return {
    url,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}
