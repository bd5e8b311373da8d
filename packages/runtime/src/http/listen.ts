import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Express } from 'express';
import { ApiError, renderErrorEnvelope } from '@herald/contract';
import type { Logger } from '../logger.js';
import { ERROR_REFERENCE_PATH } from './error-reference.js';

/**
 * What Node's HTTP parser refuses before any route runs is answered in the envelope too:
 * headers over 16 KB → 431 REQUEST_TOO_LARGE, anything malformed → 400 INVALID_REQUEST; with a
 * request id of its own, logged at warn like the access log's errors (there is no route, no token).
 * Without DOCS_URL, `doc_url` is relative (`/docs/errors#CODE`): no Host header was read.
 */
export function answerClientErrors(
  server: Server,
  docsUrl: string | undefined,
  logger?: Logger,
): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const apiError = tooLarge
      ? new ApiError(
          'REQUEST_TOO_LARGE',
          { message: 'Request line and headers exceed 16 KB' },
          { status },
        )
      : new ApiError('INVALID_REQUEST', { message: 'Malformed HTTP request' }, { status });
    const body = JSON.stringify(renderErrorEnvelope(apiError, docsUrl ?? ERROR_REFERENCE_PATH));
    const requestId = randomUUID();
    logger?.warn(
      { module: 'access', requestId, status, code: apiError.entries[0]?.code, err: error.code },
      'request refused by the HTTP parser',
    );
    socket.end(
      `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `X-Request-Id: ${requestId}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}

export async function listen(
  app: Express,
  options: { port: number; host: string; docsUrl: string | undefined; logger: Logger },
): Promise<{ server: Server; url: string }> {
  const server = createServer({ maxHeaderSize: 16 * 1024 }, app);
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  answerClientErrors(server, options.docsUrl, options.logger);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  return { server, url: `http://${host}:${address.port}` };
}
