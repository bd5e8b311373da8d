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
  /** Events stored or found stored (accepted + duplicate) per second. */
  perSecond: number;
}

/** An event Herald refused, where it is in the file, and why. */
export interface RefusedEvent {
  /** Its place in the file: `line 12` (NDJSON) or `event #12` (JSON), counted from 1. */
  place: string;
  reason: string;
}

/**
 * A batch was refused for good (4xx other than 429): nothing of it was stored. The load stops;
 * what it did is in `summary`, each refused event of that batch in `refused` (when Herald named
 * them), and `resumeFrom` is the first place in the file not known to be stored: everything
 * before it was stored (or was already), and a run of the same file again stores nothing twice.
 */
export class BatchRejectedError extends Error {
  constructor(
    readonly firstEvent: number,
    readonly status: number,
    readonly body: string,
    readonly refused: readonly RefusedEvent[],
    public summary: LoadSummary | null = null,
    public resumeFrom: string | null = null,
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

/** The file's events, one at a time, with their place: NDJSON (.ndjson, .jsonl) is streamed line by line. */
async function* readEvents(file: string): AsyncGenerator<{ event: unknown; place: string }> {
  if (!isNdjson(file)) {
    let n = 0;
    for (const event of await readJsonEvents(file)) yield { event, place: `event #${++n}` };
    return;
  }
  let lineNumber = 0;
  for await (const line of createInterface({
    input: createReadStream(file),
    crlfDelay: Infinity,
  })) {
    lineNumber++;
    if (!line.trim()) continue;
    let event: unknown;
    try {
      event = JSON.parse(line) as unknown;
    } catch (error) {
      throw new Error(`${file}:${lineNumber}: not JSON (${(error as Error).message})`, {
        cause: error,
      });
    }
    yield { event, place: `line ${lineNumber}` };
  }
}

/**
 * The events of a refused batch that Herald's error envelope names (`data.<index>…` in each
 * entry's details), with their places in the file and what was wrong.
 */
function refusedEvents(body: string, places: readonly string[]): RefusedEvent[] {
  let errors: { attributes?: { code?: unknown; details?: Record<string, unknown> } }[] = [];
  try {
    errors = (JSON.parse(body) as { data?: typeof errors }).data ?? [];
  } catch {
    return [];
  }
  const refused: RefusedEvent[] = [];
  for (const error of errors) {
    const details = error.attributes?.details ?? {};
    const field = typeof details['field'] === 'string' ? details['field'] : '';
    const index = /^data\.(\d+)(?:\.|$)/.exec(field);
    const place = index ? places[Number(index[1])] : undefined;
    if (!place) continue;
    const message = typeof details['message'] === 'string' ? details['message'] : '';
    const code =
      typeof details['code'] === 'string' ? details['code'] : String(error.attributes?.code);
    refused.push({
      place,
      reason: `${field.slice(index![0].length) || field}: ${message || code}`,
    });
  }
  return refused;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Loads a JSON or NDJSON file of events through POST /events, in batches, a few requests in
 * flight. Retries what may succeed later (429, 503, network errors); stops at the first batch
 * refused for good. Re-running a file is safe: events with ids come back as duplicates.
 */
export async function loadEvents(options: LoadEventsOptions): Promise<LoadSummary> {
  const started = Date.now();
  const summary: LoadSummary = { accepted: 0, duplicate: 0, batches: 0, seconds: 0, perSecond: 0 };
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
  // The batches in file order, and whether each was stored: where a re-run must start.
  const batches: { places: readonly string[]; stored: boolean }[] = [];

  const send = async (batch: unknown[], places: readonly string[], firstEvent: number) => {
    const entry = { places, stored: false };
    batches.push(entry);
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
        entry.stored = true;
        sent += batch.length;
        options.onProgress?.(sent);
        return;
      }
      const retriable = status === 0 || status === 429 || status >= 500;
      if (!retriable || attempt >= (options.retries ?? 8)) {
        throw new BatchRejectedError(
          firstEvent,
          status,
          text.slice(0, 2000),
          refusedEvents(text, places),
        );
      }
      await sleep(resetSeconds > 0 ? resetSeconds * 1000 : Math.min(30_000, 250 * 2 ** attempt));
    }
  };

  let batch: unknown[] = [];
  let places: string[] = [];
  let index = 0;
  let batchStart = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const task = send(batch, places, batchStart).catch((error: unknown) => {
      failure ??= error as Error;
    });
    batch = [];
    places = [];
    const tracked = task.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
  };
  for await (const { event, place } of readEvents(options.file)) {
    if (failure) break;
    if (batch.length === 0) batchStart = index;
    batch.push(event);
    places.push(place);
    index++;
    if (batch.length >= options.batchSize) await flush();
  }
  if (!failure) await flush();
  await Promise.all(inFlight);
  summary.seconds = (Date.now() - started) / 1000;
  summary.perSecond =
    summary.seconds > 0 ? (summary.accepted + summary.duplicate) / summary.seconds : 0;
  if (failure instanceof BatchRejectedError) {
    failure.summary = summary;
    const unstored = batches.find((entry) => !entry.stored);
    failure.resumeFrom = unstored?.places[0] ?? null;
  }
  if (failure) throw failure;
  return summary;
}
