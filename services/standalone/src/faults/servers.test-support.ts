import { startRedisCluster, type RedisCluster } from '@herald/testkit';

/**
 * The fault suite's own Redis, a server or a cluster, on free ports of 127.0.0.1, so that it may
 * kill, flush and restart it. The shared server (6379) is never touched. Its PostgreSQL cluster is
 * testkit's PrivatePostgres.
 */

/**
 * The Redis a fault's Herald processes run on, as the faults see it: one server (testkit's
 * PrivateRedis), or a Redis Cluster (PrivateRedisCluster, REDIS_CLUSTER_NODES).
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

/**
 * A Redis Cluster of the suite's own (testkit's startRedisCluster: 3 masters, 3 replicas, 1 s
 * node timeout) as a FaultRedis: killed and started as a whole (empty, the cluster made again on
 * the same ports, so that the processes' seeds still point at it), flushed on every master; and
 * one master killed, its replica taking over (`cluster`'s failOver).
 */
export class PrivateRedisCluster implements FaultRedis {
  private constructor(readonly cluster: RedisCluster) {}

  static async create(): Promise<PrivateRedisCluster> {
    return new PrivateRedisCluster(await startRedisCluster());
  }

  get env(): Readonly<Record<string, string>> {
    return { REDIS_CLUSTER_NODES: this.cluster.seeds };
  }

  flushAll(): Promise<void> {
    return this.cluster.flushAll();
  }

  kill(): Promise<void> {
    return this.cluster.killAll();
  }

  start(): Promise<void> {
    return this.cluster.restart();
  }

  cli(...args: string[]): Promise<string> {
    return this.cluster.cliByKey(...args);
  }

  destroy(): Promise<void> {
    return this.cluster.stop();
  }

  killSync(): void {
    this.cluster.killSync();
  }
}
