import { randomBytes } from 'node:crypto';
import mqtt, { ReasonCodes, type IConnackPacket, type MqttClient } from 'mqtt';
import { errorMessage, type BrokerDestination } from '@herald/contract';
import {
  BrokerPublisher,
  acknowledged,
  brokerTarget,
  connectError,
  failed,
  networkFailure,
} from './publisher.js';
import type { BrokerMessage, ConnectErrors, Failure, PublisherOptions } from './publisher.js';
import type { SendResult } from '../http-client.js';

type MqttDestination = Extract<BrokerDestination, { kind: 'mqtt' }>;

/**
 * MQTT v5 (mqtt.js): one client per URL and credentials, not reconnecting (a lost one is
 * replaced at the next publish). QoS 1: a publish is acknowledged by the broker's PUBACK; the
 * headers go as user properties.
 */
export class MqttPublisher extends BrokerPublisher<MqttDestination> {
  /**
   * The publishes waiting for their PUBACK. mqtt.js keeps a QoS 1 message for a reconnection that
   * never comes (reconnectPeriod 0) and calls back nothing when the connection fails or the
   * broker answers what it cannot parse (Mosquitto's PUBACK 0x95 to a message over its
   * message_size_limit): these are settled at once instead, with the reason.
   */
  readonly #pending = new Set<(result: SendResult) => void>();
  /** The broker's reason for a DISCONNECT it sent. */
  #disconnectedBecause: number | undefined;

  private constructor(
    private readonly client: MqttClient,
    broker: string,
    /** The broker's Maximum Packet Size (its CONNACK), when it has one. */
    private readonly maxPacketBytes: number | undefined,
  ) {
    super(broker, 'did not acknowledge (PUBACK) the message on');
    client.on('error', (error: unknown) => {
      this.#failPending(clientFailure(error, broker));
      // A protocol error leaves the client unusable: it is replaced at the next publish.
      void client.endAsync(true).catch(() => undefined);
    });
    client.on('disconnect', (packet) => {
      this.#disconnectedBecause = packet.reasonCode;
    });
    client.on('close', () => {
      const code = this.#disconnectedBecause;
      this.#failPending(
        code === PACKET_TOO_LARGE
          ? failed(
              'error',
              `the message is too large for ${broker} (it disconnected: Packet too large)`,
            )
          : failed(
              'reset',
              `${broker} closed the connection${code ? ` (reason code ${code}: ${(ReasonCodes as Record<number, string>)[code] ?? 'unknown'})` : ''}`,
            ),
      );
    });
  }

  #failPending(result: SendResult): void {
    for (const settle of [...this.#pending]) settle(result);
  }

  static async connect(
    destination: MqttDestination,
    options: PublisherOptions,
  ): Promise<MqttPublisher> {
    const { broker, username, password, server } = await brokerTarget(
      'MQTT broker',
      destination,
      options,
    );
    const client = mqtt.connect(server, {
      protocolVersion: 5,
      clientId: `herald-${randomBytes(8).toString('hex')}`,
      clean: true,
      connectTimeout: options.connectTimeoutMs,
      reconnectPeriod: 0,
      ...(username !== null && { username }),
      ...(password !== null && { password }),
    });
    try {
      // As mqtt.connectAsync, keeping the CONNACK: its maximum packet size, when the broker says.
      const connack = await new Promise<IConnackPacket>((resolve, reject) => {
        const settle = (error: Error | null, packet?: IConnackPacket) => {
          client.off('connect', onConnect).off('error', onError).off('close', onClose);
          if (packet) resolve(packet);
          else reject(error ?? new Error("Couldn't connect to server"));
        };
        const onConnect = (packet: IConnackPacket) => settle(null, packet);
        const onError = (error: Error) => settle(error);
        const onClose = () => settle(new Error("Couldn't connect to server"));
        client.on('connect', onConnect).on('error', onError).on('close', onClose);
      });
      return new MqttPublisher(client, broker, connack.properties?.maximumPacketSize);
    } catch (error) {
      client.end(true);
      throw connectError(error, broker, CONNECT_ERRORS);
    }
  }

  get open(): boolean {
    return this.client.connected && !this.client.disconnecting;
  }

  protected send(
    destination: MqttDestination,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult> {
    const max = this.maxPacketBytes;
    const size = packetSize(destination.topic, message);
    if (max !== undefined && size > max) {
      return Promise.resolve(
        failed(
          'error',
          `the message is too large for ${this.broker}: about ${size} bytes, its maximum packet size is ${max}`,
        ),
      );
    }
    return new Promise((resolve) => {
      const settle = (result: SendResult) => {
        this.#pending.delete(settle);
        resolve(result);
      };
      this.#pending.add(settle);
      this.client
        .publishAsync(destination.topic, message.body, {
          qos: 1,
          properties: {
            contentType: message.headers['content-type'] ?? 'application/json',
            userProperties: message.headers,
          },
        })
        .then(
          () =>
            settle(
              acknowledged(`acknowledged (PUBACK) by ${this.broker} on ${where}`, {
                'message-id': message.id,
                topic: destination.topic,
              }),
            ),
          (error: unknown) =>
            settle(networkFailure(error, this.broker) ?? this.refusal(error, where)),
        );
    });
  }

  protected refusal(error: unknown, where: string): Failure {
    const text = errorMessage(error);
    if (/too large|packet size|maximum/i.test(text)) {
      return failed('error', `the message is too large for ${this.broker} (${text})`);
    }
    return failed('error', `${this.broker} refused the message on ${where}: ${text}`);
  }

  protected where(destination: MqttDestination): string {
    return `topic "${destination.topic}"`;
  }

  async close(): Promise<void> {
    await this.client.endAsync(true).catch(() => undefined);
  }
}

/** MQTT v5's reason code "Packet too large". */
const PACKET_TOO_LARGE = 0x95;

/** A PUBLISH packet's size, near enough: the body, the topic, the user properties. */
function packetSize(topic: string, message: BrokerMessage): number {
  let size = 16 + Buffer.byteLength(topic) + Buffer.byteLength(message.body);
  for (const [name, value] of Object.entries(message.headers)) {
    size += 5 + Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  return size;
}

/** An error the client emitted (the connection's, or a packet it could not parse), in words. */
function clientFailure(error: unknown, broker: string): SendResult {
  const network = networkFailure(error, broker);
  if (network) return network;
  const text = errorMessage(error);
  if (/invalid puback reason code/i.test(text)) {
    // Mosquitto answers a message over its message_size_limit with PUBACK 0x95 (Packet too
    // large), a reason code MQTT v5 does not allow in a PUBACK, so the client cannot parse it.
    return failed(
      'error',
      `the message is too large for ${broker}, or refused: it answered with a PUBACK reason code MQTT does not allow (${text}; Mosquitto answers so a message over its message_size_limit)`,
    );
  }
  return failed('error', `${broker} broke the protocol: ${text}`);
}

/** What an MQTT client's connect error says. */
const CONNECT_ERRORS: ConnectErrors = {
  credentials: (message) => /bad user ?name or password|not authorized/i.test(message),
  timeout: (message) => /timeout/i.test(message),
};
