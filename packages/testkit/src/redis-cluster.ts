import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import {
  createLogger,
  createRedisCluster,
  createRedisCoordination,
  type RedisClusterTarget,
  type RedisCoordination,
} from '@herald/runtime';
import { freePort } from './free-port.js';
import { waitUntil } from './private-postgres.js';

/**
 * A Redis Cluster of a test's own: masters and their replicas, each a redis-server on free ports
 * of 127.0.0.1 (client and cluster bus), without persistence, in a temp folder removed at the end.
 * A test may kill a master (its replica takes over after `cluster-node-timeout`) and start it
 * again, or kill every node and make the cluster again, empty, on the same ports. The shared
 * server (6379) is never touched.
 */

const run = promisify(execFile);

/** One node: its port, its cluster bus port, its server process. */
export interface RedisClusterNode {
  port: number;
  busPort: number;
  /** Its cluster node id (CLUSTER MYID). */
  id: string;
}

export interface RedisCluster {
  /** Every node, masters first as `redis-cli --cluster create` made them. */
  nodes: RedisClusterNode[];
  /** REDIS_CLUSTER_NODES for Herald: every node's host:port. */
  seeds: string;
  /** The same, parsed, for createRedisCluster. */
  target: RedisClusterTarget;
  /** The nodes that are masters of slots now (after a failover, a promoted replica is one). */
  masters(): Promise<RedisClusterNode[]>;
  /** The node holding `key`'s slot as master now. */
  masterOf(key: string): Promise<RedisClusterNode>;
  /**
   * kill -9 of one node. Its replica is promoted once the others have not heard from it for
   * cluster-node-timeout; waitUntilHealthy waits for that.
   */
  kill(node: RedisClusterNode): Promise<void>;
  /**
   * kill -9 of the master holding `key`'s slot, then waits until its replica holds the slot and
   * the cluster is healthy: the failover. Resolves with the node killed.
   */
  failOver(key: string, timeoutMs?: number): Promise<RedisClusterNode>;
  /**
   * Starts a killed node again on its ports with its cluster config: it rejoins (a master that
   * was failed over, as a replica of the node that took its slots) and syncs; waits until the
   * cluster is healthy.
   */
  restartNode(node: RedisClusterNode): Promise<void>;
  /** kill -9 of every node: the cluster goes down with everything it held. */
  killAll(): Promise<void>;
  /**
   * After killAll: every node again on its ports, empty and with a fresh cluster config (new
   * ids), the cluster made again as at the start; waits until it is healthy.
   */
  restart(): Promise<void>;
  /** FLUSHALL on every master. */
  flushAll(): Promise<void>;
  /** Resolves once every slot has a living master and the cluster says it is ok. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** redis-cli against one node. */
  cli(node: RedisClusterNode, ...args: string[]): Promise<string>;
  /**
   * redis-cli -c against a living node: a command on a key goes to the node holding it (MOVED
   * is followed).
   */
  cliByKey(...args: string[]): Promise<string>;
  /** Stops every node and deletes the folder. */
  stop(): Promise<void>;
  /** For an exit or signal handler: kill -9 of every node and the folder deleted, synchronously. */
  killSync(): void;
}

export interface RedisClusterOptions {
  /** Masters (each holding a share of the 16384 slots). */
  masters?: number;
  /** Replicas per master. */
  replicas?: number;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over. */
  nodeTimeoutMs?: number;
}

