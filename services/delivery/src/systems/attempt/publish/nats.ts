import { connect, headers, type NatsConnection } from 'nats';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import {
  BrokerError,
  acknowledged,
  brokerHost,
  credentialsOf,
  errorCode,
  failed,
  guardBrokerAddress,
  networkFailure,
  withTimeout,
  type BrokerMessage,
  type Publisher,
  type PublisherOptions,
} from './publisher.js';
import type { SendResult } from '../http-client.js';

type NatsDestination = Extract<BrokerDestination, { kind: 'nats' }>;

/**
 * NATS (nats.js): one connection per URL and credentials, not reconnecting (a lost one is
 * replaced at the next publish). JetStream publishes wait for the stream's PubAck; core NATS
 * publishes wait for the server to have read them (a flush).
 */
export class NatsPublisher implements Publisher {
  #closed = false;

  private constructor(
    private readonly connection: NatsConnection,
    private readonly broker: string,
  ) {
    void connection.closed().then(() => {
      this.#closed = true;
    });
  }

  static async connect(
    destination: NatsDestination,
    options: PublisherOptions,
  ): Promise<NatsPublisher> {
    const broker = `NATS at ${brokerHost(destination.url)}`;
    await guardBrokerAddress(destination.url, options.allowCidrs);
    const { username, password } = credentialsOf(destination);
    const server = new URL(destination.url);
    server.username = '';
    server.password = '';
    try {
      const connection = await connect({
        servers: server.toString(),
        timeout: options.connectTimeoutMs,
        reconnect: false,
        name: 'herald-delivery',
        ...(username !== null && password === null && { token: username }),
        ...(username !== null && password !== null && { user: username, pass: password }),
      });
      return new NatsPublisher(connection, broker);
    } catch (error) {
      throw new BrokerError(connectFailure(error, broker), { cause: error });
    }
  }

  get open(): boolean {
    return !this.#closed && !this.connection.isClosed();
  }

  publish(
    destination: NatsDestination,
    message: BrokerMessage,
    signal: AbortSignal,
  ): Promise<SendResult> {
    const where = `subject "${destination.subject}"`;
    return withTimeout(
      this.#publish(destination, message, where),
      signal,
      `${this.broker} did not acknowledge the message on ${where} in time`,
    );
  }

  async #publish(
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
    try {
      if (!destination.jetstream) {
        this.connection.publish(destination.subject, body, { headers: sent });
        await this.connection.flush();
        return acknowledged(`received by ${this.broker} on ${where} (core NATS)`, {
          'message-id': message.id,
          subject: destination.subject,
        });
      }
      const ack = await this.connection
        .jetstream()
        .publish(destination.subject, body, { headers: sent });
      return acknowledged(
        `stored by ${this.broker}: stream "${ack.stream}" sequence ${ack.seq} on ${where}${ack.duplicate ? ' (a duplicate)' : ''}`,
        {
          'message-id': message.id,
          subject: destination.subject,
          stream: ack.stream,
          seq: String(ack.seq),
        },
      );
    } catch (error) {
      const network = networkFailure(error, this.broker);
      if (network) return network;
      const code = errorCode(error);
      if (code === '503' || /no responders/i.test(errorMessage(error))) {
        return failed(
          'error',
          `${this.broker} has no JetStream stream for ${where} (no responders: create a stream that captures the subject, or set jetstream to false)`,
        );
      }
      if (code === 'TIMEOUT') {
        return failed('timeout', `${this.broker} did not acknowledge the message on ${where}`);
      }
      if (code === 'MAX_PAYLOAD_EXCEEDED') {
        return failed(
          'error',
          `the message is too large for ${this.broker} (${errorMessage(error)})`,
        );
      }
      return failed(
        'error',
        `${this.broker} refused the message on ${where}: ${errorMessage(error)}`,
      );
    }
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

function connectFailure(error: unknown, broker: string): Extract<SendResult, { kind: 'error' }> {
  const network = networkFailure(error, broker);
  if (network && network.kind === 'error') return network;
  const code = errorCode(error);
  const message = errorMessage(error);
  if (code === 'CONNECTION_REFUSED') {
    return {
      kind: 'error',
      error: 'refused',
      reason: `${broker} is unreachable: connection refused`,
    };
  }
  if (code === 'AUTHORIZATION_VIOLATION' || /authorization/i.test(message)) {
    return {
      kind: 'error',
      error: 'error',
      reason: `${broker} refused the credentials (${message})`,
    };
  }
  if (code === 'TIMEOUT') {
    return { kind: 'error', error: 'timeout', reason: `${broker} did not answer in time` };
  }
  return { kind: 'error', error: 'error', reason: `could not connect to ${broker}: ${message}` };
}
