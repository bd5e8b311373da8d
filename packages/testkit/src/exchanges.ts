import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request a served app answered, as the client received it (testkit's `serve`). */
export interface Exchange {
  method: string;
  /** Path and query string, as requested. */
  url: string;
  status: number;
  contentType: string | undefined;
  /** X-Api-Version: Herald's plumbing sets it on every answer (a test's bare express app does not). */
  apiVersion: string | undefined;
  body: Buffer;
}

const recorded: Exchange[] = [];
let recording = false;

/**
 * From now on, every app served by `serve` records what it answers, for takeExchanges (the
 * OpenAPI response check of the test setup turns it on; a benchmark never does).
 */
export function recordExchanges(): void {
  recording = true;
}

/** The exchanges recorded since the last call, oldest first. */
export function takeExchanges(): Exchange[] {
  return recorded.splice(0, recorded.length);
}

type Chunk = string | Uint8Array;
const toBuffer = (chunk: Chunk, encoding: unknown): Buffer =>
  typeof chunk === 'string'
    ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
    : Buffer.from(chunk);

/** Keeps a copy of what `res` sends, recorded once it is sent (nothing while not recording). */
export function captureExchange(req: IncomingMessage, res: ServerResponse): void {
  if (!recording) return;
  // As requested: the router rewrites req.url for what it mounts under a path.
  const url = req.url ?? '/';
  const chunks: Buffer[] = [];
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((chunk: Chunk, ...rest: unknown[]) => {
    if (chunk) chunks.push(toBuffer(chunk, rest[0]));
    return write(chunk, ...rest);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (chunk && typeof chunk !== 'function') chunks.push(toBuffer(chunk as Chunk, rest[0]));
    return end(chunk, ...rest);
  }) as typeof res.end;
  res.once('finish', () => {
    const header = (name: string): string | undefined => {
      const value = res.getHeader(name);
      return value === undefined ? undefined : String(value);
    };
    recorded.push({
      method: req.method ?? 'GET',
      url,
      status: res.statusCode,
      contentType: header('content-type'),
      apiVersion: header('x-api-version'),
      body: Buffer.concat(chunks),
    });
  });
}
