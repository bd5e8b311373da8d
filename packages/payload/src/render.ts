import Mustache from 'mustache';

/**
 * Mustache rendering of a webhook's url and custom_payload (docs/api.md,
 * What a webhook call sends). The escape function is passed per render (Mustache's config
 * argument), never set on the global Mustache object.
 */

/** Escapes for the inside of a JSON string: quotes, backslashes, control characters. */
function escapeJsonString(value: unknown): string {
  const text =
    typeof value === 'string'
      ? value
      : value !== null && typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  return JSON.stringify(text).slice(1, -1);
}

/** URLs take their {{x}} values percent-encoded, so a value cannot change the URL's structure. */
function escapeUrlComponent(value: unknown): string {
  const text = value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value);
  return encodeURIComponent(text);
}

/**
 * A copy of the payload whose objects and arrays print as JSON (`{{{entity}}}` gives the entity's
 * JSON rather than "[object Object]"); toString is non-enumerable so sections iterate as usual.
 */
function templateView(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const copy: unknown = Array.isArray(value)
    ? value.map(templateView)
    : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, templateView(v)]));
  const json = JSON.stringify(value);
  Object.defineProperty(copy, 'toString', { value: () => json, enumerable: false });
  return copy;
}

/** Renders custom_payload with the default payload as view; the result is sent as is. */
export function renderCustomPayload(template: string, payload: object): string {
  return Mustache.render(template, templateView(payload), undefined, { escape: escapeJsonString });
}

/** Renders a webhook url (tags only in path and query, checked at creation). */
export function renderUrl(template: string, payload: object): string {
  if (!template.includes('{{')) return template;
  return Mustache.render(template, templateView(payload), undefined, {
    escape: escapeUrlComponent,
  });
}
