import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

describe('createLogger', () => {
  it("redacts endpoint authentication's secrets and tokens wherever a log line carries them", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ level: 'info', name: 'test', destination });
    logger.info(
      {
        client_secret: 'secret-1',
        access_token: 'token-1',
        webhook: {
          auth: { client_id: 'herald', client_secret: 'secret-2' },
          tls: { client_certificate: 'CERT', client_key: 'KEY-1' },
        },
        response: { access_token: 'token-2' },
      },
      'line',
    );
    const [line] = lines;
    for (const secret of ['secret-1', 'secret-2', 'token-1', 'token-2', 'KEY-1']) {
      expect(line).not.toContain(secret);
    }
    expect(line).toContain('herald');
    expect(line).toContain('CERT');
  });
});
