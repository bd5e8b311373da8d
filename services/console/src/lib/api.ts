import { describeFailure, readErrorEntries, type ApiErrorEntry } from './errors.js';
import { withQuery, type QueryValue } from './query.js';

/** A non-2xx answer (or no answer at all: status 0) in the API's error envelope. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly entries: ApiErrorEntry[],
    readonly requestId: string | null,
  ) {
    super(describeFailure(status, entries));
    this.name = 'ApiFailure';
  }

  get code(): string | undefined {
    return this.entries[0]?.code;
  }
}

/** What a request threw, as a failure to show: anything but an ApiFailure counts as no answer. */
export function asFailure(error: unknown): ApiFailure {
  return error instanceof ApiFailure ? error : new ApiFailure(0, [], null);
}

export interface Credentials {
  token: string;
  environment: string;
}

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  signal?: AbortSignal;
}

/** A collection answer: its resources and, when paginated, the total. */
export interface Collection<T> {
  data: T[];
  meta?: { total_count?: number };
}

/**
 * The console's only way to the API: same origin (ingest serves the console; the gateway or the
 * standalone process routes /items to read), the user's token as a Bearer header and the chosen
 * environment as X-Environment. Nothing goes in the URL but the path and query.
 */
export class ApiClient {
  constructor(
    private readonly credentials: Credentials,
    private readonly onUnauthorized: (failure: ApiFailure) => void = () => {},
  ) {}

  get environment(): string {
    return this.credentials.environment;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      Authorization: `Bearer ${this.credentials.token}`,
    };
    if (this.credentials.environment) headers['X-Environment'] = this.credentials.environment;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/vnd.api+json';
      body = JSON.stringify(options.body);
    }
    let response: Response;
    try {
      response = await fetch(withQuery(path, options.query ?? {}), {
        method,
        headers,
        body,
        signal: options.signal,
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'AbortError') throw error;
      throw new ApiFailure(0, [], null);
    }
    const text = await response.text();
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!response.ok) {
      const failure = new ApiFailure(
        response.status,
        readErrorEntries(parsed),
        response.headers.get('X-Request-Id'),
      );
      if (response.status === 401) this.onUnauthorized(failure);
      throw failure;
    }
    return parsed as T;
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('GET', path, options);
  }
  post<T>(path: string, body?: unknown, options?: RequestOptions): Promise<T> {
    return this.request<T>('POST', path, { ...options, body });
  }
  put<T>(path: string, body: unknown, options?: RequestOptions): Promise<T> {
    return this.request<T>('PUT', path, { ...options, body });
  }
  delete<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('DELETE', path, options);
  }
}
