import { Redis } from 'ioredis';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import { closeRedis } from '@herald/runtime';
import {
  BrokerError,
  BrokerPublisher,
  acknowledged,
  brokerTarget,
  connectError,
  failed,
} from './publisher.js';
import type { BrokerMessage, ConnectErrors, Failure, PublisherOptions } from './publisher.js';
import type { SendResult } from '../http-client.js';

type StreamDestination = Extract<BrokerDestination, { kind: 'redis_stream' }>;

/**
 * Redis streams (ioredis): one client per URL and credentials, failing fast (no offline queue,
 * no reconnecting: a lost one is replaced at the next publish). A message is an XADD with
 * `MAXLEN ~ max_len`: the field `body` and one field per header; the entry id is its answer.
 */
export class RedisStreamPublisher extends BrokerPublisher<StreamDestination> {
  #closed = false;

  private constructor(
    private readonly client: Redis,
    broker: string,
  ) {
    super(broker, 'did not answer the XADD to');
    client.on('end', () => {
      this.#closed = true;
    });
  }

  static async connect(
    destination: StreamDestination,
    options: PublisherOptions,
  ): Promise<RedisStreamPublisher> {
    const { broker, username, password } = await brokerTarget('Redis', destination, options);
    const client = new Redis(destination.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: options.connectTimeoutMs,
      connectionName: 'herald-delivery',
      ...(username !== null && { username }),
      ...(password !== null && { password }),
    });
    // Commands in flight fail with it; the client is replaced once it ended. A refused AUTH is
    // only told here: connect() then rejects with "Connection is closed".
    let lastError: unknown;
    client.on('error', (error: unknown) => {
      lastError = error;
    });
    // connectTimeout bounds the TCP connection only: a server that accepts it and then answers
    // nothing (not AUTH, not the ready check) would leave connect() waiting for ever.
    let silent = false;
    const timer = setTimeout(() => {
      silent = true;
      client.disconnect();
    }, options.connectTimeoutMs);
    try {
      await client.connect();
      return new RedisStreamPublisher(client, broker);
    } catch (error) {
      client.disconnect();
      if (silent) {
        throw new BrokerError(
          failed(
            'timeout',
            `${broker} did not answer in time (connected, but no answer within ${options.connectTimeoutMs} ms)`,
          ),
          { cause: error },
        );
      }
      const cause = lastError ?? error;
      throw connectError(cause, broker, CONNECT_ERRORS);
    } finally {
      clearTimeout(timer);
    }
  }

  get open(): boolean {
    return !this.#closed && this.client.status === 'ready';
  }

  protected async send(
    destination: StreamDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    const fields = Object.entries(message.headers).flat();
    const id = await this.client.xadd(
      destination.stream,
      'MAXLEN',
      '~',
      destination.max_len,
      '*',
      ...fields,
      'body',
      message.body,
    );
    return acknowledged(`added by ${this.broker} to ${where} as entry ${id ?? '?'}`, {
      'message-id': message.id,
      stream: destination.stream,
      'entry-id': id ?? '',
    });
  }

  protected refusal(error: unknown, where: string): Failure {
    const text = errorMessage(error);
    if (/WRONGTYPE/.test(text)) {
      return failed(
        'error',
        `${this.broker}: the key of ${where} holds something other than a stream (${text})`,
      );
    }
    if (/NOAUTH|WRONGPASS|NOPERM/.test(text)) {
      return failed('error', `${this.broker} refused the credentials (${text})`);
    }
    if (/OOM|max.*bulk|too large/i.test(text)) {
      return failed('error', `the message is too large for ${this.broker} (${text})`);
    }
    return failed('error', `${this.broker} refused the XADD to ${where}: ${text}`);
  }

  protected where(destination: StreamDestination): string {
    return `stream "${destination.stream}"`;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await closeRedis(this.client);
  }
}

/** What a Redis client's connect error says. */
const CONNECT_ERRORS: ConnectErrors = {
  credentials: (message) => /NOAUTH|WRONGPASS|invalid password|NOPERM/i.test(message),
  timeout: (message) => /timeout/i.test(message),
};
