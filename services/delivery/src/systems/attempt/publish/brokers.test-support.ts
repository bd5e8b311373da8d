import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, redisServerArgs, waitUntil } from '@herald/testkit';

/**
 * Brokers of a test's own (nats-server, mosquitto, redis-server), on a free port of 127.0.0.1 with
 * the settings a test is about (a password, a message size limit), so that a test may refuse,
 * restrict or kill them without touching the shared brokers. Each starts in well under a second.
 */
export interface OwnBroker {
  /** The broker's URL, without credentials. */
  readonly url: string;
  readonly port: number;
  /** kill -9, and its folder removed. */
  close(): Promise<void>;
}

export interface OwnBrokerOptions {
  /** Credentials the broker demands (Redis: `requirepass`, the default user). */
  user?: string;
  password?: string;
  /** NATS max_payload, Mosquitto message_size_limit, in bytes. */
  maxMessageBytes?: number;
  /** Mosquitto max_packet_size (told to clients in the CONNACK), in bytes. */
  maxPacketBytes?: number;
}

const run = promisify(execFile);

/** A broker binary with a config of its own in a temporary folder, once it accepts connections. */
async function spawnBroker(
  scheme: string,
  command: string,
  args: (dir: string, port: number) => Promise<string[]>,
): Promise<OwnBroker> {
  const dir = await mkdtemp(join(tmpdir(), `herald-test-${command}-`));
  const port = await freePort();
  const child: ChildProcess = spawn(command, await args(dir, port), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-10_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const listening = await waitUntil(() => child.exitCode === null && accepts(port), 10_000, 20);
  if (!listening) {
    await close();
    throw new Error(`${command} did not start on ${port}:\n${output}`);
  }
  return { url: `${scheme}://127.0.0.1:${port}`, port, close };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** nats-server with JetStream (its store in the broker's folder). */
export function startOwnNats(options: OwnBrokerOptions = {}): Promise<OwnBroker> {
  return spawnBroker('nats', 'nats-server', async (dir, port) => {
    const lines = [
      `listen: 127.0.0.1:${port}`,
      `jetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }`,
    ];
    if (options.maxMessageBytes !== undefined)
      lines.push(`max_payload: ${options.maxMessageBytes}`);
    if (options.user !== undefined) {
      lines.push(
        `authorization { user: ${JSON.stringify(options.user)}, password: ${JSON.stringify(options.password ?? '')} }`,
      );
    }
    const config = join(dir, 'nats.conf');
    await writeFile(config, lines.join('\n'));
    return ['-c', config];
  });
}

/** mosquitto; with a user, anonymous clients are refused. */
export function startOwnMosquitto(options: OwnBrokerOptions = {}): Promise<OwnBroker> {
  return spawnBroker('mqtt', 'mosquitto', async (dir, port) => {
    const lines = [`listener ${port} 127.0.0.1`];
    if (options.maxMessageBytes !== undefined) {
      lines.push(`message_size_limit ${options.maxMessageBytes}`);
    }
    if (options.maxPacketBytes !== undefined) {
      lines.push(`max_packet_size ${options.maxPacketBytes}`);
    }
    if (options.user !== undefined) {
      const passwords = join(dir, 'passwords');
      await run('mosquitto_passwd', ['-b', '-c', passwords, options.user, options.password ?? '']);
      // Run as root, mosquitto drops to its own account, which must read the file.
      await chmod(dir, 0o755);
      await chmod(passwords, 0o644);
      lines.push('allow_anonymous false', `password_file ${passwords}`);
    } else {
      lines.push('allow_anonymous true');
    }
    const config = join(dir, 'mosquitto.conf');
    await writeFile(config, lines.join('\n') + '\n');
    return ['-c', config];
  });
}

/** redis-server without persistence; `password`: requirepass. */
export function startOwnRedis(options: OwnBrokerOptions = {}): Promise<OwnBroker> {
  return spawnBroker('redis', 'redis-server', (dir, port) =>
    Promise.resolve([
      ...redisServerArgs(port, dir),
      ...(options.password !== undefined ? ['--requirepass', options.password] : []),
    ]),
  );
}
