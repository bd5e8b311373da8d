import {
  DESTINATION_KINDS,
  STREAM_MAX_LEN,
  type Destination,
  type DestinationKind,
  type WebhookAuth,
  type WebhookTls,
} from '@herald/contract/tables';

/**
 * The webhook form's destination and endpoint authentication (docs/api.md, Destinations and
 * Endpoint authentication), and the attributes they become. The secrets are write-only: the form
 * knows only whether one is stored, its input starts empty, and an empty input keeps the stored
 * one (a broker password sent back as `***`, an OAuth2 secret or a TLS key left out).
 */
export interface DestinationForm {
  kind: DestinationKind;
  /** The broker URL as the API shows it (a password in it as `***`, which keeps it). */
  url: string;
  username: string;
  /** A new password as typed; empty keeps the stored one, if any. */
  password: string;
  /** Whether a password is stored (the API shows `***`). */
  passwordSet: boolean;
  exchange: string;
  routingKey: string;
  subject: string;
  jetstream: boolean;
  topic: string;
  stream: string;
  /** As typed; empty for the default (10,000). */
  maxLen: string;
}

export interface AuthForm {
  /** OAuth2 client credentials on. */
  enabled: boolean;
  tokenUrl: string;
  clientId: string;
  /** A new secret as typed; empty keeps the stored one. */
  clientSecret: string;
  /** Whether a secret is stored (any stored `auth` has one). */
  secretSet: boolean;
  clientAuth: WebhookAuth['client_auth'];
  scope: string;
  audience: string;
}

export interface TlsForm {
  /** Mutual TLS settings on. */
  enabled: boolean;
  clientCertificate: string;
  /** A new key as typed; empty keeps the stored one while the certificate is unchanged. */
  clientKey: string;
  /** Whether a key is stored. */
  keySet: boolean;
  caCertificate: string;
}

/** What each kind is called on the form. */
export const DESTINATION_LABELS: Record<DestinationKind, string> = {
  http: 'HTTP to the URL above',
  rabbitmq: 'RabbitMQ (AMQP 0-9-1, publisher confirms)',
  nats: 'NATS (JetStream, or core NATS)',
  mqtt: 'MQTT (v5, QoS 1)',
  redis_stream: 'Redis stream (XADD)',
};

/** What a kind sends, as the preview says it. */
export const DESTINATION_PLACES: Record<DestinationKind, string> = {
  http: 'an HTTP request',
  rabbitmq: 'an AMQP message',
  nats: 'a NATS message',
  mqtt: 'an MQTT message',
  redis_stream: 'a stream entry',
};

/** What a kind's message headers are, as the preview titles them. */
export const HEADER_TITLES: Record<DestinationKind, string> = {
  http: 'Headers',
  rabbitmq: 'Message headers (AMQP headers)',
  nats: 'Message headers (NATS headers)',
  mqtt: 'Message headers (MQTT user properties)',
  redis_stream: 'Message headers (the entry’s fields beside body)',
};

export const isDestinationKind = (value: string): value is DestinationKind =>
  (DESTINATION_KINDS as readonly string[]).includes(value);

export function destinationForm(destination: Destination | undefined): DestinationForm {
  const form: DestinationForm = {
    kind: destination?.kind ?? 'http',
    url: '',
    username: '',
    password: '',
    passwordSet: false,
    exchange: '',
    routingKey: '',
    subject: '',
    jetstream: true,
    topic: '',
    stream: '',
    maxLen: '',
  };
  if (!destination || destination.kind === 'http') return form;
  const common = {
    ...form,
    url: destination.url,
    username: destination.username ?? '',
    passwordSet: destination.password !== null,
  };
  switch (destination.kind) {
    case 'rabbitmq':
      return { ...common, exchange: destination.exchange, routingKey: destination.routing_key };
    case 'nats':
      return { ...common, subject: destination.subject, jetstream: destination.jetstream };
    case 'mqtt':
      return { ...common, topic: destination.topic };
    case 'redis_stream':
      return { ...common, stream: destination.stream, maxLen: String(destination.max_len) };
  }
}

/** `destination` as a create, an update or a preview sends it. */
export function destinationAttributes(form: DestinationForm): Record<string, unknown> {
  if (form.kind === 'http') return { kind: 'http' };
  const password = form.password !== '' ? form.password : form.passwordSet ? '***' : null;
  const common = {
    kind: form.kind,
    url: form.url.trim(),
    username: form.username === '' ? null : form.username,
    password,
  };
  switch (form.kind) {
    case 'rabbitmq':
      return { ...common, exchange: form.exchange, routing_key: form.routingKey };
    case 'nats':
      return { ...common, subject: form.subject, jetstream: form.jetstream };
    case 'mqtt':
      return { ...common, topic: form.topic };
    case 'redis_stream': {
      const typed = form.maxLen.trim();
      const number = Number(typed);
      // Sent as typed when it is not a number: the server names the problem.
      const maxLen =
        typed === '' ? STREAM_MAX_LEN.default : Number.isFinite(number) ? number : typed;
      return { ...common, stream: form.stream, max_len: maxLen };
    }
  }
}

export function authForm(auth: Omit<WebhookAuth, 'client_secret'> | null | undefined): AuthForm {
  return {
    enabled: Boolean(auth),
    tokenUrl: auth?.token_url ?? '',
    clientId: auth?.client_id ?? '',
    clientSecret: '',
    secretSet: Boolean(auth),
    clientAuth: auth?.client_auth ?? 'basic',
    scope: auth?.scope ?? '',
    audience: auth?.audience ?? '',
  };
}

/** `auth` as sent: the secret only when one is typed (left out, the stored one stays). */
export function authAttributes(form: AuthForm): Record<string, unknown> | null {
  if (!form.enabled) return null;
  return {
    kind: 'oauth2_client_credentials',
    token_url: form.tokenUrl.trim(),
    client_id: form.clientId,
    ...(form.clientSecret !== '' && { client_secret: form.clientSecret }),
    client_auth: form.clientAuth,
    scope: form.scope.trim() === '' ? null : form.scope.trim(),
    audience: form.audience.trim() === '' ? null : form.audience.trim(),
  };
}

export function tlsForm(tls: Omit<WebhookTls, 'client_key'> | null | undefined): TlsForm {
  return {
    enabled: Boolean(tls),
    clientCertificate: tls?.client_certificate ?? '',
    clientKey: '',
    keySet: Boolean(tls?.client_certificate),
    caCertificate: tls?.ca_certificate ?? '',
  };
}

/** `tls` as sent: the key only when one is typed (left out, the stored one stays). */
export function tlsAttributes(form: TlsForm): Record<string, unknown> | null {
  if (!form.enabled) return null;
  const pem = (text: string) => (text.trim() === '' ? null : text);
  return {
    client_certificate: pem(form.clientCertificate),
    ...(form.clientKey.trim() !== '' && { client_key: form.clientKey }),
    ca_certificate: pem(form.caCertificate),
  };
}
