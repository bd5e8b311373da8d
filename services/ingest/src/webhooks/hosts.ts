import { isIpAddress } from '@herald/contract';

/**
 * The IP address a URL's host names literally: an IP literal (the URL parser has already turned
 * forms such as `0x7f.1` into dotted decimal), or loopback for `localhost` names (RFC 6761).
 */
export function literalHost(hostname: string): string | undefined {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIpAddress(bare)) return bare;
  const name = bare.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return '127.0.0.1';
  return undefined;
}
