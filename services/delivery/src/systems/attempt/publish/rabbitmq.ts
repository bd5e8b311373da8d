import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import { BrokerPublisher, acknowledged, brokerTarget, connectError, failed } from './publisher.js';
import type { BrokerMessage, ConnectErrors, Failure, PublisherOptions } from './publisher.js';
import type { SendResult } from '../http-client.js';

type RabbitDestination = Extract<BrokerDestination, { kind: 'rabbitmq' }>;

/** The header that matches a returned (unroutable) message to its publish. */
const PUBLISH_ID = 'herald-publish-id';

/** A confirm channel for one exchange; a channel error (404, 406) closes it, and says why. */
interface ExchangeChannel {
  channel: ConfirmChannel;
  /** The server's reason for closing the channel, once it did. */
  closedBecause?: string;
  /** Publish ids the broker returned (mandatory: no queue took the message). */
  returned: Set<string>;
}

/**
 * AMQP 0-9-1 (amqplib) to RabbitMQ: one connection per URL and credentials, one confirm channel
 * per exchange (a missing exchange closes only its own channel). A publish is acknowledged once
 * the broker confirms it (publisher confirms) and did not return it as unroutable (`mandatory`).
 */
export class RabbitMqPublisher extends BrokerPublisher<RabbitDestination> {
  readonly #channels = new Map<string, Promise<ExchangeChannel>>();
  #closed = false;

  private constructor(
    private readonly connection: ChannelModel,
    broker: string,
  ) {
    super(broker, 'did not confirm the message to');
    connection.on('error', () => {
      // Followed by 'close'; the reason reaches the publishes through their channels.
    });
    connection.on('close', () => {
      this.#closed = true;
    });
  }

  static async connect(
    destination: RabbitDestination,
    options: PublisherOptions,
  ): Promise<RabbitMqPublisher> {
    const { broker, username, password } = await brokerTarget('RabbitMQ', destination, options);
    try {
      const connection = await amqp.connect(destination.url, {
        timeout: options.connectTimeoutMs,
        ...(username !== null && {
          credentials: amqp.credentials.plain(username, password ?? ''),
        }),
        clientProperties: { connection_name: 'herald-delivery' },
      });
      return new RabbitMqPublisher(connection, broker);
    } catch (error) {
      throw connectError(error, broker, CONNECT_ERRORS);
    }
  }

  get open(): boolean {
    return !this.#closed;
  }

  protected async send(
    destination: RabbitDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    const target = await this.#channelFor(destination.exchange);
    const publishId = randomUUID();
    const confirmed = new Promise<Error | null>((resolve) => {
      try {
        target.channel.publish(
          destination.exchange,
          destination.routing_key,
          Buffer.from(message.body),
          {
            mandatory: true,
            persistent: true,
            contentType: message.headers['content-type'] ?? 'application/json',
            messageId: message.id,
            timestamp: Math.floor(Date.now() / 1000),
            headers: { ...message.headers, [PUBLISH_ID]: publishId },
          },
          (error: unknown) => resolve(error ? (error as Error) : null),
        );
      } catch (error) {
        // The channel closed before the publish went out.
        resolve(error as Error);
      }
    });
    const error = await confirmed;
    if (error) {
      const reason = target.closedBecause ?? errorMessage(error);
      return failed('error', `${this.broker} refused the message to ${where}: ${explain(reason)}`);
    }
    if (target.returned.delete(publishId)) {
      return failed(
        'error',
        `${this.broker} could not route the message: no queue is bound to ${where}`,
      );
    }
    return acknowledged(`confirmed by ${this.broker}: published to ${where}`, {
      'message-id': message.id,
      exchange: destination.exchange,
      'routing-key': destination.routing_key,
    });
  }

  /** A channel that could not be opened: the client's words. */
  protected refusal(error: unknown): Failure {
    return failed('error', errorMessage(error));
  }

  #channelFor(exchange: string): Promise<ExchangeChannel> {
    let channel = this.#channels.get(exchange);
    if (!channel) {
      channel = this.#openChannel(exchange);
      this.#channels.set(exchange, channel);
      channel.catch(() => this.#channels.delete(exchange));
    }
    return channel;
  }

  async #openChannel(exchange: string): Promise<ExchangeChannel> {
    const channel = await this.connection.createConfirmChannel();
    const target: ExchangeChannel = { channel, returned: new Set() };
    channel.on('error', (error: unknown) => {
      target.closedBecause = errorMessage(error);
    });
    channel.on('close', () => {
      if (this.#channels.get(exchange) !== undefined) this.#channels.delete(exchange);
    });
    channel.on('return', (returned: ConsumeMessage) => {
      const id: unknown = returned.properties.headers?.[PUBLISH_ID];
      if (typeof id === 'string') target.returned.add(id);
    });
    return target;
  }

  protected where(destination: RabbitDestination): string {
    return `exchange "${destination.exchange}" (routing key "${destination.routing_key}")`;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.connection.close();
    } catch {
      // Already closing or closed.
    }
  }
}

/** The broker's reason in words: its AMQP reply code named. */
function explain(reason: string): string {
  if (/NOT_FOUND - no exchange/.test(reason)) return `the exchange does not exist (${reason})`;
  if (/larger than configured max size|message size/i.test(reason)) {
    return `the message is too large for the broker (${reason})`;
  }
  if (/ACCESS_REFUSED/.test(reason)) return `access refused (${reason})`;
  if (/nack/i.test(reason)) {
    return `the broker did not take it (nack): a queue it routes to is full and refuses new messages, or the broker is short of resources`;
  }
  return reason;
}

/** What an AMQP client's connect error says. */
const CONNECT_ERRORS: ConnectErrors = {
  credentials: (message) => /ACCESS[-_]REFUSED|403/.test(message),
  other: (message, _code, broker) => {
    if (/vhost .* not found|NOT_ALLOWED/.test(message)) {
      return failed('error', `${broker} refused the virtual host (${message})`);
    }
    // amqplib's own errors carry no code: a silent broker, one that hangs up mid-handshake.
    if (/timeout|ETIMEDOUT/i.test(message)) {
      return failed('timeout', `${broker} did not answer in time (${message})`);
    }
    if (/Socket closed abruptly/i.test(message)) {
      return failed('reset', `${broker} closed the connection (${message})`);
    }
    return undefined;
  },
};
