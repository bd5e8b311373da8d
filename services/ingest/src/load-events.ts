import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';

export interface LoadEventsOptions {
  file: string;
  /** Base URL of Herald (ingest or the single process), e.g. http://127.0.0.1:3000. */
  url: string;
  /** A producer (or admin) token. */
  token: string;
  environment?: string | undefined;
  /** Events per POST /events (1–1000). */
  batchSize: number;
  /** Requests in flight. */
  concurrency: number;
  /** Called after each batch with the events sent so far. */
  onProgress?: (sent: number) => void;
  /** How many times a batch is retried after a 429, a 503 or a network error. */
  retries?: number;
}

export interface LoadSummary {
  accepted: number;
  duplicate: number;
  batches: number;
  seconds: number;
}

/** A batch was refused for good (4xx other than 429): nothing of it was stored. */
export class BatchRejectedError extends Error {
  constructor(
    readonly firstEvent: number,
    readonly status: number,
    readonly body: string,
  ) {
    super(`batch starting at event #${firstEvent} was rejected with ${status}: ${body}`);
    this.name = 'BatchRejectedError';
  }
}

const isNdjson = (file: string) => /\.(ndjson|jsonl)$/i.test(file);

/** Counts the events of a file without keeping them (for the progress bar's total). */
export async function countEvents(file: string): Promise<number> {
  if (!isNdjson(file)) return (await readJsonEvents(file)).length;
  let count = 0;
  for await (const line of createInterface({
    input: createReadStream(file),
    crlfDelay: Infinity,
  })) {
    if (line.trim()) count++;
  }
  return count;
}

async function readJsonEvents(file: string): Promise<unknown[]> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as unknown;
  const data = Array.isArray(parsed) ? parsed : (parsed as { data?: unknown } | null)?.data;
  if (data === undefined)
    throw new Error(`${file}: expected an array of events or {"data": [...]}`);
  return Array.isArray(data) ? (data as unknown[]) : [data];
}

/** The file's events, one at a time: NDJSON (.ndjson, .jsonl) is streamed line by line. */
async function* readEvents(file: string): AsyncGenerator<unknown> {
  if (!isNdjson(file)) {
    yield* await readJsonEvents(file);
    return;
  }
  let lineNumber = 0;
  for await (const line of createInterface({
    input: createReadStream(file),
    crlfDelay: Infinity,
  })) {
    lineNumber++;
    if (!line.trim()) continue;
    try {
      yield JSON.parse(line) as unknown;
    } catch (error) {
      throw new Error(`${file}:${lineNumber}: not JSON (${(error as Error).message})`, {
        cause: error,
      });
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Loads a JSON or NDJSON file of events through POST /events, in batches, a few requests in
 * flight. Retries what may succeed later (429, 503, network errors); stops at the first batch
 * refused for good. Re-running a file is safe: events with ids come back as duplicates.
 */
export async function loadEvents(options: LoadEventsOptions): Promise<LoadSummary> {
  const started = Date.now();
  const summary: LoadSummary = { accepted: 0, duplicate: 0, batches: 0, seconds: 0 };
  const endpoint = new URL('/events', options.url).toString();
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.token}`,
    'content-type': 'application/json',
    accept: 'application/json',
    ...(options.environment ? { 'x-environment': options.environment } : {}),
  };
  let sent = 0;
  let failure: Error | undefined;
  const inFlight = new Set<Promise<void>>();

  const send = async (batch: unknown[], firstEvent: number) => {
    const body = JSON.stringify({ data: batch });
    for (let attempt = 0; ; attempt++) {
      let status = 0;
      let text: string;
      let resetSeconds = 0;
      try {
        const response = await fetch(endpoint, { method: 'POST', headers, body });
        status = response.status;
        text = await response.text();
        resetSeconds = Number(response.headers.get('x-ratelimit-reset') ?? 0);
      } catch (error) {
        text = (error as Error).message;
      }
      if (status === 202) {
        const { data } = JSON.parse(text) as { data: { attributes: { status: string } }[] };
        for (const entry of data) {
          if (entry.attributes.status === 'accepted') summary.accepted++;
          else summary.duplicate++;
        }
        summary.batches++;
        sent += batch.length;
        options.onProgress?.(sent);
        return;
      }
      const retriable = status === 0 || status === 429 || status >= 500;
      if (!retriable || attempt >= (options.retries ?? 8)) {
        throw new BatchRejectedError(firstEvent, status, text.slice(0, 2000));
      }
      await sleep(resetSeconds > 0 ? resetSeconds * 1000 : Math.min(30_000, 250 * 2 ** attempt));
    }
  };

  let batch: unknown[] = [];
  let index = 0;
  let batchStart = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const task = send(batch, batchStart).catch((error: unknown) => {
      failure ??= error as Error;
    });
    batch = [];
    const tracked = task.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
  };
  for await (const event of readEvents(options.file)) {
    if (failure) break;
    if (batch.length === 0) batchStart = index;
    batch.push(event);
    index++;
    if (batch.length >= options.batchSize) await flush();
  }
  if (!failure) await flush();
  await Promise.all(inFlight);
  if (failure) throw failure;
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}
