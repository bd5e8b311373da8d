/**
 * Where a webhook's calls go (extension; docs/api.md, Destinations): HTTP to the webhook's `url`
 * (the default), or a message published to a broker. Broker credentials (in `url` or in
 * `username`/`password`) are write-only: stored, used to connect, never shown.
 */
export const DESTINATION_KINDS = ['http', 'rabbitmq', 'nats', 'mqtt', 'redis_stream'] as const;
export type DestinationKind = (typeof DESTINATION_KINDS)[number];

/** The URL schemes each broker kind accepts. */
export const DESTINATION_SCHEMES = {
  rabbitmq: ['amqp', 'amqps'],
  nats: ['nats', 'tls'],
  mqtt: ['mqtt', 'mqtts'],
  redis_stream: ['redis', 'rediss'],
} as const satisfies Record<Exclude<DestinationKind, 'http'>, readonly string[]>;

/** The bounds of a Redis stream's `max_len` (XADD MAXLEN ~). */
export const STREAM_MAX_LEN = { min: 1, max: 100_000_000, default: 10_000 } as const;

/** The credentials a broker destination may carry beside its URL. */
interface BrokerCredentials {
  username: string | null;
  /** Write-only: `***` when shown. */
  password: string | null;
}

export type Destination =
  | { kind: 'http' }
  | ({ kind: 'rabbitmq'; url: string; exchange: string; routing_key: string } & BrokerCredentials)
  | ({ kind: 'nats'; url: string; subject: string; jetstream: boolean } & BrokerCredentials)
  | ({ kind: 'mqtt'; url: string; topic: string } & BrokerCredentials)
  | ({ kind: 'redis_stream'; url: string; stream: string; max_len: number } & BrokerCredentials);

export type BrokerDestination = Exclude<Destination, { kind: 'http' }>;

export const HTTP_DESTINATION: Destination = { kind: 'http' };

/**
 * A broker URL as the API and the call log show it: a password (or, for NATS, a token given as
 * the user) replaced by `***`.
 */
export function redactBrokerUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '***';
  }
  if (parsed.password) parsed.password = '***';
  else if (parsed.username) parsed.username = '***';
  return parsed.toString();
}

/** A destination as the API shows it: credentials hidden. */
export function redactDestination(destination: Destination): Destination {
  if (destination.kind === 'http') return destination;
  return {
    ...destination,
    url: redactBrokerUrl(destination.url),
    password: destination.password === null ? null : '***',
  };
}

/** Where a message goes, in a line a person reads (the call log's request URL). */
export function describeDestination(destination: BrokerDestination): string {
  const url = redactBrokerUrl(destination.url);
  switch (destination.kind) {
    case 'rabbitmq':
      return `${url} exchange=${destination.exchange} routing_key=${destination.routing_key}`;
    case 'nats':
      return `${url} subject=${destination.subject} (${destination.jetstream ? 'JetStream' : 'core NATS'})`;
    case 'mqtt':
      return `${url} topic=${destination.topic} (QoS 1)`;
    case 'redis_stream':
      return `${url} stream=${destination.stream} (MAXLEN ~ ${destination.max_len})`;
  }
}

/**
 * An update's destination with the credentials it sends back as shown (`***`) replaced by the
 * stored ones: a client that sends back what it read keeps them, never stores `***`.
 */
export function keepStoredCredentials(sent: Destination, stored: Destination): Destination {
  if (sent.kind === 'http' || stored.kind === 'http') return sent;
  return {
    ...sent,
    url: sent.url === redactBrokerUrl(stored.url) ? stored.url : sent.url,
    password: sent.password === '***' ? stored.password : sent.password,
  };
}
