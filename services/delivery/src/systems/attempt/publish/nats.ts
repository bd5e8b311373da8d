import { connect, headers, type JetStreamClient, type NatsConnection } from 'nats';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import {
  BrokerPublisher,
  acknowledged,
  brokerTarget,
  connectError,
  errorCode,
  failed,
} from './publisher.js';
import type { BrokerMessage, ConnectErrors, Failure, PublisherOptions } from './publisher.js';
import type { SendResult } from '../http-client.js';

type NatsDestination = Extract<BrokerDestination, { kind: 'nats' }>;

/**
 * NATS (nats.js): one connection per URL and credentials, not reconnecting (a lost one is
 * replaced at the next publish). JetStream publishes wait for the stream's PubAck; core NATS
 * publishes wait for the server to have read them (a flush).
 */
export class NatsPublisher extends BrokerPublisher<NatsDestination> {
  #closed = false;
  /** The JetStream client, made at the first JetStream publish and kept. */
  #jetstream: JetStreamClient | undefined;

  private constructor(
    private readonly connection: NatsConnection,
    broker: string,
  ) {
    super(broker, 'did not acknowledge the message on');
    void connection.closed().then(() => {
      this.#closed = true;
    });
  }

  static async connect(
    destination: NatsDestination,
    options: PublisherOptions,
  ): Promise<NatsPublisher> {
    const { broker, username, password, server } = await brokerTarget('NATS', destination, options);
    try {
      const connection = await connect({
        servers: server,
        timeout: options.connectTimeoutMs,
        reconnect: false,
        name: 'herald-delivery',
        ...(username !== null && password === null && { token: username }),
        ...(username !== null && password !== null && { user: username, pass: password }),
      });
      return new NatsPublisher(connection, broker);
    } catch (error) {
      throw connectError(error, broker, CONNECT_ERRORS);
    }
  }

  get open(): boolean {
    return !this.#closed && !this.connection.isClosed();
  }

  protected async send(
    destination: NatsDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    const body = Buffer.from(message.body);
    const max = this.connection.info?.max_payload;
    if (max !== undefined && body.length > max) {
      return failed(
        'error',
        `the message is too large for ${this.broker}: ${body.length} bytes, its max_payload is ${max}`,
      );
    }
    const sent = headers();
    for (const [name, value] of Object.entries(message.headers)) sent.set(name, value);
    if (!destination.jetstream) {
      this.connection.publish(destination.subject, body, { headers: sent });
      await this.connection.flush();
      return acknowledged(`received by ${this.broker} on ${where} (core NATS)`, {
        'message-id': message.id,
        subject: destination.subject,
      });
    }
    this.#jetstream ??= this.connection.jetstream();
    const ack = await this.#jetstream.publish(destination.subject, body, { headers: sent });
    return acknowledged(
      `stored by ${this.broker}: stream "${ack.stream}" sequence ${ack.seq} on ${where}${ack.duplicate ? ' (a duplicate)' : ''}`,
      {
        'message-id': message.id,
        subject: destination.subject,
        stream: ack.stream,
        seq: String(ack.seq),
      },
    );
  }

  protected refusal(error: unknown, where: string): Failure {
    const code = errorCode(error);
    const message = errorMessage(error);
    if (code === '503' || /no responders/i.test(message)) {
      return failed(
        'error',
        `${this.broker} has no JetStream stream for ${where} (no responders: create a stream that captures the subject, or set jetstream to false)`,
      );
    }
    if (code === 'TIMEOUT') {
      return failed('timeout', `${this.broker} did not acknowledge the message on ${where}`);
    }
    if (code === 'MAX_PAYLOAD_EXCEEDED') {
      return failed('error', `the message is too large for ${this.broker} (${message})`);
    }
    return failed('error', `${this.broker} refused the message on ${where}: ${message}`);
  }

  protected where(destination: NatsDestination): string {
    return `subject "${destination.subject}"`;
  }

  async close(): Promise<void> {
    if (this.connection.isClosed()) return;
    this.#closed = true;
    try {
      await this.connection.close();
    } catch {
      // Already closed.
    }
  }
}

/** What a NATS client's connect error says. */
const CONNECT_ERRORS: ConnectErrors = {
  credentials: (message, code) =>
    code === 'AUTHORIZATION_VIOLATION' || /authorization/i.test(message),
  timeout: (_message, code) => code === 'TIMEOUT',
  other: (_message, code, broker) =>
    code === 'CONNECTION_REFUSED'
      ? failed('refused', `${broker} is unreachable: connection refused`)
      : undefined,
};
