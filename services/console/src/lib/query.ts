/**
 * Builds Rack/PHP bracket query strings (docs/api.md, Documents) from nested plain objects:
 * `{filter: {fields: {title: {eq: 'x'}}}}` → `filter[fields][title][eq]=x`. Empty strings,
 * undefined and null are left out so that a cleared form field simply drops its parameter.
 */
export type QueryValue =
  string | number | boolean | null | undefined | QueryValue[] | { [key: string]: QueryValue };

export function toQueryString(params: Record<string, QueryValue>): string {
  const parts: string[] = [];
  const walk = (key: string, value: QueryValue): void => {
    if (value === undefined || value === null || value === '') return;
    if (Array.isArray(value)) {
      for (const element of value) walk(`${key}[]`, element);
      return;
    }
    if (typeof value === 'object') {
      for (const [child, childValue] of Object.entries(value)) walk(`${key}[${child}]`, childValue);
      return;
    }
    parts.push(`${encodeKey(key)}=${encodeURIComponent(String(value))}`);
  };
  for (const [key, value] of Object.entries(params)) walk(key, value);
  return parts.join('&');
}

/** Keeps the brackets readable (the API accepts them encoded or not). */
function encodeKey(key: string): string {
  return encodeURIComponent(key).replace(/%5B/g, '[').replace(/%5D/g, ']');
}

/** `path` plus its query string, if any. */
export function withQuery(path: string, params: Record<string, QueryValue>): string {
  const query = toQueryString(params);
  return query ? `${path}?${query}` : path;
}
