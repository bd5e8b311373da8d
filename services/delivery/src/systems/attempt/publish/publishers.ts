import type { BrokerDestination, CidrList } from '@herald/contract';
import type { SendResult } from '../http-client.js';
import { BrokerError, failed, type BrokerMessage, type Publisher } from './publisher.js';
import { errorMessage } from '@herald/contract';

export interface PublishersOptions {
  connectTimeoutMs: number;
  /** The whole publish: connect, send and the broker's acknowledgement. */
  totalTimeoutMs: number;
  allowCidrs: CidrList;
  /** A connection unused this long is closed. */
  idleMs?: number;
}

interface Pooled {
  publisher: Promise<Publisher>;
  lastUsed: number;
  inFlight: number;
}

/**
 * The process's broker connections, one per broker URL and credentials (so the webhooks that
 * share a broker share a connection), opened at their first publish, closed when idle and at
 * shutdown. A connection that failed or closed is opened again at the next publish.
 */
export class Publishers {
  readonly #pool = new Map<string, Pooled>();
  readonly #sweep: NodeJS.Timeout;
  readonly #idleMs: number;

  constructor(private readonly options: PublishersOptions) {
    this.#idleMs = options.idleMs ?? 60_000;
    this.#sweep = setInterval(() => void this.#closeIdle(), Math.min(this.#idleMs, 30_000));
    this.#sweep.unref();
  }

  /** Publishes one message; never throws (see Publisher). */
  async publish(destination: BrokerDestination, message: BrokerMessage): Promise<SendResult> {
    const deadline = Date.now() + this.options.totalTimeoutMs;
    const key = poolKey(destination);
    let pooled = this.#pool.get(key);
    if (pooled) {
      const current = pooled;
      const open = await current.publisher.then(
        (publisher) => publisher.open,
        () => false,
      );
      if (!open && this.#pool.get(key) === current) this.#pool.delete(key);
      if (!open) pooled = undefined;
    }
    if (!pooled) {
      const entry: Pooled = {
        publisher: this.#connect(destination),
        lastUsed: Date.now(),
        inFlight: 0,
      };
      this.#pool.set(key, (pooled = entry));
      entry.publisher.catch(() => {
        if (this.#pool.get(key) === entry) this.#pool.delete(key);
      });
    }
    pooled.lastUsed = Date.now();
    pooled.inFlight += 1;
    try {
      const publisher = await pooled.publisher;
      return await publisher.publish(destination, message, deadline);
    } catch (error) {
      if (error instanceof BrokerError) return error.result;
      return failed('error', errorMessage(error));
    } finally {
      pooled.inFlight -= 1;
      pooled.lastUsed = Date.now();
    }
  }

  /**
   * Each kind's client library is loaded at its first connection: a process whose webhooks all
   * send HTTP (most) never loads amqplib, nats or mqtt (about 200 modules, 0.4 s of CPU at start).
   */
  async #connect(destination: BrokerDestination): Promise<Publisher> {
    const options = {
      connectTimeoutMs: this.options.connectTimeoutMs,
      allowCidrs: this.options.allowCidrs,
    };
    switch (destination.kind) {
      case 'rabbitmq': {
        const { RabbitMqPublisher } = await import('./rabbitmq.js');
        return RabbitMqPublisher.connect(destination, options);
      }
      case 'nats': {
        const { NatsPublisher } = await import('./nats.js');
        return NatsPublisher.connect(destination, options);
      }
      case 'mqtt': {
        const { MqttPublisher } = await import('./mqtt.js');
        return MqttPublisher.connect(destination, options);
      }
      case 'redis_stream': {
        const { RedisStreamPublisher } = await import('./redis-stream.js');
        return RedisStreamPublisher.connect(destination, options);
      }
    }
  }

  async #closeIdle(): Promise<void> {
    const now = Date.now();
    const idle = [...this.#pool].filter(
      ([, entry]) => entry.inFlight === 0 && now - entry.lastUsed >= this.#idleMs,
    );
    for (const [key] of idle) this.#pool.delete(key);
    await Promise.all(idle.map(([, entry]) => closeEntry(entry)));
  }

  /** Closes every connection (once no publish is in flight). */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const entries = [...this.#pool.values()];
    this.#pool.clear();
    await Promise.all(entries.map(closeEntry));
  }
}

async function closeEntry(entry: Pooled): Promise<void> {
  const publisher = await entry.publisher.catch(() => null);
  await publisher?.close();
}

/** The pool's key: a connection serves one URL with one set of credentials. */
function poolKey(destination: BrokerDestination): string {
  return JSON.stringify([
    destination.kind,
    destination.url,
    destination.username,
    destination.password,
  ]);
}
