import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import {
  BrokerError,
  acknowledged,
  brokerHost,
  credentialsOf,
  failed,
  guardBrokerAddress,
  networkFailure,
  withTimeout,
  type BrokerMessage,
  type Publisher,
  type PublisherOptions,
} from './publisher.js';
import type { SendResult } from '../http-client.js';

type MqttDestination = Extract<BrokerDestination, { kind: 'mqtt' }>;

/**
 * MQTT v5 (mqtt.js): one client per URL and credentials, not reconnecting (a lost one is
 * replaced at the next publish). QoS 1: a publish is acknowledged by the broker's PUBACK; the
 * headers go as user properties.
 */
export class MqttPublisher implements Publisher {
  private constructor(
    private readonly client: MqttClient,
    private readonly broker: string,
  ) {}

  static async connect(
    destination: MqttDestination,
    options: PublisherOptions,
  ): Promise<MqttPublisher> {
    const broker = `MQTT broker at ${brokerHost(destination.url)}`;
    await guardBrokerAddress(destination.url, options.allowCidrs);
    const { username, password } = credentialsOf(destination);
    const server = new URL(destination.url);
    server.username = '';
    server.password = '';
    try {
      const client = await mqtt.connectAsync(
        server.toString(),
        {
          protocolVersion: 5,
          clientId: `herald-${randomBytes(8).toString('hex')}`,
          clean: true,
          connectTimeout: options.connectTimeoutMs,
          reconnectPeriod: 0,
          ...(username !== null && { username }),
          ...(password !== null && { password }),
        },
        false,
      );
      client.on('error', () => {
        // Publishes in flight hear of it; the client is replaced once closed.
      });
      return new MqttPublisher(client, broker);
    } catch (error) {
      throw new BrokerError(connectFailure(error, broker), { cause: error });
    }
  }

  get open(): boolean {
    return this.client.connected && !this.client.disconnecting;
  }

  publish(
    destination: MqttDestination,
    message: BrokerMessage,
    signal: AbortSignal,
  ): Promise<SendResult> {
    const where = `topic "${destination.topic}"`;
    return withTimeout(
      this.#publish(destination, message, where),
      signal,
      `${this.broker} did not acknowledge (PUBACK) the message on ${where} in time`,
    );
  }

  async #publish(
    destination: MqttDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    try {
      await this.client.publishAsync(destination.topic, message.body, {
        qos: 1,
        properties: {
          contentType: message.headers['content-type'] ?? 'application/json',
          userProperties: message.headers,
        },
      });
      return acknowledged(`acknowledged (PUBACK) by ${this.broker} on ${where}`, {
        'message-id': message.id,
        topic: destination.topic,
      });
    } catch (error) {
      const network = networkFailure(error, this.broker);
      if (network) return network;
      const text = errorMessage(error);
      if (/too large|packet size|maximum/i.test(text)) {
        return failed('error', `the message is too large for ${this.broker} (${text})`);
      }
      return failed('error', `${this.broker} refused the message on ${where}: ${text}`);
    }
  }

  async close(): Promise<void> {
    await this.client.endAsync(true).catch(() => undefined);
  }
}

function connectFailure(error: unknown, broker: string): Extract<SendResult, { kind: 'error' }> {
  const network = networkFailure(error, broker);
  if (network && network.kind === 'error') return network;
  const message = errorMessage(error);
  if (/bad user ?name or password|not authorized/i.test(message)) {
    return {
      kind: 'error',
      error: 'error',
      reason: `${broker} refused the credentials (${message})`,
    };
  }
  if (/timeout/i.test(message)) {
    return { kind: 'error', error: 'timeout', reason: `${broker} did not answer in time` };
  }
  return { kind: 'error', error: 'error', reason: `could not connect to ${broker}: ${message}` };
}
