/**
 * An answer of the app under test, its body parsed (null when empty). Typed `any` unless the test
 * says what it expects: tests read what they assert on.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface TestAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A client of a served app: its URL and a bearer token. */
export interface TestApi {
  readonly url: string;
  readonly token: string;
  /** fetch on the app with this client's token (an Authorization header of init wins). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A request whose body, if any, is JSON: an object is serialized, a string sent as it is. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  call<T = any>(method: string, path: string, body?: unknown): Promise<TestAnswer<T>>;
  /** The same app with another token. */
  as(token: string): TestApi;
}

export function testApi(url: string, token: string): TestApi {
  const api: TestApi = {
    url,
    token,
    fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      return fetch(`${url}${path}`, { ...init, headers });
    },
    async call<T>(method: string, path: string, body?: unknown) {
      const response = await api.fetch(path, {
        method,
        ...(body === undefined
          ? {}
          : {
              headers: { 'content-type': 'application/json' },
              body: typeof body === 'string' ? body : JSON.stringify(body),
            }),
      });
      const text = await response.text();
      return {
        status: response.status,
        headers: response.headers,
        body: (text ? JSON.parse(text) : null) as T,
      };
    },
    as: (other) => testApi(url, other),
  };
  return api;
}
