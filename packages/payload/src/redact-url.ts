import { isCredentialName } from './redact-headers.js';

/**
 * Which parts of a call's URL the call log keeps as `***` (docs/api.md, The webhook call
 * resource): the value of a query parameter whose name looks like a credential, and the password
 * of a `user:password@` authority. Everything else is kept byte for byte, so the logged URL reads
 * as the one sent. Migration 026_redact_credential_query.sql applies the same rule, in SQL, to
 * calls logged before it: change both together.
 */

/** Query names that hold a credential without saying so: Azure Functions' `code`, SAS's `sig`. */
const CREDENTIAL_PARAMS = new Set(['code', 'sig']);

/** True when a query parameter of this name has its value redacted. */
export function isCredentialParam(name: string): boolean {
  return isCredentialName(name) || CREDENTIAL_PARAMS.has(name.toLowerCase());
}

const URL_PARTS = /^([^?#]*)(?:\?([^#]*))?(#.*)?$/s;

/** The URL as the call log stores it (see above); the request itself goes to the URL as given. */
export function redactUrl(url: string): string {
  const [, head = '', query, fragment = ''] = URL_PARTS.exec(url) ?? [];
  const shownQuery = query === undefined ? '' : `?${query.split('&').map(redactParam).join('&')}`;
  return `${redactPassword(head)}${shownQuery}${fragment}`;
}

/** `name=value` keeps its name, and its value unless the name (raw or decoded) is a credential's. */
function redactParam(param: string): string {
  const eq = param.indexOf('=');
  if (eq < 0 || eq === param.length - 1) return param;
  const name = param.slice(0, eq);
  return isCredentialParam(name) || isCredentialParam(decodeName(name)) ? `${name}=***` : param;
}

/** A query name as a server reads it (`+` a space, `%XX` decoded); as it is when malformed. */
function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

/**
 * `scheme://user:password@host…` as `scheme://user:***@host…`. As URL parsers read it, the user
 * ends at the authority's first `:` and the password at its last `@`.
 */
function redactPassword(head: string): string {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(head);
  if (!scheme) return head;
  const start = scheme[0].length;
  const length = head.slice(start).search(/[/\\]/);
  const authority = length < 0 ? head.slice(start) : head.slice(start, start + length);
  const colon = authority.indexOf(':');
  const at = authority.lastIndexOf('@');
  if (colon < 0 || at <= colon + 1) return head;
  return `${head.slice(0, start + colon + 1)}***${head.slice(start + at)}`;
}