/**
 * Starts a cluster (default: 3 masters, 1 replica each, 1 s node timeout) and waits until every
 * slot is served and every replica is in sync. If the test process ends without stop()
 * (interrupted, crashed), an exit handler still kills the servers and deletes the folder.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const { masters = 3, replicas = 1, nodeTimeoutMs = 1000 } = options;
  const dir = await mkdtemp(join(tmpdir(), 'herald-redis-cluster-'));
  const children = new Map<number, ChildProcess>();
  const output: string[] = [];
  const nodes: RedisClusterNode[] = [];
  const living = (node: RedisClusterNode): boolean => {
    const child = children.get(node.port);
    return !!child && child.exitCode === null && child.signalCode === null;
  };
  const killSync = (): void => {
    for (const node of nodes) if (living(node)) children.get(node.port)!.kill('SIGKILL');
  };
  const exitHandler = (): void => {
    killSync();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', exitHandler);
  const cli = async (port: number, ...args: string[]): Promise<string> => {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]);
    return stdout.trim();
  };
  const kill = async (node: RedisClusterNode): Promise<void> => {
    const child = children.get(node.port);
    if (!child || !living(node)) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const killAll = async (): Promise<void> => {
    await Promise.all(nodes.map(kill));
  };
  const stop = async (): Promise<void> => {
    await killAll();
    await rm(dir, { recursive: true, force: true });
    process.removeListener('exit', exitHandler);
  };
  const configFile = (node: RedisClusterNode): string => join(dir, `nodes-${node.port}.conf`);

  /** redis-server for one node, on its ports, with the cluster config it has (or none). */
  const spawnNode = (node: RedisClusterNode): void => {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(node.port),
        '--cluster-port',
        String(node.busPort),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        configFile(node),
        '--cluster-node-timeout',
        String(nodeTimeoutMs),
        // A replica takes over however long it was cut off from its master.
        '--cluster-replica-validity-factor',
        '0',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (chunk: Buffer): void => {
      output.push(`${node.port}: ${chunk.toString()}`);
      if (output.length > 200) output.shift();
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    children.set(node.port, child);
  };

  /** Resolves once these nodes answer PING. */
  const waitUntilUp = async (some: RedisClusterNode[]): Promise<void> => {
    const up = await waitUntil(
      async () =>
        (await Promise.all(some.map((node) => cli(node.port, 'PING').catch(() => '')))).every(
          (reply) => reply === 'PONG',
        ),
      30_000,
    );
    if (!up) throw new Error(`redis-server did not start:\n${output.join('')}`);
  };

  const byId = (id: string): RedisClusterNode | undefined => nodes.find((node) => node.id === id);
  /** CLUSTER NODES as one living node sees it: each node's role, state and slot ranges. */
  const clusterNodes = async (): Promise<
    { id: string; master: boolean; failed: boolean; slots: [number, number][] }[]
  > => {
    for (const node of nodes) {
      if (!living(node)) continue;
      const text = await cli(node.port, 'CLUSTER', 'NODES').catch(() => '');
      if (!text) continue;
      return text.split('\n').map((line) => {
        const [id = '', , flags = '', , , , , , ...ranges] = line.trim().split(' ');
        const slots = ranges
          .filter((range) => /^\d+(-\d+)?$/.test(range))
          .map((range): [number, number] => {
            const [start = 0, end = start] = range.split('-').map(Number);
            return [start, end];
          });
        return { id, master: flags.includes('master'), failed: flags.includes('fail'), slots };
      });
    }
    throw new Error('no living node');
  };
  const waitUntilHealthy = async (timeoutMs = 30_000): Promise<void> => {
    const healthy = await waitUntil(
      async () => {
        const alive = nodes.filter(living);
        const infos = await Promise.all(
          alive.map((node) => cli(node.port, 'CLUSTER', 'INFO').catch(() => '')),
        );
        if (!infos.every((info) => /cluster_state:ok/.test(info))) return false;
        if (!infos.every((info) => /cluster_slots_ok:16384/.test(info))) return false;
        // Every living replica streams from its master.
        const replication = await Promise.all(
          alive.map((node) => cli(node.port, 'INFO', 'replication').catch(() => '')),
        );
        return replication.every(
          (info) => !/role:slave/.test(info) || /master_link_status:up/.test(info),
        );
      },
      timeoutMs,
      100,
    );
    if (!healthy) throw new Error(`the Redis Cluster is not healthy:\n${output.join('')}`);
  };
  const masterOf = async (key: string): Promise<RedisClusterNode> => {
    const slot = Number(await cli(nodes.find(living)!.port, 'CLUSTER', 'KEYSLOT', key));
    const entry = (await clusterNodes()).find(
      (candidate) =>
        candidate.master &&
        !candidate.failed &&
        candidate.slots.some(([start, end]) => slot >= start && slot <= end),
    );
    const owner = entry && byId(entry.id);
    if (!owner) throw new Error(`no master for slot ${slot}`);
    return owner;
  };

  /** Every node started afresh (no cluster config), the cluster made, every slot served. */
  const create = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => rm(configFile(node), { force: true })));
    for (const node of nodes) spawnNode(node);
    await waitUntilUp(nodes);
    for (const node of nodes) node.id = await cli(node.port, 'CLUSTER', 'MYID');
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitUntilHealthy();
  };

  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await freePort();
      let busPort = await freePort();
      while (busPort === port) busPort = await freePort();
      nodes.push({ port, busPort, id: '' });
    }
    await create();

    const cluster: RedisCluster = {
      nodes,
      seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
      target: { nodes: nodes.map((node) => ({ host: '127.0.0.1', port: node.port })), tls: false },
      async masters() {
        return (await clusterNodes())
          .filter((entry) => entry.master && !entry.failed)
          .map((entry) => byId(entry.id))
          .filter((node): node is RedisClusterNode => node !== undefined && living(node));
      },
      masterOf,
      kill,
      async failOver(key, timeoutMs = 30_000) {
        const victim = await masterOf(key);
        await kill(victim);
        // Until the others mark it failed, CLUSTER NODES still names it the slot's master.
        const promoted = await waitUntil(
          async () => (await masterOf(key).catch(() => victim)) !== victim,
          timeoutMs,
          100,
        );
        if (!promoted) throw new Error(`no replica took over ${key}'s slot:\n${output.join('')}`);
        await waitUntilHealthy(timeoutMs);
        return victim;
      },
      async restartNode(node) {
        if (living(node)) return;
        spawnNode(node);
        await waitUntilUp([node]);
        await waitUntilHealthy();
      },
      killAll,
      restart: create,
      async flushAll() {
        const answers = await Promise.all(
          (await cluster.masters()).map((node) => cli(node.port, 'FLUSHALL')),
        );
        if (answers.some((answer) => answer !== 'OK')) {
          throw new Error(`FLUSHALL answered ${answers.join(', ')}`);
        }
      },
      waitUntilHealthy,
      cli: (node, ...args) => cli(node.port, ...args),
      cliByKey: async (...args) => {
        const node = nodes.find(living);
        if (!node) throw new Error('no living node');
        return cli(node.port, '-c', ...args);
      },
      stop,
      killSync: exitHandler,
    };
    return cluster;
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Coordination on the cluster under a prefix of its own (default: a random one), as a service
 * opens it with REDIS_CLUSTER_NODES: a producer connection, subscriptions on worker ones. close()
 * ends them all. The cluster is the test's: its keys go with it.
 */
export async function testClusterCoordination(
  cluster: RedisCluster,
  prefix = `herald_cluster_${randomBytes(6).toString('hex')}`,
): Promise<{ coordination: RedisCoordination; close: () => Promise<void> }> {
  const logger = createLogger({
    name: 'test',
    level: process.env['TEST_LOG_LEVEL'] === 'debug' ? 'debug' : 'silent',
  });
  const redis = createRedisCluster(cluster.target, 'producer', logger);
  // A producer connection fails fast until it is connected.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  const coordination = createRedisCoordination({
    redis,
    target: cluster.target,
    prefix,
    createSubscriber: () => createRedisCluster(cluster.target, 'worker', logger),
  });
  return { coordination, close: () => coordination.close() };
}
