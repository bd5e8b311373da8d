import { describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import type { WebhookTls } from '@herald/contract';
import type { TlsIdentity } from './http-client.js';
import { TlsDispatchers } from './tls-dispatchers.js';

const tls = (cert: string): WebhookTls => ({
  client_certificate: cert,
  client_key: `key of ${cert}`,
  ca_certificate: null,
});

describe('TlsDispatchers', () => {
  it('pools one Agent per TLS identity, closes it when its last webhook changes, and all at close', async () => {
    const made: { identity: TlsIdentity; agent: Agent }[] = [];
    const pool = new TlsDispatchers((identity) => {
      const agent = new Agent();
      made.push({ identity, agent });
      return agent;
    });
    expect(pool.for('w1', null)).toBeUndefined();
    const a = pool.for('w1', tls('A'));
    expect(pool.for('w2', tls('A'))).toBe(a);
    expect(pool.for('w1', tls('A'))).toBe(a);
    expect(made).toEqual([{ identity: { cert: 'A', key: 'key of A' }, agent: a }]);

    // w1 moves to another identity: A stays for w2 until w2 goes.
    const b = pool.for('w1', tls('B'));
    expect(b).not.toBe(a);
    expect(pool.size).toBe(2);
    expect(a?.closed).toBe(false);
    pool.forget('w2');
    expect(a?.closed).toBe(true);
    expect(pool.size).toBe(1);
    // Dropping tls leaves its Agent too.
    expect(pool.for('w1', null)).toBeUndefined();
    expect(b?.closed).toBe(true);

    const c = pool.for('w3', { client_certificate: null, client_key: null, ca_certificate: 'CA' });
    expect(made.at(-1)?.identity).toEqual({ ca: 'CA' });
    await pool.close();
    expect(c?.closed).toBe(true);
    expect(pool.size).toBe(0);
  });
});
