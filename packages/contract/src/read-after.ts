import { ApiError } from './errors.js';

/**
 * Read your own events (docs/api.md, Read your own events): each 202 of POST /events carries the
 * position in Postgres's write-ahead log that its commit reached, and GET /items and
 * GET /items/:id, given it back, answer with data at least that new.
 *
 * The token is opaque to clients: base64url of `lsn1:<hi>/<lo>`, the version, then the log
 * position (LSN) as Postgres spells it. A later format takes another version.
 */
export const READ_AFTER_HEADER = 'X-Herald-Read-After';

const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const DECODED = /^lsn1:([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/;
const LSN = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i;
const MAX_LSN = (1n << 64n) - 1n;

/** An LSN as Postgres prints it (`16/B374D848`, the `pg_lsn` type as text) → its value. */
export function parseLsn(text: string): bigint {
  const match = LSN.exec(text);
  if (!match) throw new Error(`not an LSN: ${JSON.stringify(text)}`);
  return (BigInt(`0x${match[1]!}`) << 32n) | BigInt(`0x${match[2]!}`);
}

/** The token of a commit that reached `lsn` (a value of parseLsn). */
export function encodeReadAfter(lsn: bigint): string {
  if (lsn < 0n || lsn > MAX_LSN) throw new RangeError(`LSN out of range: ${lsn}`);
  const hi = (lsn >> 32n).toString(16).toUpperCase();
  const lo = (lsn & 0xffffffffn).toString(16).toUpperCase();
  return Buffer.from(`lsn1:${hi}/${lo}`, 'latin1').toString('base64url');
}

/**
 * The LSN a token stands for, or undefined when it is not one encodeReadAfter makes: exactly
 * that spelling (no padding, no other alphabet, no leading zeros), so that a token has one form.
 */
export function decodeReadAfter(token: string): bigint | undefined {
  if (!TOKEN.test(token)) return undefined;
  const match = DECODED.exec(Buffer.from(token, 'base64url').toString('latin1'));
  if (!match) return undefined;
  const lsn = (BigInt(`0x${match[1]!}`) << 32n) | BigInt(`0x${match[2]!}`);
  return encodeReadAfter(lsn) === token ? lsn : undefined;
}

/**
 * The X-Herald-Read-After header of a request: undefined when absent, the LSN when valid, else a
 * 400 INVALID_READ_AFTER_HEADER (a header given twice arrives joined with ", ", and is refused).
 */
export function readAfterOf(header: string | string[] | undefined): bigint | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(', ') : header;
  const lsn = decodeReadAfter(value);
  if (lsn !== undefined) return lsn;
  throw new ApiError('INVALID_READ_AFTER_HEADER', {
    message: `${READ_AFTER_HEADER} must be a token that a 202 of POST /events returned, as it was returned`,
    header: READ_AFTER_HEADER,
  });
}
