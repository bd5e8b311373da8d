import { describe, expect, it } from 'vitest';
import {
  authAttributes,
  authForm,
  destinationAttributes,
  destinationForm,
  tlsAttributes,
  tlsForm,
} from './destination.js';

describe('destination form', () => {
  it('round-trips each broker kind as the API shows it', () => {
    const shown = [
      {
        kind: 'rabbitmq',
        url: 'amqp://herald:***@mq.example.com/prod',
        username: null,
        password: null,
        exchange: 'content',
        routing_key: '',
      },
      {
        kind: 'nats',
        url: 'nats://nats.example.com:4222',
        username: 'herald',
        password: '***',
        subject: 'content.items',
        jetstream: false,
      },
      {
        kind: 'mqtt',
        url: 'mqtt://broker.example.com',
        username: null,
        password: null,
        topic: 'content/items',
      },
      {
        kind: 'redis_stream',
        url: 'rediss://redis.example.com/0',
        username: null,
        password: '***',
        stream: 'content',
        max_len: 500,
      },
    ] as const;
    for (const destination of shown) {
      // Sent back as shown, a stored password is kept (`***`), never lost nor echoed.
      expect(destinationAttributes(destinationForm(destination))).toEqual(destination);
    }
    expect(destinationAttributes(destinationForm(undefined))).toEqual({ kind: 'http' });
    expect(destinationAttributes(destinationForm({ kind: 'http' }))).toEqual({ kind: 'http' });
  });

  it('sends a typed password, null when none is stored or it was removed', () => {
    const form = destinationForm({
      kind: 'mqtt',
      url: 'mqtt://broker.example.com',
      username: 'herald',
      password: '***',
      topic: 't',
    });
    expect(form.password).toBe('');
    expect(form.passwordSet).toBe(true);
    expect(destinationAttributes({ ...form, password: 'new' })['password']).toBe('new');
    expect(destinationAttributes({ ...form, passwordSet: false })['password']).toBeNull();
  });

  it('sends max_len as typed (the default when empty, the text when not a number)', () => {
    const form = { ...destinationForm(undefined), kind: 'redis_stream' as const, stream: 's' };
    expect(destinationAttributes(form)['max_len']).toBe(10_000);
    expect(destinationAttributes({ ...form, maxLen: '42' })['max_len']).toBe(42);
    expect(destinationAttributes({ ...form, maxLen: 'lots' })['max_len']).toBe('lots');
  });
});

describe('endpoint authentication form', () => {
  const auth = {
    kind: 'oauth2_client_credentials' as const,
    token_url: 'https://auth.example.com/token',
    client_id: 'herald',
    client_auth: 'body' as const,
    scope: 'hooks',
    audience: null,
  };

  it('leaves the OAuth2 secret out unless one is typed (the stored one stays)', () => {
    const form = authForm(auth);
    expect(form.secretSet).toBe(true);
    expect(authAttributes(form)).toEqual(auth);
    expect(authAttributes({ ...form, clientSecret: 's3' })).toEqual({
      ...auth,
      client_secret: 's3',
    });
    expect(authAttributes({ ...form, enabled: false })).toBeNull();
    expect(authAttributes(authForm(null))).toBeNull();
  });

  it('leaves the TLS key out unless one is typed; empty PEMs are null', () => {
    const form = tlsForm({ client_certificate: 'CERT', ca_certificate: null });
    expect(form.keySet).toBe(true);
    expect(tlsAttributes(form)).toEqual({ client_certificate: 'CERT', ca_certificate: null });
    expect(tlsAttributes({ ...form, clientKey: 'KEY', caCertificate: 'CA' })).toEqual({
      client_certificate: 'CERT',
      client_key: 'KEY',
      ca_certificate: 'CA',
    });
    expect(tlsForm({ client_certificate: null, ca_certificate: 'CA' }).keySet).toBe(false);
    expect(tlsAttributes(tlsForm(null))).toBeNull();
  });
});
