/**
 * The console's routes live in the URL's hash (`#/calls?status=failed`) so that the static files
 * are one page whatever the path, and links to a filtered view can be shared. Never the token.
 */
export interface Route {
  /** Path segments after `#/`, e.g. ['webhooks', '12']. */
  segments: string[];
  params: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = raw.split('?', 2);
  return {
    segments: path
      .split('/')
      .filter((segment) => segment !== '')
      .map((segment) => decodeURIComponent(segment)),
    params: new URLSearchParams(query),
  };
}

export function formatRoute(segments: readonly string[], params?: Record<string, string>): string {
  const path = segments.map((segment) => encodeURIComponent(segment)).join('/');
  const query = new URLSearchParams(
    Object.entries(params ?? {}).filter(([, value]) => value !== ''),
  ).toString();
  return `#/${path}${query ? `?${query}` : ''}`;
}
